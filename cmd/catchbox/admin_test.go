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
	out := admin(t, dir, false, "--json", "org", "create", "acme", "--totp-device-limit", "5", "--no-totp-enabled")
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
	if msg := admin(t, dir, true, "key", "revoke", key.ID); !strings.Contains(msg, "not found") {
		t.Fatalf("second revoke: %q", msg)
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
