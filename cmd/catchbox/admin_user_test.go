package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"strings"
	"testing"
)

// adminIn runs "catchbox admin ARGS" with stdin, returning stdout (stderr
// when wantErr).
func adminIn(t *testing.T, dataDir, stdin string, wantErr bool, args ...string) string {
	t.Helper()
	cmd := exec.Command(binary, append([]string{"admin"}, args...)...)
	cmd.Env = append(os.Environ(), "CATCHBOX_DATA_DIR="+dataDir, "CATCHBOX_DATABASE_URL=", "CATCHBOX_SECRET_KEY=")
	cmd.Stdin = strings.NewReader(stdin)
	var stdout, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	if (err != nil) != wantErr {
		t.Fatalf("admin %v: err %v, want error %v\nstdout: %s\nstderr: %s", args, err, wantErr, stdout.String(), stderr.String())
	}
	if wantErr {
		return stderr.String()
	}
	return stdout.String()
}

// admin user create|list|remove|password, and key list: the password comes
// from stdin and never appears in any output.
func TestAdminUsers(t *testing.T) {
	dir := t.TempDir()
	admin(t, dir, false, "--create", "org", "create", "acme")
	admin(t, dir, false, "org", "create", "beta")
	var u struct{ ID, Email string }
	out := adminIn(t, dir, "s3cret-passphrase\n", false, "--json", "user", "create", "Dev@Acme.test", "--org", "acme")
	if err := json.Unmarshal([]byte(out), &u); err != nil || u.Email != "dev@acme.test" || u.ID == "" || strings.Contains(out, "s3cret") {
		t.Fatalf("user create --json = %q (%v)", out, err)
	}
	if msg := adminIn(t, dir, "", true, "user", "create", "new@acme.test", "--org", "acme"); !strings.Contains(msg, "standard input") {
		t.Fatalf("create without a password: %q", msg)
	}
	if msg := adminIn(t, dir, "short\n", true, "user", "create", "new@acme.test", "--org", "acme"); !strings.Contains(msg, "8 to 1024") {
		t.Fatalf("create with a short password: %q", msg)
	}
	if msg := adminIn(t, dir, "long enough\n", true, "user", "create", "not-an-address", "--org", "acme"); !strings.Contains(msg, "address") {
		t.Fatalf("create with a bad address: %q", msg)
	}
	if out := adminIn(t, dir, "", false, "user", "create", "dev@acme.test", "--org", "beta"); !strings.Contains(out, "Added user dev@acme.test") {
		t.Fatalf("add an existing user to a second organisation: %q", out)
	}
	if out := admin(t, dir, false, "user", "list", "--org", "beta"); !strings.Contains(out, "dev@acme.test") {
		t.Fatalf("user list = %q", out)
	}
	if out := admin(t, dir, false, "user", "remove", "dev@acme.test", "--org", "beta"); !strings.Contains(out, "Removed user dev@acme.test from organisation beta") {
		t.Fatalf("user remove --org = %q", out)
	}
	if out := admin(t, dir, false, "user", "list", "--org", "beta"); strings.Contains(out, "dev@acme.test") {
		t.Fatalf("user list after removal from beta = %q", out)
	}
	if out := adminIn(t, dir, "another passphrase\n", false, "user", "password", "dev@acme.test"); !strings.Contains(out, "sessions have ended") {
		t.Fatalf("user password = %q", out)
	}
	if out := admin(t, dir, false, "user", "remove", "dev@acme.test"); !strings.Contains(out, "Removed user dev@acme.test") {
		t.Fatalf("user remove = %q", out)
	}
	if msg := admin(t, dir, true, "user", "remove", "dev@acme.test"); !strings.Contains(msg, "not found") {
		t.Fatalf("remove twice: %q", msg)
	}

	var key struct{ ID string }
	json.Unmarshal([]byte(admin(t, dir, false, "--json", "key", "create", "--org", "acme", "--label", "ci")), &key)
	out = admin(t, dir, false, "key", "list", "--org", "acme")
	if !strings.Contains(out, key.ID) || !strings.Contains(out, "ci") || strings.Contains(out, "cbx_") {
		t.Fatalf("key list = %q", out)
	}
}
