package signup_test

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/catchbox/catchbox/client/internal/testserver"
)

// block is a fenced code block of the README that the README test runs.
type block struct {
	line   int    // of its opening fence
	lang   string // sh or js
	code   string
	skip   string // why it is not run, from <!-- readme-test: skip REASON -->
	before string // a shell command run first, from <!-- readme-test: before: CMD -->
}

// readmeBlocks reads the shell and JavaScript blocks of README.md, with the
// directive of the HTML comment just above each (invisible on the rendered
// page).
func readmeBlocks(path string) ([]block, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []block
	var cur *block
	var directive block
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		switch {
		case cur != nil && line == "```":
			out = append(out, *cur)
			cur = nil
		case cur != nil:
			cur.code += line + "\n"
		case strings.HasPrefix(line, "<!-- readme-test: ") && strings.HasSuffix(line, " -->"):
			d := strings.TrimSuffix(strings.TrimPrefix(line, "<!-- readme-test: "), " -->")
			if rest, ok := strings.CutPrefix(d, "skip"); ok {
				directive.skip = strings.TrimSpace(rest)
				if directive.skip == "" {
					directive.skip = "marked skip"
				}
			} else if rest, ok := strings.CutPrefix(d, "before: "); ok {
				directive.before = rest
			} else {
				return nil, fmt.Errorf("README.md:%d: unknown readme-test directive %q", n, d)
			}
		case strings.HasPrefix(line, "```"):
			lang := strings.TrimPrefix(line, "```")
			if lang == "sh" || lang == "js" {
				cur = &block{line: n, lang: lang, skip: directive.skip, before: directive.before}
			}
			directive = block{}
		}
	}
	return out, sc.Err()
}

// TestREADMEBlocks runs every shell and JavaScript example of the README, in
// order, against one server built from the repository (the one TestMain
// started), so that none can rot: shell blocks with bash -euo pipefail, from
// a directory where bin/catchbox is the built binary; JavaScript blocks with
// node, as ES modules beside e2e/node_modules (the npm mailisk client). The
// README's addresses (127.0.0.1:8025, :2525) and key placeholder (cbx_...)
// become the test server's. A block marked skip is reported with its reason.
func TestREADMEBlocks(t *testing.T) {
	blocks, err := readmeBlocks("../../../README.md")
	if os.IsNotExist(err) {
		t.Skip("README.md not found beside the module")
	}
	if err != nil {
		t.Fatal(err)
	}
	bin, server := os.Getenv("CATCHBOX_TEST_BIN"), readmeServer
	if server == nil || bin == "" {
		t.Skip("no server was started")
	}
	work := t.TempDir()
	os.Mkdir(filepath.Join(work, "bin"), 0o755)
	if err := os.Symlink(bin, filepath.Join(work, "bin", "catchbox")); err != nil {
		t.Fatal(err)
	}
	e2e, _ := filepath.Abs("../../../e2e")
	var nodeMissing string
	if _, err := exec.LookPath("node"); err != nil {
		nodeMissing = "node is not installed"
	} else if _, err := os.Stat(filepath.Join(e2e, "node_modules", "mailisk")); err != nil {
		nodeMissing = "e2e/node_modules has no mailisk (cd e2e && npm ci)"
	}
	env := append(server.Env(), "CATCHBOX_URL="+server.URL, "PATH="+os.Getenv("PATH"), "HOME="+work)
	localize := strings.NewReplacer("http://127.0.0.1:8025", server.URL, "127.0.0.1:2525", server.SMTP, "cbx_...", testserver.Key)

	ran := 0
	for _, b := range blocks {
		t.Run(fmt.Sprintf("README.md:%d", b.line), func(t *testing.T) {
			if b.skip != "" {
				t.Skip(b.skip)
			}
			if b.lang == "js" && nodeMissing != "" {
				t.Skip(nodeMissing)
			}
			if b.before != "" {
				runBlock(t, work, env, "bash", "-euo", "pipefail", "-c", localize.Replace(b.before))
			}
			code := localize.Replace(b.code)
			if b.lang == "sh" {
				runBlock(t, work, env, "bash", "-euo", "pipefail", "-c", code)
			} else {
				file := filepath.Join(e2e, fmt.Sprintf(".readme-%d.mjs", b.line))
				if err := os.WriteFile(file, []byte(code), 0o600); err != nil {
					t.Fatal(err)
				}
				defer os.Remove(file)
				runBlock(t, work, env, "node", file)
			}
			ran++
		})
	}
	if ran == 0 {
		t.Error("no README block ran")
	}
}

// runBlock runs one example and fails the test, with its output and the
// server's log, if it fails.
func runBlock(t *testing.T, dir string, env []string, name string, args ...string) {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Dir, cmd.Env = dir, env
	done := make(chan struct{})
	var out []byte
	var err error
	go func() {
		out, err = cmd.CombinedOutput()
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(2 * time.Minute): // a wait that never ends must not hang the suite
		cmd.Process.Kill()
		<-done
		err = fmt.Errorf("still running after 2 minutes: %w", err)
	}
	if err != nil {
		t.Fatalf("%v\n--- output:\n%s\n--- code:\n%s\n--- server log:\n%s", err, out, args[len(args)-1], readmeServer.Logs())
	}
	t.Logf("output:\n%s", out)
}
