package signup_test

import (
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestREADMEGuard runs the README's MAILISK_API_URL guard (the block marked
// guard) against what it must refuse: no URL (cypress-mailisk would fall back
// to the hosted service), a URL without its final slash, a server that is not
// Catchbox, and one that does not answer; and against Catchbox, which it must
// let through.
func TestREADMEGuard(t *testing.T) {
	blocks, err := readmeBlocks("../../../README.md")
	if err != nil {
		t.Skip("README.md not found beside the module")
	}
	var guard *block
	for i := range blocks {
		if blocks[i].guard {
			guard = &blocks[i]
		}
	}
	if guard == nil {
		t.Fatal("the README has no block marked <!-- readme-test: guard -->")
	}
	if readmeServer == nil {
		t.Skip("no server was started")
	}
	sess := &session{e2e: mustAbs(t, "../../../e2e")}
	if why := nodeMissing(sess.e2e); why != "" {
		t.Skip(why)
	}
	file := sess.writeJS(t, guard.line, guard.code)
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(`{"version":"1.0"}`)) // answers, but not as Catchbox
	}))
	defer other.Close()
	closed := httptest.NewServer(http.NotFoundHandler())
	closed.Close()

	for _, c := range []struct {
		url  string
		pass bool
	}{
		{"", false},
		{readmeServer.URL, false}, // no final slash
		{other.URL + "/", false},
		{closed.URL + "/", false},
		{"https://api.mailisk.com/", false}, // (no network here: refused either way)
		{readmeServer.URL + "/", true},
	} {
		env := []string{"PATH=" + os.Getenv("PATH")}
		if c.url != "" {
			env = append(env, "CYPRESS_MAILISK_API_URL="+c.url)
		}
		out, err := runCommand(t.TempDir(), env, "node", file)
		if (err == nil) != c.pass {
			t.Errorf("guard with CYPRESS_MAILISK_API_URL=%q: %v, want pass %v\n%s", c.url, err, c.pass, out)
		}
		if !c.pass && !strings.Contains(string(out), "refusing to run") {
			t.Errorf("guard with CYPRESS_MAILISK_API_URL=%q does not say why it refuses: %s", c.url, out)
		}
	}
}

func mustAbs(t *testing.T, path string) string {
	t.Helper()
	abs, err := filepath.Abs(path)
	if err != nil {
		t.Fatal(err)
	}
	return abs
}
