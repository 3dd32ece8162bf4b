package main

import (
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
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
	if abs, _ := filepath.Abs(filepath.Join(dir, "catchbox.db")); !strings.Contains(obj.Message, abs) || stderr != "" {
		t.Errorf("the refusal does not name the store, or more was said on stderr: %+v %q", obj, stderr)
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

// TestUsageErrors: a bad flag or value is one line on stderr naming what the
// user set, as they set it (the environment variable when it came from
// there), with a hint to --help, and exit status 64; an empty value with a
// default is refused at start. --version and version print the version; help
// shows required alternatives as alternatives.
func TestUsageErrors(t *testing.T) {
	s := &served{}
	for _, c := range []struct {
		args []string
		env  []string
		want string
	}{
		{[]string{"serve", "--wait-hold", "abc"}, nil, `catchbox: --wait-hold: expected a duration such as 30s or 1h30m, not "abc" (see catchbox serve --help)`},
		{[]string{"serve"}, []string{"CATCHBOX_WAIT_HOLD=abc"}, `catchbox: CATCHBOX_WAIT_HOLD="abc": expected a duration such as 30s or 1h30m, not "abc" (see catchbox serve --help)`},
		{[]string{"serve"}, []string{"CATCHBOX_WAIT_HOLD=-1s"}, `catchbox: CATCHBOX_WAIT_HOLD must be positive (see catchbox serve --help)`},
		{[]string{"serve", "--wait-hold=-1s"}, []string{"CATCHBOX_WAIT_HOLD=5s"}, `catchbox: --wait-hold must be positive (see catchbox serve --help)`},
		{[]string{"serve"}, []string{"CATCHBOX_MAIL_DOMAIN="}, `catchbox: CATCHBOX_MAIL_DOMAIN is empty: give a value, or leave it unset for the default (localhost) (see catchbox serve --help)`},
		{[]string{"serve"}, []string{"CATCHBOX_LOG_FORMAT=xml"}, `catchbox: CATCHBOX_LOG_FORMAT must be one of "text","json" but got "xml" (see catchbox serve --help)`},
		{[]string{"serve", "--bogus"}, nil, `catchbox: unknown flag --bogus (see catchbox serve --help)`},
		{[]string{"wait", "--namespace", "x", "--since", "yesterday"}, nil, `catchbox: --since must be RFC 3339 (2026-11-27T10:00:00Z), Unix seconds or a duration such as 5m, not "yesterday" (see catchbox wait --help)`},
		{[]string{"otp"}, nil, `catchbox: missing flags: --secret=BASE32 or --device=ID (see catchbox otp --help)`},
		{[]string{"admin", "org", "lst"}, nil, `catchbox: unexpected argument lst, did you mean "list"? (see catchbox admin org --help)`},
		{[]string{"admin", "org", "list"}, []string{"CATCHBOX_DATA_DIR="}, `catchbox: CATCHBOX_DATA_DIR is empty: give a value, or leave it unset for the default (./data) (see catchbox admin org list --help)`},
	} {
		cmd := exec.Command(binary, c.args...)
		cmd.Env = append(cleanEnv(), c.env...)
		var out, errOut strings.Builder
		cmd.Stdout, cmd.Stderr = &out, &errOut
		err := cmd.Run()
		var exit *exec.ExitError
		if !errors.As(err, &exit) || exit.ExitCode() != exitUsage || errOut.String() != c.want+"\n" || out.Len() != 0 {
			t.Errorf("%v %v: %v\nstderr %q\nwant   %q", c.env, c.args, err, errOut.String(), c.want)
		}
	}
	for _, args := range [][]string{{"--version"}, {"version"}} {
		if out, _, status := s.run(t, args...); status != 0 || out != "dev\n" {
			t.Errorf("%v = %d %q", args, status, out)
		}
	}
	if out, _, _ := s.run(t, "otp", "--help"); !strings.HasPrefix(out, "Usage: catchbox otp --secret=BASE32 | --device=ID [flags]\n") {
		t.Errorf("otp --help: %q", out)
	}
}

// cleanEnv is the test's environment without any CATCHBOX_ setting.
func cleanEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "CATCHBOX_") {
			env = append(env, kv)
		}
	}
	return env
}

// TestAdminLists: org list, namespace list --org and sms-number list --org,
// as text and as JSON; the store is named on stderr only with --verbose.
func TestAdminLists(t *testing.T) {
	dir := t.TempDir()
	admin(t, dir, false, "--create", "org", "create", "acme")
	admin(t, dir, false, "org", "create", "beta")
	admin(t, dir, false, "namespace", "create", "staging", "--org", "acme")
	admin(t, dir, false, "namespace", "create", "shared", "--org", "beta")
	admin(t, dir, false, "namespace", "share", "shared", "--with", "acme")
	admin(t, dir, false, "sms-number", "add", "--org", "acme", "--phone", "+15550005555")

	if out := admin(t, dir, false, "org", "list"); !strings.HasPrefix(out, "NAME ") || !strings.Contains(out, "\nacme ") || !strings.Contains(out, "\nbeta ") {
		t.Errorf("org list = %q", out)
	}
	var orgs struct {
		Organisations []struct{ Name string } `json:"organisations"`
	}
	if err := json.Unmarshal([]byte(admin(t, dir, false, "--json", "org", "list")), &orgs); err != nil || len(orgs.Organisations) != 2 || orgs.Organisations[0].Name != "acme" {
		t.Errorf("org list --json = %+v, %v", orgs, err)
	}
	var nss struct {
		Namespaces []struct {
			Namespace string `json:"namespace"`
			Shared    bool   `json:"shared"`
		} `json:"namespaces"`
	}
	if err := json.Unmarshal([]byte(admin(t, dir, false, "--json", "namespace", "list", "--org", "acme")), &nss); err != nil ||
		len(nss.Namespaces) != 2 || nss.Namespaces[0].Namespace != "shared" || !nss.Namespaces[0].Shared || nss.Namespaces[1].Shared {
		t.Errorf("namespace list --json = %+v, %v", nss, err)
	}
	if out := admin(t, dir, false, "namespace", "list", "--org", "acme"); !strings.Contains(out, "\nstaging ") {
		t.Errorf("namespace list = %q", out)
	}
	var numbers struct {
		Numbers []struct {
			Phone string `json:"phone_number"`
		} `json:"sms_numbers"`
	}
	if err := json.Unmarshal([]byte(admin(t, dir, false, "--json", "sms-number", "list", "--org", "acme")), &numbers); err != nil ||
		len(numbers.Numbers) != 1 || numbers.Numbers[0].Phone != "+15550005555" {
		t.Errorf("sms-number list --json = %+v, %v", numbers, err)
	}
	if out := admin(t, dir, false, "--json", "sms-number", "list", "--org", "beta"); out != `{"organisation":"beta","sms_numbers":[]}`+"\n" {
		t.Errorf("an empty sms-number list = %q", out)
	}

	cmd := exec.Command(binary, "admin", "org", "list")
	cmd.Env = append(cleanEnv(), "CATCHBOX_DATA_DIR="+dir)
	if out, err := cmd.CombinedOutput(); err != nil || strings.Contains(string(out), "Using store") {
		t.Errorf("admin without --verbose: %v %q", err, out)
	}
	cmd = exec.Command(binary, "admin", "--verbose", "org", "list")
	cmd.Env = append(cleanEnv(), "CATCHBOX_DATA_DIR="+dir)
	var errOut strings.Builder
	cmd.Stderr = &errOut
	abs, _ := filepath.Abs(filepath.Join(dir, "catchbox.db"))
	if err := cmd.Run(); err != nil || !strings.Contains(errOut.String(), "Using store sqlite://"+abs) {
		t.Errorf("admin --verbose: %v %q", err, errOut.String())
	}
}

// TestAdminSigninLink: signin-link prints a one-time link for a user, on the
// base URL serve would use (the public URL when set), and refuses an unknown
// user.
func TestAdminSigninLink(t *testing.T) {
	dir := t.TempDir()
	admin(t, dir, false, "--create", "org", "create", "acme")
	cmd := exec.Command(binary, "admin", "user", "create", "dev@acme.test", "--org", "acme")
	cmd.Env = append(cleanEnv(), "CATCHBOX_DATA_DIR="+dir)
	cmd.Stdin = strings.NewReader("a long enough password\n")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("user create: %v %s", err, out)
	}
	out := admin(t, dir, false, "signin-link", "--user", "dev@acme.test")
	if !regexp.MustCompile(`^http://127\.0\.0\.1:8025/signin/link/[A-Za-z0-9_-]{43}\n$`).MatchString(out) {
		t.Errorf("signin-link = %q", out)
	}
	var link struct{ URL, User, ExpiresAt string }
	cmd = exec.Command(binary, "admin", "--json", "signin-link", "--user", "DEV@acme.test")
	cmd.Env = append(cleanEnv(), "CATCHBOX_DATA_DIR="+dir, "CATCHBOX_PUBLIC_URL=https://catchbox.example.test/")
	raw, err := cmd.Output()
	if err == nil {
		err = json.Unmarshal(raw, &link)
	}
	if err != nil || !strings.HasPrefix(link.URL, "https://catchbox.example.test/signin/link/") || link.User != "dev@acme.test" {
		t.Errorf("signin-link --json with a public URL = %q, %v", raw, err)
	}
	if msg := admin(t, dir, true, "signin-link", "--user", "nobody@acme.test"); !strings.Contains(msg, "not found") {
		t.Errorf("signin-link for an unknown user: %q", msg)
	}
}
