package systemtest

import (
	"context"
	"database/sql"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"sort"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/catchbox/catchbox/internal/testkit"
)

// pgCluster is a private PostgreSQL server for one test, so that the test may
// stop and start it without disturbing the machine's shared server.
type pgCluster struct {
	t       *testing.T
	bin     string // directory of postgres and initdb
	dir     string // everything of the cluster: data, socket, log
	port    int
	cred    *syscall.Credential // the postgres user's, when the test runs as root
	logPath string

	cmd    *exec.Cmd
	exited chan struct{}
}

// startPGCluster initialises and starts a private cluster on a free loopback
// port with trust authentication. It skips the test when the PostgreSQL server
// binaries are not installed.
func startPGCluster(t *testing.T) *pgCluster {
	t.Helper()
	found, _ := filepath.Glob("/usr/lib/postgresql/*/bin/postgres")
	if len(found) == 0 {
		t.Skip("PostgreSQL server binaries not found under /usr/lib/postgresql: database restart test skipped")
	}
	sort.Slice(found, func(i, j int) bool { return pgVersion(found[i]) < pgVersion(found[j]) })
	c := &pgCluster{t: t, bin: filepath.Dir(found[len(found)-1])}
	if _, err := os.Stat(filepath.Join(c.bin, "initdb")); err != nil {
		t.Skipf("initdb not found beside %s: database restart test skipped", found[len(found)-1])
	}
	// Not t.TempDir: its parents are private to this user, and PostgreSQL
	// refuses to run as root, so the cluster's directory must be reachable by
	// the postgres user.
	dir, err := os.MkdirTemp("", "catchbox-pg-")
	if err != nil {
		t.Fatal(err)
	}
	c.dir = dir
	t.Cleanup(func() { os.RemoveAll(dir) })
	if os.Geteuid() == 0 {
		u, err := user.Lookup("postgres")
		if err != nil {
			t.Skip("running as root without a postgres user to run PostgreSQL as: database restart test skipped")
		}
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		if err := os.Chown(dir, uid, gid); err != nil {
			t.Fatal(err)
		}
		c.cred = &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}
	}
	c.port = freePort(t)
	c.logPath = filepath.Join(dir, "postgres.log")

	initdb := c.command(filepath.Join(c.bin, "initdb"), "-D", c.dataDir(), "-U", "postgres",
		"--auth=trust", "--no-locale", "-E", "UTF8", "--no-sync")
	if out, err := initdb.CombinedOutput(); err != nil {
		t.Fatalf("initdb: %v\n%s", err, out)
	}
	t.Cleanup(c.stopImmediate)
	c.start()
	return c
}

// pgVersion is the major version in a /usr/lib/postgresql/<v>/bin path.
func pgVersion(path string) int {
	v, _ := strconv.Atoi(filepath.Base(filepath.Dir(filepath.Dir(path))))
	return v
}

func (c *pgCluster) dataDir() string { return filepath.Join(c.dir, "data") }

// URL is the connection string of the cluster's postgres database.
func (c *pgCluster) URL() string {
	return fmt.Sprintf("postgres://postgres@127.0.0.1:%d/postgres?sslmode=disable", c.port)
}

// command prepares a PostgreSQL program to run as the postgres user (when the
// test is root) in a plain environment.
func (c *pgCluster) command(name string, args ...string) *exec.Cmd {
	cmd := exec.Command(name, args...)
	cmd.Dir = c.dir
	cmd.Env = []string{"PATH=" + c.bin + ":/usr/bin:/bin", "LC_ALL=C", "HOME=" + c.dir}
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: c.cred, Pdeathsig: syscall.SIGKILL}
	return cmd
}

// start runs the server in the foreground of a child process (so that it dies
// with the test) and waits until it accepts connections.
func (c *pgCluster) start() {
	t := c.t
	t.Helper()
	logFile, err := os.OpenFile(c.logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer logFile.Close() // the child keeps its own descriptor
	c.cmd = c.command(filepath.Join(c.bin, "postgres"), "-D", c.dataDir(),
		"-p", strconv.Itoa(c.port),
		"-c", "listen_addresses=127.0.0.1",
		"-c", "unix_socket_directories="+c.dir,
		"-c", "max_connections=60",
		"-c", "shared_buffers=16MB")
	c.cmd.Stdout, c.cmd.Stderr = logFile, logFile
	if err := c.cmd.Start(); err != nil {
		t.Fatalf("start postgres: %v", err)
	}
	exited := make(chan struct{})
	c.exited = exited
	cmd := c.cmd
	go func() {
		cmd.Wait()
		close(exited)
	}()
	ok := testkit.Eventually(testkit.Patience, func() bool {
		select {
		case <-exited:
			return true
		default:
		}
		db, err := sql.Open("pgx", c.URL())
		if err != nil {
			return false
		}
		defer db.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		return db.PingContext(ctx) == nil
	})
	select {
	case <-exited:
		ok = false
	default:
	}
	if !ok {
		log, _ := os.ReadFile(c.logPath)
		t.Fatalf("the private PostgreSQL did not start:\n%s", log)
	}
}

// stopImmediate stops the server the way pg_ctl stop -m immediate does
// (SIGQUIT to the postmaster): every backend is ended at once, nothing is
// checkpointed, and the next start recovers from the WAL, as after a crash.
func (c *pgCluster) stopImmediate() {
	if c.cmd == nil {
		return
	}
	select {
	case <-c.exited:
		return
	default:
	}
	c.cmd.Process.Signal(syscall.SIGQUIT)
	select {
	case <-c.exited:
	case <-time.After(30 * time.Second):
		c.cmd.Process.Kill()
		<-c.exited
	}
}

// freePort returns a loopback TCP port that was free a moment ago.
func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}
