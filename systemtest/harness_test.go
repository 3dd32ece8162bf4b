package systemtest

import (
	"bufio"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// binary is the catchbox executable built by TestMain ("" with -short).
var binary string

// testAPIKey is the key every started server bootstraps its organisation with.
const testAPIKey = "cbx_systemtest_key_0123456789"

// startTimeout bounds a server's start, migrations included, on a loaded machine.
const startTimeout = 60 * time.Second

// TestMain builds the binary once for every test of the package. CATCHBOX_BIN,
// as in the npm end-to-end suite, names a binary built elsewhere to test instead.
func TestMain(m *testing.M) {
	flag.Parse()
	if testing.Short() {
		os.Exit(m.Run())
	}
	if binary = os.Getenv("CATCHBOX_BIN"); binary != "" {
		os.Exit(m.Run())
	}
	dir, err := os.MkdirTemp("", "catchbox-systemtest-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "systemtest:", err)
		os.Exit(1)
	}
	binary = filepath.Join(dir, "catchbox")
	goCmd := "go"
	if p, err := exec.LookPath("go"); err == nil {
		goCmd = p
	}
	build := exec.Command(goCmd, "build", "-o", binary, "./cmd/catchbox")
	build.Dir = ".." // the module root
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "systemtest: building catchbox failed:", err)
		os.RemoveAll(dir)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// skipShort skips the long-running system tests under -short.
func skipShort(t *testing.T) {
	t.Helper()
	if testing.Short() {
		t.Skip("system test: skipped with -short")
	}
}

// server is one running catchbox serve process.
type server struct {
	t    *testing.T
	name string
	cmd  *exec.Cmd
	logs *logBuffer

	// HTTP is the base URL of the API, SMTP the address of the (first) SMTP
	// listener, IMAP and POP3 those of the IMAP and POP3 listeners, all read
	// from the ready log line.
	HTTP string
	SMTP string
	IMAP string
	POP3 string

	ready  chan map[string]any // receives the parsed ready log line
	exited chan struct{}       // closed once the process has been waited for
}

// startServer runs catchbox serve with the base settings (loopback :0 ports,
// JSON logs, the test API key) plus env, and returns once it logged that it is
// ready. The process is killed when the test ends.
func startServer(t *testing.T, name string, env map[string]string) *server {
	t.Helper()
	s := spawnServer(t, name, env)
	s.waitReady()
	return s
}

// spawnServer starts the process without waiting for it to be ready, so that
// several replicas can start together; call waitReady before using it.
func spawnServer(t *testing.T, name string, env map[string]string) *server {
	t.Helper()
	full := map[string]string{
		"CATCHBOX_HTTP_ADDR":  "127.0.0.1:0",
		"CATCHBOX_SMTP_ADDR":  "127.0.0.1:0",
		"CATCHBOX_IMAP_ADDR":  "127.0.0.1:0",
		"CATCHBOX_POP3_ADDR":  "127.0.0.1:0",
		"CATCHBOX_LOG_FORMAT": "json",
		"CATCHBOX_API_KEY":    testAPIKey,
	}
	for k, v := range env {
		full[k] = v
	}
	cmd := exec.Command(binary, "serve")
	// The machine's own CATCHBOX_* settings must not leak into the servers.
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "CATCHBOX_") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	for k, v := range full {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	// If the test process dies without its cleanups, the server dies with it.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	s := &server{t: t, name: name, cmd: cmd, logs: &logBuffer{}, exited: make(chan struct{})}
	cmd.Stdout = s.logs
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", name, err)
	}
	s.ready = make(chan map[string]any, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		sc.Buffer(make([]byte, 64<<10), 4<<20)
		for sc.Scan() {
			if rec := s.logs.addLine(sc.Text()); rec != nil && rec["msg"] == "Catchbox is ready" {
				select {
				case s.ready <- rec:
				default:
				}
			}
		}
		io.Copy(io.Discard, stderr)
		cmd.Wait()
		close(s.exited)
	}()
	t.Cleanup(func() {
		s.kill()
		if t.Failed() {
			t.Logf("log of %s (last 60 lines):\n%s", name, s.logs.tail(60))
		}
	})
	return s
}

// waitReady waits for the ready log line and reads the addresses from it.
func (s *server) waitReady() {
	t, name := s.t, s.name
	t.Helper()
	select {
	case rec := <-s.ready:
		s.HTTP, _ = rec["http"].(string)
		if addrs, ok := rec["smtp"].([]any); ok && len(addrs) > 0 {
			s.SMTP, _ = addrs[0].(string)
		}
		s.IMAP, _ = rec["imap"].(string)
		s.POP3, _ = rec["pop3"].(string)
		if s.HTTP == "" || s.SMTP == "" {
			t.Fatalf("%s: ready line without addresses: %v", name, rec)
		}
	case <-s.exited:
		t.Fatalf("%s exited before it was ready (%v):\n%s", name, s.cmd.ProcessState, s.logs.tail(60))
	case <-time.After(startTimeout):
		t.Fatalf("%s was not ready after %s:\n%s", name, startTimeout, s.logs.tail(60))
	}
}

// kill ends the process with SIGKILL, as a crash or an OOM kill would, and
// waits for it. It does nothing if the process has already exited.
func (s *server) kill() {
	select {
	case <-s.exited:
		return
	default:
	}
	s.cmd.Process.Signal(syscall.SIGKILL)
	<-s.exited
}

// logBuffer keeps a process's log lines, parsed when they are JSON.
type logBuffer struct {
	mu      sync.Mutex
	lines   []string
	records []map[string]any
	partial strings.Builder // stdout text not yet ended by a newline
}

// addLine stores one stderr line and returns it parsed, or nil if it is not JSON.
func (b *logBuffer) addLine(line string) map[string]any {
	var rec map[string]any
	if json.Unmarshal([]byte(line), &rec) != nil {
		rec = nil
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.lines = append(b.lines, line)
	if rec != nil {
		b.records = append(b.records, rec)
	}
	return rec
}

// Write takes the process's stdout, which only ever carries plain text.
func (b *logBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.partial.Write(p)
	text := b.partial.String()
	if i := strings.LastIndexByte(text, '\n'); i >= 0 {
		b.lines = append(b.lines, strings.Split(text[:i], "\n")...)
		b.partial.Reset()
		b.partial.WriteString(text[i+1:])
	}
	return len(p), nil
}

// find returns the parsed log records whose message is msg.
func (b *logBuffer) find(msg string) []map[string]any {
	b.mu.Lock()
	defer b.mu.Unlock()
	var out []map[string]any
	for _, r := range b.records {
		if r["msg"] == msg {
			out = append(out, r)
		}
	}
	return out
}

// count returns how many log records carry msg.
func (b *logBuffer) count(msg string) int { return len(b.find(msg)) }

// tail returns the last n lines, for failure reports.
func (b *logBuffer) tail(n int) string {
	b.mu.Lock()
	defer b.mu.Unlock()
	lines := b.lines
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
