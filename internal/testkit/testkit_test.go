package testkit

import (
	"context"
	"errors"
	"fmt"
	"go/parser"
	"go/token"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// recorder is a testing.TB that records failures instead of reporting them;
// Fatalf ends the goroutine as the real one does.
type recorder struct {
	testing.TB
	mu       sync.Mutex
	failures []string
	cleanups []func()
}

func (r *recorder) Helper() {}
func (r *recorder) Errorf(format string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.failures = append(r.failures, fmt.Sprintf(format, args...))
}
func (r *recorder) Fatalf(format string, args ...any) {
	r.Errorf(format, args...)
	runtime.Goexit()
}
func (r *recorder) Cleanup(f func()) { r.cleanups = append(r.cleanups, f) }

// run calls fn with r on a goroutine of its own (Fatalf ends it), then r's
// cleanups, and returns the failures.
func (r *recorder) run(fn func(testing.TB)) []string {
	done := make(chan struct{})
	go func() {
		defer close(done)
		fn(r)
	}()
	<-done
	for i := len(r.cleanups) - 1; i >= 0; i-- {
		r.cleanups[i]()
	}
	return r.failures
}

func TestEventually(t *testing.T) {
	var n atomic.Int32
	if !Eventually(time.Minute, func() bool { return n.Add(1) >= 5 }) {
		t.Fatal("a condition that comes true was given up on")
	}
	if n.Load() != 5 {
		t.Fatalf("cond asked %d times, want 5 (none after it held)", n.Load())
	}
	if Eventually(10*time.Millisecond, func() bool { return false }) {
		t.Fatal("a condition that never holds was reported held")
	}
}

func TestEventuallyEvery(t *testing.T) {
	var looks []time.Time
	if !EventuallyEvery(time.Minute, 5*time.Millisecond, func() bool { looks = append(looks, time.Now()); return len(looks) == 4 }) {
		t.Fatal("a condition that comes true was given up on")
	}
	for i := 1; i < len(looks); i++ {
		if gap := looks[i].Sub(looks[i-1]); gap < 5*time.Millisecond {
			t.Errorf("look %d came %v after the one before, want 5ms or more", i+1, gap)
		}
	}
	if EventuallyEvery(10*time.Millisecond, time.Millisecond, func() bool { return false }) {
		t.Fatal("a condition that never holds was reported held")
	}
}

func TestWaitFor(t *testing.T) {
	var n atomic.Int32
	WaitFor(t, "the third look", func() bool { return n.Add(1) == 3 })
	if n.Load() != 3 {
		t.Fatalf("cond asked %d times, want 3", n.Load())
	}
}

// Await returns the value that satisfied it, and a wait that never ends fails
// the test naming what it awaited and the last value seen.
func TestAwait(t *testing.T) {
	var n atomic.Int32
	if got := Await(t, "four", func() (int32, bool) { v := n.Add(1); return v, v == 4 }); got != 4 {
		t.Fatalf("Await = %d, want 4", got)
	}
	r := &recorder{}
	failures := r.run(func(tb testing.TB) {
		AwaitWithin(tb, 20*time.Millisecond, "the report to complete", func() (string, bool) { return "pending", false })
		tb.Errorf("AwaitWithin returned after its deadline")
	})
	if len(failures) != 1 || !strings.Contains(failures[0], "the report to complete") || !strings.Contains(failures[0], "last seen: pending") {
		t.Fatalf("failures %q; want one naming the wait and its last value", failures)
	}
}

func TestReceive(t *testing.T) {
	ch := make(chan int, 1)
	go func() { ch <- 7 }()
	if got := Receive(t, "seven", ch); got != 7 {
		t.Fatalf("Receive = %d, want 7", got)
	}
	closed := make(chan int)
	close(closed)
	if got := Receive(t, "a closed channel", closed); got != 0 {
		t.Fatalf("Receive on a closed channel = %d, want 0", got)
	}
}

// A gate holds every attempt until it is opened, and is opened when the test
// ends if the test did not open it.
func TestGate(t *testing.T) {
	r := &recorder{}
	var g *Gate
	passed := make(chan struct{}, 3)
	failures := r.run(func(tb testing.TB) {
		g = NewGate(tb)
		for range 3 {
			go func() {
				g.Arrive()
				g.Hold()
				passed <- struct{}{}
			}()
		}
		g.Await(tb, "three attempts held", func(c GateCounts) bool { return c.Arrived == 3 && c.Held == 3 })
		select {
		case <-passed:
			tb.Errorf("an attempt passed a closed gate")
		default:
		}
	})
	if len(failures) != 0 {
		t.Fatalf("failures %q", failures)
	}
	for i := range 3 {
		Receive(t, fmt.Sprintf("held attempt %d let through when the test ended", i+1), passed)
	}
	g.Open() // opening an open gate does nothing
	g.Arrive()
	g.Hold()
	if g.Held() != 4 {
		t.Fatalf("Held = %d, want 4", g.Held())
	}
}

// fakeServer accepts connections until it is shut down, greeting each.
type fakeServer struct {
	mu        sync.Mutex
	listeners []net.Listener
	closed    bool // Shutdown ran: a listener Serve is given later is closed at once
	serveErr  error
}

func (s *fakeServer) Serve(l net.Listener) error {
	s.mu.Lock()
	s.listeners = append(s.listeners, l)
	if s.closed {
		// Shut down before this goroutine ran, as a real server's Shutdown
		// must also stop a Serve that has not started accepting yet.
		l.Close()
	}
	s.mu.Unlock()
	for {
		c, err := l.Accept()
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return s.serveErr
			}
			return err
		}
		c.Write([]byte("hello\n"))
		c.Close()
	}
}

func (s *fakeServer) Shutdown(context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closed = true
	for _, l := range s.listeners {
		l.Close()
	}
	return nil
}

// Serve starts every listener on loopback and stops them when the test ends;
// a Serve that fails fails the test.
func TestServe(t *testing.T) {
	srv := &fakeServer{}
	r := &recorder{}
	var addrs []string
	failures := r.run(func(tb testing.TB) {
		s := Serve(tb, srv.Shutdown, srv.Serve, srv.Serve)
		addrs = s.Addrs
		for _, a := range s.Addrs {
			host, _, _ := net.SplitHostPort(a)
			if host != "127.0.0.1" {
				tb.Errorf("listening on %s, want 127.0.0.1", a)
			}
			c, err := net.Dial("tcp", a)
			if err != nil {
				tb.Fatalf("dial %s: %v", a, err)
			}
			c.Close()
		}
	})
	if len(failures) != 0 || len(addrs) != 2 {
		t.Fatalf("failures %q, addresses %v; want none and two", failures, addrs)
	}
	for _, a := range addrs {
		if c, err := net.Dial("tcp", a); err == nil {
			c.Close()
			t.Errorf("%s still accepts after the test ended", a)
		}
	}

	broken := &fakeServer{serveErr: errors.New("listener lost")}
	r = &recorder{}
	failures = r.run(func(tb testing.TB) { Serve(tb, broken.Shutdown, broken.Serve) })
	if len(failures) != 1 || !strings.Contains(failures[0], "listener lost") {
		t.Fatalf("failures %q; want the Serve error", failures)
	}
}

// Only tests import testkit: _test.go files and the test helper packages
// (directories named ...test); and testkit imports the standard library only,
// so it adds nothing to what a build links.
func TestOnlyTestsImport(t *testing.T) {
	const self = "github.com/catchbox/catchbox/internal/testkit"
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "go.mod")); err != nil {
		t.Fatalf("module root not found from the package directory: %v", err)
	}
	fset := token.NewFileSet()
	checked := 0
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if name := d.Name(); path != root && (strings.HasPrefix(name, ".") || name == "node_modules" || name == "testdata") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.ImportsOnly)
		if err != nil {
			return err
		}
		checked++
		dir := filepath.Dir(path)
		for _, imp := range f.Imports {
			p, _ := strconv.Unquote(imp.Path.Value)
			if dir == filepath.Join(root, "internal", "testkit") {
				if first, _, _ := strings.Cut(p, "/"); strings.Contains(first, ".") {
					t.Errorf("%s imports %s: testkit imports the standard library only", path, p)
				}
				continue
			}
			if p == self && !strings.HasSuffix(filepath.Base(dir), "test") {
				t.Errorf("%s imports testkit outside a test", path)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if checked < 100 {
		t.Fatalf("only %d Go files checked: the walk missed the module", checked)
	}
}

func TestClock(t *testing.T) {
	at := time.Date(2026, 11, 28, 9, 0, 0, 0, time.UTC)
	c := NewClock(at)
	if got := c.Now(); !got.Equal(at) {
		t.Fatalf("Now = %v, want %v", got, at)
	}
	done := make(chan struct{})
	go func() { // the service's goroutines read it while the test moves it
		defer close(done)
		for range 100 {
			c.Now()
		}
	}()
	c.Add(90 * time.Second)
	<-done
	if got := c.Now(); !got.Equal(at.Add(90 * time.Second)) {
		t.Fatalf("after Add: %v", got)
	}
	c.Set(at)
	if got := c.Now(); !got.Equal(at) {
		t.Fatalf("after Set: %v", got)
	}
}
