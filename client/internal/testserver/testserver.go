// Package testserver runs catchbox serve for the client module's tests: the
// binary built from the repository the module sits in, on loopback ports, on
// SQLite or on a fresh PostgreSQL schema. It reads the server's addresses from
// its ready log line, as the repository's system tests do.
package testserver

import (
	"bufio"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Key is the API key every server started here bootstraps its organisation
// with.
const Key = "cbx_client_test_key_0123456789"

// Phone is the active SMS number every server started here has.
const Phone = "+15550001111"

// ErrNoRepository is returned by Build outside a checkout of the repository.
var ErrNoRepository = errors.New("not inside the catchbox repository: no server to build")

// Build builds cmd/catchbox of the repository the working directory is in,
// into dir, and returns the binary's path. CATCHBOX_BIN names a binary built
// elsewhere instead.
func Build(dir string) (string, error) {
	if bin := os.Getenv("CATCHBOX_BIN"); bin != "" {
		return bin, nil
	}
	root, err := repositoryRoot()
	if err != nil {
		return "", err
	}
	bin := filepath.Join(dir, "catchbox")
	cmd := exec.Command("go", "build", "-o", bin, "./cmd/catchbox")
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("build catchbox: %w\n%s", err, out)
	}
	return bin, nil
}

// repositoryRoot finds the main module's directory above the working one.
func repositoryRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		mod, err := os.ReadFile(filepath.Join(dir, "go.mod"))
		if err == nil && strings.HasPrefix(string(mod), "module github.com/catchbox/catchbox\n") {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", ErrNoRepository
		}
		dir = parent
	}
}

// Server is one running catchbox serve.
type Server struct {
	Name string // "sqlite" or "postgres"
	URL  string // the HTTP API's base URL
	SMTP string // host:port of the SMTP listener
	// Key is the default organisation's API key: the constant Key, or for
	// StartFresh the one the start generated and printed.
	Key string
	// Printed is what the start printed on standard output.
	Printed     string
	fresh       bool
	bin         string
	env         []string
	cmd         *exec.Cmd
	exited      chan struct{}
	logs        *logTail
	cleanups    []func()
	DatabaseURL string
}

// Start runs bin serve on a fresh store: SQLite in a new data directory, or,
// with postgresURL, a new schema of that database (made and dropped with
// psql). hold is CATCHBOX_WAIT_HOLD. The server gets the organisation key Key
// and the active SMS number Phone; env adds or overrides settings
// (NAME=value).
func Start(bin, postgresURL string, hold time.Duration, env ...string) (*Server, error) {
	dataDir, err := os.MkdirTemp("", "catchbox-client-test-")
	if err != nil {
		return nil, err
	}
	s := &Server{Name: "sqlite", Key: Key, bin: bin, exited: make(chan struct{}), logs: &logTail{}}
	s.cleanups = append(s.cleanups, func() { os.RemoveAll(dataDir) })
	s.DatabaseURL = "sqlite://" + filepath.Join(dataDir, "catchbox.db")
	if postgresURL != "" {
		s.Name = "postgres"
		if s.DatabaseURL, err = s.schema(postgresURL); err != nil {
			s.Stop()
			return nil, err
		}
	}
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "CATCHBOX_") {
			s.env = append(s.env, kv)
		}
	}
	s.env = append(s.env, "CATCHBOX_DATA_DIR="+dataDir, "CATCHBOX_DATABASE_URL="+s.DatabaseURL,
		"CATCHBOX_HTTP_ADDR=127.0.0.1:0", "CATCHBOX_SMTP_ADDR=127.0.0.1:0", "CATCHBOX_LOG_FORMAT=json",
		"CATCHBOX_IMAP_ADDR=127.0.0.1:0", "CATCHBOX_POP3_ADDR=127.0.0.1:0",
		"CATCHBOX_API_KEY="+Key, "CATCHBOX_WAIT_HOLD="+hold.String(),
		// Deliverability lookups ask a closed port on loopback: refused at once,
		// never the network.
		"CATCHBOX_DNS_SERVER=127.0.0.1:9")
	s.env = append(s.env, env...)
	if err := s.start(); err != nil {
		s.Stop()
		return nil, err
	}
	if _, err := s.Admin("sms-number", "add", "--org", "default", "--phone", Phone); err != nil {
		s.Stop()
		return nil, err
	}
	return s, nil
}

// StartFresh runs bin serve as make run does on a fresh clone: a new SQLite
// store in a new data directory, no key chosen (Key is the one the start
// generates and prints, read from its standard output as a person would copy
// it), and no SMS number. Only the ports (127.0.0.1:0: others share the
// machine), the log format (JSON, for the ready line) and the DNS server of
// deliverability checks (a closed port: never the network) differ.
func StartFresh(bin string) (*Server, error) {
	dataDir, err := os.MkdirTemp("", "catchbox-fresh-")
	if err != nil {
		return nil, err
	}
	s := &Server{Name: "sqlite", fresh: true, bin: bin, exited: make(chan struct{}), logs: &logTail{}}
	s.cleanups = append(s.cleanups, func() { os.RemoveAll(dataDir) })
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "CATCHBOX_") {
			s.env = append(s.env, kv)
		}
	}
	s.env = append(s.env, "CATCHBOX_DATA_DIR="+dataDir, "CATCHBOX_HTTP_ADDR=127.0.0.1:0", "CATCHBOX_SMTP_ADDR=127.0.0.1:0",
		"CATCHBOX_IMAP_ADDR=127.0.0.1:0", "CATCHBOX_POP3_ADDR=127.0.0.1:0", "CATCHBOX_LOG_FORMAT=json", "CATCHBOX_DNS_SERVER=127.0.0.1:9")
	s.DatabaseURL = "sqlite://" + filepath.Join(dataDir, "catchbox.db")
	if err := s.start(); err != nil {
		s.Stop()
		return nil, err
	}
	return s, nil
}

// schema makes a new schema in the PostgreSQL database and returns the URL
// that selects it.
func (s *Server) schema(base string) (string, error) {
	if _, err := exec.LookPath("psql"); err != nil {
		return "", errors.New("psql not found: it makes the PostgreSQL schema of the test server")
	}
	var b [6]byte
	rand.Read(b[:])
	name := "client_" + hex.EncodeToString(b[:])
	if out, err := exec.Command("psql", "-q", base, "-c", "CREATE SCHEMA "+name).CombinedOutput(); err != nil {
		return "", fmt.Errorf("create schema: %w\n%s", err, out)
	}
	s.cleanups = append(s.cleanups, func() { exec.Command("psql", "-q", base, "-c", "DROP SCHEMA "+name+" CASCADE").Run() })
	u, err := url.Parse(base)
	if err != nil {
		return "", err
	}
	q := u.Query()
	q.Set("search_path", name+",public")
	u.RawQuery = q.Encode()
	return u.String(), nil
}

func (s *Server) start() error {
	s.cmd = exec.Command(s.bin, "serve")
	s.cmd.Env = s.env
	s.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	stderr, err := s.cmd.StderrPipe()
	if err != nil {
		return err
	}
	stdout, err := s.cmd.StdoutPipe()
	if err != nil {
		return err
	}
	if err := s.cmd.Start(); err != nil {
		return fmt.Errorf("start catchbox: %w", err)
	}
	// The start's note on standard output; a first start ends it with the
	// key's line.
	printed := make(chan string, 1)
	go func() {
		var b strings.Builder
		sc := bufio.NewScanner(stdout)
		sent := false
		for sc.Scan() {
			b.WriteString(sc.Text() + "\n")
			if key, ok := strings.CutPrefix(sc.Text(), "export CATCHBOX_API_KEY="); ok && s.fresh && !sent {
				s.Key, sent = key, true
				printed <- b.String()
			}
		}
		if !sent {
			printed <- b.String()
		}
	}()
	ready := make(chan map[string]any, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		sc.Buffer(make([]byte, 64<<10), 4<<20)
		for sc.Scan() {
			s.logs.add(sc.Text())
			var rec map[string]any
			if json.Unmarshal(sc.Bytes(), &rec) == nil && rec["msg"] == "Catchbox is ready" {
				ready <- rec
			}
		}
		s.cmd.Wait()
		close(s.exited)
	}()
	select {
	case rec := <-ready:
		s.URL, _ = rec["http"].(string)
		if addrs, ok := rec["smtp"].([]any); ok && len(addrs) > 0 {
			s.SMTP, _ = addrs[0].(string)
		}
		if !s.fresh {
			return nil
		}
		select {
		case s.Printed = <-printed:
		case <-time.After(30 * time.Second):
		}
		if !strings.Contains(s.Printed, "export CATCHBOX_API_KEY=") {
			return fmt.Errorf("catchbox printed no key on its first start:\n%s", s.Printed)
		}
		return nil
	case <-s.exited:
		return fmt.Errorf("catchbox exited before it was ready:\n%s", s.logs.String())
	case <-time.After(60 * time.Second):
		return fmt.Errorf("catchbox was not ready after 60s:\n%s", s.logs.String())
	}
}

// Admin runs a catchbox admin command on the server's store.
func (s *Server) Admin(args ...string) (string, error) {
	cmd := exec.Command(s.bin, append([]string{"admin"}, args...)...)
	cmd.Env = s.env
	out, err := cmd.CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("catchbox admin %s: %w\n%s", strings.Join(args, " "), err, out)
	}
	return string(out), nil
}

// Env is the environment the server runs with (its CATCHBOX_ settings: the
// store, the key), for commands that must work on the same store.
func (s *Server) Env() []string { return append([]string(nil), s.env...) }

// Logs returns the server's last log lines, for a failure report.
func (s *Server) Logs() string { return s.logs.String() }

// Stop kills the server and removes its store.
func (s *Server) Stop() {
	if s.cmd != nil && s.cmd.Process != nil {
		s.cmd.Process.Kill()
		<-s.exited
	}
	for i := len(s.cleanups) - 1; i >= 0; i-- {
		s.cleanups[i]()
	}
}

// logTail keeps the last lines of a log.
type logTail struct {
	mu    sync.Mutex
	lines []string
}

func (l *logTail) add(line string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.lines = append(l.lines, line); len(l.lines) > 60 {
		l.lines = l.lines[1:]
	}
}

func (l *logTail) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.Join(l.lines, "\n")
}
