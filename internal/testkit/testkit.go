// Package testkit is what the tests of several packages share: waits that poll
// with a deadline, loopback listeners stopped when the test ends, a gate
// that holds a race test's attempts until all have arrived, and a clock the
// test moves.
//
// A wait here always ends. When what it waits for never comes, it fails the
// test with what was awaited (and the last value seen) instead of hanging until
// go test's global timeout kills the run with a dump of every goroutine. Its
// deadline bounds a hang; it is never a timed assertion: a loaded machine only
// makes a passing test slower, and a test never asserts how soon something
// happened.
//
// Only tests import testkit (_test.go files, and the test helper packages
// whose names end in "test"); it imports the standard library alone, so a
// helper package that uses it adds nothing to a build. TestOnlyTestsImport
// keeps it so.
package testkit

import (
	"context"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// Patience is how long WaitFor, Await and Receive wait before they fail the
// test: long enough that only a hang reaches it, even on a loaded machine.
const Patience = time.Minute

// maxPause is the longest pause between two looks of a poll.
const maxPause = 20 * time.Millisecond

// Eventually polls cond until it holds or d has passed, and reports whether it
// held; cond is asked once more at the deadline. It looks often at first
// (every millisecond) and less as the wait grows (at most every 20 ms), so a
// quick condition is seen at once and a slow one costs little. It does not
// fail the test: it is for goroutines other than the test's (which may not
// call t.Fatal) and for callers that must clean up before they fail.
func Eventually(d time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(d)
	pause := time.Millisecond
	for !cond() {
		if time.Now().After(deadline) {
			return cond()
		}
		time.Sleep(pause)
		pause = min(2*pause, maxPause)
	}
	return true
}

// EventuallyEvery is Eventually with a steady pause of every between looks,
// for a condition that must be sampled on a beat (a peak that passes, a
// counter that falls back) rather than caught once it holds.
func EventuallyEvery(d, every time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			return cond()
		}
		time.Sleep(every)
	}
	return true
}

// WaitFor polls cond until it holds, and fails t (t.Fatalf: call it on the
// test's goroutine) when Patience has passed first, naming what it waited for.
func WaitFor(t testing.TB, what string, cond func() bool) {
	t.Helper()
	if !Eventually(Patience, cond) {
		t.Fatalf("gave up after %v waiting for %s", Patience, what)
	}
}

// Await polls probe until it reports ok, and returns the value it reported
// then. When Patience has passed first it fails t, naming what it waited for
// and the last value probe returned.
func Await[T any](t testing.TB, what string, probe func() (T, bool)) T {
	t.Helper()
	return AwaitWithin(t, Patience, what, probe)
}

// AwaitWithin is Await with a deadline of d instead of Patience, for waits
// that are long by nature (a process restarted, a database brought back).
func AwaitWithin[T any](t testing.TB, d time.Duration, what string, probe func() (T, bool)) T {
	t.Helper()
	var last T
	if Eventually(d, func() bool {
		v, ok := probe()
		last = v
		return ok
	}) {
		return last
	}
	t.Fatalf("gave up after %v waiting for %s; last seen: %s", d, what, describe(last))
	return last
}

// describe prints a value for a failure message: its String method if it has
// one, else %+v.
func describe(v any) string {
	if s, ok := v.(fmt.Stringer); ok {
		return s.String()
	}
	return fmt.Sprintf("%+v", v)
}

// Receive waits for a value on ch, or for ch to be closed (then it returns the
// zero value), and fails t when Patience has passed first, naming what it
// waited for.
func Receive[T any](t testing.TB, what string, ch <-chan T) T {
	t.Helper()
	timer := time.NewTimer(Patience)
	defer timer.Stop()
	select {
	case v := <-ch:
		return v
	case <-timer.C:
		t.Fatalf("gave up after %v waiting for %s", Patience, what)
	}
	var zero T
	return zero
}

// Gate holds the attempts of a race test at the point where they are
// evaluated until the test opens it, so that every attempt can have arrived
// before any is answered: the race a limit checked before it is charged
// loses. The code under test calls Arrive when an attempt comes in and Hold
// just before it is evaluated, from any goroutine.
type Gate struct {
	arrived, held atomic.Int32
	open          chan struct{}
	once          sync.Once
}

// NewGate returns a closed gate. It is opened when t ends, if the test has
// not opened it, so that the attempts a failed test left held do not keep
// the server under test from shutting down.
func NewGate(t testing.TB) *Gate {
	g := &Gate{open: make(chan struct{})}
	t.Cleanup(g.Open)
	return g
}

// Arrive counts an attempt that has come in.
func (g *Gate) Arrive() { g.arrived.Add(1) }

// Hold counts an attempt about to be evaluated, and blocks it until the gate
// is open.
func (g *Gate) Hold() {
	g.held.Add(1)
	<-g.open
}

// Open lets the held attempts, and every later one, through; opening an open
// gate does nothing.
func (g *Gate) Open() { g.once.Do(func() { close(g.open) }) }

// Held is how many attempts have reached Hold.
func (g *Gate) Held() int { return int(g.held.Load()) }

// GateCounts is what a gate has seen: the attempts that arrived, and those
// held for evaluation.
type GateCounts struct{ Arrived, Held int }

// Await waits until cond holds for the gate's counts, and fails t when
// Patience has passed first, naming what it waited for and the last counts.
func (g *Gate) Await(t testing.TB, what string, cond func(GateCounts) bool) {
	t.Helper()
	Await(t, what, func() (GateCounts, bool) {
		c := GateCounts{Arrived: int(g.arrived.Load()), Held: int(g.held.Load())}
		return c, cond(c)
	})
}

// Serving is a server started by Serve: its listeners' addresses, and what its
// Serve calls returned.
type Serving struct {
	// Addrs holds one 127.0.0.1 address per serve function given to Serve, in
	// their order.
	Addrs []string

	results chan error
	once    sync.Once
	err     error
}

// Serve listens on 127.0.0.1:0 once per serve function and runs each on its
// listener in a goroutine. When t ends, shutdown is called once (with a
// context of Patience) and every serve function must return; an error from
// either fails t. A server with several listeners (plain and implicit TLS)
// gives one serve function per listener.
func Serve(t testing.TB, shutdown func(context.Context) error, serves ...func(net.Listener) error) *Serving {
	t.Helper()
	s := &Serving{results: make(chan error, len(serves))}
	for _, serve := range serves {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatalf("listen on 127.0.0.1: %v", err)
		}
		s.Addrs = append(s.Addrs, l.Addr().String())
		go func() { s.results <- serve(l) }()
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), Patience)
		defer cancel()
		if err := shutdown(ctx); err != nil {
			t.Errorf("shut the server on %v down: %v", s.Addrs, err)
		}
		if err := s.Wait(); err != nil {
			t.Errorf("serve on %v: %v", s.Addrs, err)
		}
	})
	return s
}

// Wait waits for every serve function to return (once the server is shut
// down) and returns the first error one returned; a serve function still
// running after Patience is an error too. Later calls return the same.
func (s *Serving) Wait() error {
	s.once.Do(func() {
		timer := time.NewTimer(Patience)
		defer timer.Stop()
		for range cap(s.results) {
			select {
			case err := <-s.results:
				if s.err == nil {
					s.err = err
				}
			case <-timer.C:
				if s.err == nil {
					s.err = fmt.Errorf("still serving %v after the shutdown", Patience)
				}
				return
			}
		}
	})
	return s.err
}

// Clock is a time that moves only when the test moves it, for the services
// that take their clock as a func() time.Time (give them c.Now). It is safe
// for use by the service's goroutines while the test moves it.
type Clock struct {
	mu  sync.Mutex
	now time.Time
}

// NewClock returns a clock stopped at now.
func NewClock(now time.Time) *Clock { return &Clock{now: now} }

// Now is the clock's time.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// Set puts the clock at now.
func (c *Clock) Set(now time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = now
}

// Add moves the clock on by d.
func (c *Clock) Add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}
