package signup_test

import (
	"bufio"
	"fmt"
	"net/url"
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
	lang   string // sh, js or python
	code   string
	skip   string // why it is not run, from <!-- readme-test: skip REASON -->
	before string // a shell command run first, from <!-- readme-test: before: CMD -->
	guard  bool   // the MAILISK_API_URL guard, from <!-- readme-test: guard -->
}

// readmeBlocks reads the shell, JavaScript and Python blocks of README.md, with the
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
			} else if d == "guard" {
				directive.guard = true
			} else {
				return nil, fmt.Errorf("README.md:%d: unknown readme-test directive %q", n, d)
			}
		case strings.HasPrefix(line, "```"):
			lang := strings.TrimPrefix(line, "```")
			if lang == "sh" || lang == "js" || lang == "python" {
				cur = &block{line: n, lang: lang, skip: directive.skip, before: directive.before, guard: directive.guard}
			}
			directive = block{}
		}
	}
	return out, sc.Err()
}

// session is one shell, as a person who pastes the README's blocks in order
// into one terminal has it: the variables a block sets, exported or not,
// are there for the next. Each block runs in its own bash (so that a failure
// names its block), which restores the state the previous one left and saves
// its own when it ends.
type session struct {
	work  string   // the working directory: bin/catchbox is the built binary
	e2e   string   // where JavaScript blocks are written, beside e2e/node_modules
	env   []string // the environment of the terminal
	state string   // the file that carries the variables from block to block
	local *strings.Replacer
	logs  func() string
}

// The shell's own variables, never carried from block to block.
const shellVars = `BASH*|BASHOPTS|BASHPID|BASH_*|COLUMNS|COMP_*|DIRSTACK|EPOCH*|EUID|FUNCNAME|GROUPS|HISTCMD|HOSTNAME|HOSTTYPE|IFS|LINENO|LINES|MACHTYPE|OLDPWD|OPTERR|OPTIND|OSTYPE|PIPESTATUS|PPID|PS4|PWD|RANDOM|SECONDS|SHELLOPTS|SHLVL|SRANDOM|UID|_|__*`

// script wraps code: restore the state, run the code, save the state.
func (s *session) script(code string) string {
	return "source " + s.state + "\ncd " + s.work + "\n" + code + "\n" +
		"for __v in $(compgen -v); do case $__v in " + shellVars + ") continue;; esac; declare -p \"$__v\" 2>/dev/null; done > " + s.state + ".new\n" +
		"mv " + s.state + ".new " + s.state + "\n"
}

// TestREADMEBlocks runs every shell and JavaScript example of the README in
// order, as a newcomer pastes them into one shell after make run on a fresh
// clone, so that none can rot and none depends on a step the README gives
// later: against a server started as make run starts it, on a fresh store,
// with the key it printed (testserver.StartFresh), from a directory where
// bin/catchbox is the built binary. Shell blocks run with bash -euo pipefail;
// JavaScript blocks with node, as ES modules beside e2e/node_modules (the npm
// mailisk client), in the shell's environment. The README's addresses
// (127.0.0.1:8025, :2525) and key placeholder (cbx_...) become the test
// server's; CATCHBOX_URL names it to the client commands, whose default is
// 127.0.0.1:8025. A block marked skip is reported with its reason.
func TestREADMEBlocks(t *testing.T) {
	blocks, err := readmeBlocks("../../../README.md")
	if os.IsNotExist(err) {
		t.Skip("README.md not found beside the module")
	}
	if err != nil {
		t.Fatal(err)
	}
	bin := os.Getenv("CATCHBOX_TEST_BIN")
	if bin == "" {
		t.Skip("no server was built")
	}
	server, err := testserver.StartFresh(bin)
	if err != nil {
		t.Fatal(err)
	}
	defer server.Stop()
	sess := newSession(t, bin, server)
	nodeMissing := nodeMissing(sess.e2e)

	ran := 0
	for _, b := range blocks {
		t.Run(fmt.Sprintf("README.md:%d", b.line), func(t *testing.T) {
			if b.skip != "" {
				t.Skip(b.skip)
			}
			if b.lang == "js" && nodeMissing != "" {
				t.Skip(nodeMissing)
			}
			code := sess.local.Replace(b.code)
			if b.before != "" {
				sess.run(t, "bash", "-euo", "pipefail", "-c", sess.script(sess.local.Replace(b.before)))
			}
			switch b.lang {
			case "sh":
				sess.run(t, "bash", "-euo", "pipefail", "-c", sess.script(code))
			case "python":
				if _, err := exec.LookPath("python3"); err != nil {
					t.Skip("python3 is not installed")
				}
				file := filepath.Join(sess.work, fmt.Sprintf("readme-%d.py", b.line))
				if err := os.WriteFile(file, []byte(code), 0o600); err != nil {
					t.Fatal(err)
				}
				sess.run(t, "bash", "-euo", "pipefail", "-c", sess.script("python3 "+file))
			default:
				file := sess.writeJS(t, b.line, code)
				sess.run(t, "bash", "-euo", "pipefail", "-c", sess.script("node "+file))
			}
			ran++
		})
	}
	if ran == 0 {
		t.Error("no README block ran")
	}
}

func newSession(t *testing.T, bin string, server *testserver.Server) *session {
	work := t.TempDir()
	os.Mkdir(filepath.Join(work, "bin"), 0o755)
	if err := os.Symlink(bin, filepath.Join(work, "bin", "catchbox")); err != nil {
		t.Fatal(err)
	}
	e2e, _ := filepath.Abs("../../../e2e")
	state := filepath.Join(work, ".readme-state")
	if err := os.WriteFile(state, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	// The terminal after make run: the store is the one make run made (the
	// admin commands find it as they would find ./data), the client commands
	// and signin-link reach the server on its real address; no key yet.
	u, _ := url.Parse(server.URL)
	var env []string
	for _, kv := range server.Env() {
		if k, _, _ := strings.Cut(kv, "="); k == "CATCHBOX_DATA_DIR" || !strings.HasPrefix(k, "CATCHBOX_") {
			env = append(env, kv)
		}
	}
	env = append(env, "CATCHBOX_URL="+server.URL, "CATCHBOX_HTTP_ADDR="+u.Host, "HOME="+work)
	return &session{
		work: work, e2e: e2e, env: env, state: state,
		local: strings.NewReplacer("http://127.0.0.1:8025", server.URL, "127.0.0.1:2525", server.SMTP, "cbx_...", server.Key),
		logs:  server.Logs,
	}
}

// nodeMissing says why JavaScript blocks cannot run, "" when they can.
func nodeMissing(e2e string) string {
	if _, err := exec.LookPath("node"); err != nil {
		return "node is not installed"
	}
	if _, err := os.Stat(filepath.Join(e2e, "node_modules", "mailisk")); err != nil {
		return "e2e/node_modules has no mailisk (make node-deps, or cd e2e && npm ci)"
	}
	return ""
}

// writeJS writes a JavaScript block beside e2e/node_modules, removed when the
// test ends, and returns its path.
func (s *session) writeJS(t *testing.T, line int, code string) string {
	t.Helper()
	file := filepath.Join(s.e2e, fmt.Sprintf(".readme-%d.mjs", line))
	if err := os.WriteFile(file, []byte(code), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.Remove(file) })
	return file
}

// run runs one example and fails the test, with its output and the
// server's log, if it fails.
func (s *session) run(t *testing.T, name string, args ...string) {
	t.Helper()
	out, err := runCommand(s.work, s.env, name, args...)
	if err != nil {
		t.Fatalf("%v\n--- output:\n%s\n--- code:\n%s\n--- server log:\n%s", err, out, args[len(args)-1], s.logs())
	}
	t.Logf("output:\n%s", out)
}

// runCommand runs a command in dir with env and returns its output; one that
// never ends is killed after two minutes.
func runCommand(dir string, env []string, name string, args ...string) ([]byte, error) {
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
	return out, err
}
