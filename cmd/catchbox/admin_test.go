package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

var binary string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "catchbox-cli-")
	if err != nil {
		panic(err)
	}
	binary = filepath.Join(dir, "catchbox")
	if out, err := exec.Command("go", "build", "-o", binary, ".").CombinedOutput(); err != nil {
		os.Stderr.Write(out)
		panic(err)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// admin runs "catchbox admin ARGS" on the data directory and returns stdout,
// failing the test on a non-zero exit unless wantErr.
func admin(t *testing.T, dataDir string, wantErr bool, args ...string) string {
	t.Helper()
	cmd := exec.Command(binary, append([]string{"admin"}, args...)...)
	cmd.Env = append(os.Environ(), "CATCHBOX_DATA_DIR="+dataDir, "CATCHBOX_DATABASE_URL=", "CATCHBOX_SECRET_KEY=")
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

func TestAdminCommands(t *testing.T) {
	dir := t.TempDir()
	var org struct {
		ID              string `json:"id"`
		Name            string `json:"name"`
		TOTPDeviceLimit int    `json:"totp_device_limit"`
		TOTPEnabled     bool   `json:"totp_enabled"`
	}
	out := admin(t, dir, false, "--json", "--create", "org", "create", "acme", "--totp-device-limit", "5", "--no-totp-enabled")
	if err := json.Unmarshal([]byte(out), &org); err != nil || org.Name != "acme" || org.TOTPDeviceLimit != 5 || org.TOTPEnabled || org.ID == "" {
		t.Fatalf("org create --json = %q (%v)", out, err)
	}
	out = admin(t, dir, false, "--json", "org", "update", "acme", "--totp-enabled=true", "--totp-device-limit", "7")
	json.Unmarshal([]byte(out), &org)
	if org.TOTPDeviceLimit != 7 || !org.TOTPEnabled {
		t.Fatalf("org update = %q", out)
	}
	if msg := admin(t, dir, true, "org", "create", "acme"); !strings.Contains(msg, "already taken") {
		t.Fatalf("duplicate organisation: %q", msg)
	}
	var key struct{ ID, Key string }
	out = admin(t, dir, false, "--json", "key", "create", "--org", "acme", "--label", "ci")
	if err := json.Unmarshal([]byte(out), &key); err != nil || key.ID == "" || !strings.HasPrefix(key.Key, "cbx_") {
		t.Fatalf("key create --json = %q", out)
	}
	if out := admin(t, dir, false, "key", "create", "--org", "acme"); !strings.Contains(out, "cbx_") {
		t.Fatalf("key create text = %q", out)
	}
	if out := admin(t, dir, false, "key", "revoke", key.ID); !strings.Contains(out, "Revoked") {
		t.Fatalf("key revoke = %q", out)
	}
	if msg := admin(t, dir, true, "key", "revoke", key.ID); !strings.Contains(msg, "already revoked") {
		t.Fatalf("second revoke: %q", msg)
	}
	if msg := admin(t, dir, true, "key", "revoke", "0190c0de-0000-7000-8000-000000000000"); !strings.Contains(msg, "not found") {
		t.Fatalf("revoke of an unknown id: %q", msg)
	}
	out = admin(t, dir, false, "namespace", "create", "Staging-1", "--org", "acme", "--retention", "3600")
	if !strings.Contains(out, "staging-1") || !strings.Contains(out, "3600") {
		t.Fatalf("namespace create = %q", out)
	}
	for _, args := range [][]string{
		{"namespace", "create", "staging-1", "--org", "acme"},
		{"namespace", "create", "bad_name", "--org", "acme"},
		{"namespace", "create", "short", "--org", "acme", "--retention", "10"},
		{"namespace", "create", "x", "--org", "nosuchorg"},
		{"key", "create", "--org", "nosuchorg"},
	} {
		admin(t, dir, true, args...)
	}
	// The key file is private.
	st, err := os.Stat(filepath.Join(dir, "secret.key"))
	if err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("secret key file: %v %v", st, err)
	}
}

// adminJSONErr runs an admin command that must fail with --json, and returns
// its error object, which must be the only thing on stdout.
func adminJSONErr(t *testing.T, dataDir string, args ...string) (obj struct{ Error, Code, Message string }, stderr string) {
	t.Helper()
	cmd := exec.Command(binary, append([]string{"admin", "--json"}, args...)...)
	cmd.Env = append(os.Environ(), "CATCHBOX_DATA_DIR="+dataDir, "CATCHBOX_DATABASE_URL=", "CATCHBOX_SECRET_KEY=")
	var out, errOut strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if err := cmd.Run(); err == nil {
		t.Fatalf("admin --json %v succeeded: %s", args, out.String())
	}
	dec := json.NewDecoder(strings.NewReader(out.String()))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&obj); err != nil || dec.More() || obj.Code == "" || obj.Message == "" || obj.Error == "" {
		t.Fatalf("admin --json %v: stdout %q is not one error object (%v)", args, out.String(), err)
	}
	return obj, errOut.String()
}

// TestAdminStore checks that an admin command names the store it works on,
// refuses one that does not exist (so a command run from the wrong directory
// does not make a store the server never reads) unless --create, and that
// every --json failure is one JSON object with a stable code.
func TestAdminStore(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data")
	obj, stderr := adminJSONErr(t, dir, "org", "create", "acme")
	if obj.Code != "store_not_found" || !strings.Contains(obj.Message, "--create") {
		t.Errorf("missing store: %+v", obj)
	}
	abs, _ := filepath.Abs(filepath.Join(dir, "catchbox.db"))
	if !strings.Contains(stderr, "Using store sqlite://"+abs) {
		t.Errorf("stderr %q does not name the store", stderr)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Fatalf("a refused command made %s (%v)", dir, err)
	}
	if msg := admin(t, dir, true, "key", "list", "--org", "default"); !strings.Contains(msg, "no store") {
		t.Errorf("plain text refusal: %q", msg)
	}

	admin(t, dir, false, "--create", "org", "create", "acme")
	var key struct{ ID, Key string }
	json.Unmarshal([]byte(admin(t, dir, false, "--json", "key", "create", "--org", "acme", "--label", "ci runner")), &key)
	admin(t, dir, false, "key", "create", "--org", "acme")
	admin(t, dir, false, "key", "revoke", key.ID)

	for _, c := range []struct {
		args []string
		code string
	}{
		{[]string{"key", "revoke", key.ID}, "already_revoked"},
		{[]string{"key", "revoke", "0190c0de-0000-7000-8000-000000000000"}, "not_found"},
		{[]string{"org", "create", "acme"}, "name_taken"},
		{[]string{"key", "list", "--org", "nosuch"}, "not_found"},
		{[]string{"namespace", "create", "bad_name", "--org", "acme"}, "invalid_argument"},
		{[]string{"namespace", "create", "short", "--org", "acme", "--retention", "10"}, "invalid_argument"},
		{[]string{"key", "list"}, "invalid_argument"}, // --org missing: kong refuses it
	} {
		if obj, _ := adminJSONErr(t, dir, c.args...); obj.Code != c.code {
			t.Errorf("admin --json %v: %+v, want code %s", c.args, obj, c.code)
		}
	}

	// key list: every key, never the secret.
	out := admin(t, dir, false, "key", "list", "--org", "acme")
	if strings.Contains(out, key.Key) || strings.Contains(out, "cbx_") {
		t.Errorf("key list shows a key: %q", out)
	}
	if !strings.Contains(out, key.ID) || !strings.Contains(out, "ci runner") || strings.Count(out, "\n") != 3 {
		t.Errorf("key list = %q, want a header and two keys", out)
	}
	var list struct {
		Organisation string
		Keys         []struct {
			ID        string `json:"id"`
			Label     string `json:"label"`
			CreatedAt string `json:"created_at"`
			LastUsed  string `json:"last_used_at"`
			RevokedAt string `json:"revoked_at"`
		}
	}
	if err := json.Unmarshal([]byte(admin(t, dir, false, "--json", "key", "list", "--org", "acme")), &list); err != nil ||
		len(list.Keys) != 2 || list.Keys[1].ID != key.ID || list.Keys[1].RevokedAt == "" || list.Keys[1].CreatedAt == "" || list.Keys[0].RevokedAt != "" {
		t.Errorf("key list --json = %+v (%v)", list, err)
	}
}
