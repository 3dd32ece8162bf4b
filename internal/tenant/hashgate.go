package tenant

import (
	"context"
	"errors"
	"runtime"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"
)

// ErrBusy is returned when a password could not be hashed because too many
// hashes were waiting already, or the wait for one ran out: the server is
// busy, the attempt was not evaluated, and the client may retry after
// BusyRetry (the dashboard answers 503 with Retry-After).
var ErrBusy = errors.New("too many password checks at once; try again shortly")

// BusyRetry is the Retry-After of an ErrBusy refusal.
const BusyRetry = 2 * time.Second

// Bounds of the password hashes of the process: each argon2id hash holds
// argonMemory (19 MiB) for its length, so memory follows the hashes running,
// not the sign-ins in flight. Two run at once (about 40 MiB; a hash takes
// some 50 to 60 ms of one core, so two cores check some 30 a second); up to
// 256 more wait, each at most 10 s, which covers a burst of a hundred at once
// on an idle machine. Past either bound the attempt is ErrBusy.
const (
	hashSlots    = 2
	hashQueue    = 256
	hashWait     = 10 * time.Second
	hashGiveBack = time.Second // idle this long after a burst, the memory goes back to the system
)

// hashes is the process's gate; the memory it bounds is the process's.
var hashes = newHashGate(hashSlots, hashQueue, hashWait)

// hashGate is a semaphore of password hashes with a bounded queue whose
// waiters give up after a deadline. Each hash's memory is collected before its
// slot is free, and once no hash has run for hashGiveBack after a burst, the
// heap the hashes used is returned to the system: Go's collector would
// otherwise keep the burst's peak for minutes (docs/benchmarks.md).
type hashGate struct {
	slots   chan struct{}
	waiting atomic.Int32
	queue   int32
	wait    time.Duration

	peak    atomic.Int32 // most hashes seen running at once (tests)
	running atomic.Int32

	mu       sync.Mutex
	giveBack *time.Timer
}

func newHashGate(slots, queue int, wait time.Duration) *hashGate {
	return &hashGate{slots: make(chan struct{}, slots), queue: int32(queue), wait: wait}
}

// do runs fn once a slot is free: at once, or after waiting in the queue;
// ErrBusy when the queue is full or the wait runs out, ctx's error when the
// caller leaves.
func (g *hashGate) do(ctx context.Context, fn func()) error {
	select {
	case g.slots <- struct{}{}:
	default:
		if g.waiting.Add(1) > g.queue {
			g.waiting.Add(-1)
			return ErrBusy
		}
		t := time.NewTimer(g.wait)
		select {
		case g.slots <- struct{}{}:
			g.waiting.Add(-1)
			t.Stop()
		case <-t.C:
			g.waiting.Add(-1)
			return ErrBusy
		case <-ctx.Done():
			g.waiting.Add(-1)
			t.Stop()
			return ctx.Err()
		}
	}
	n := g.running.Add(1)
	defer g.release()
	for p := g.peak.Load(); n > p && !g.peak.CompareAndSwap(p, n); p = g.peak.Load() {
	}
	fn()
	// The hash's 19 MiB are garbage now. Collected before the slot is
	// free, they are what the next hash allocates again, and the heap
	// stays near the hashes' slots; left to the collector's pace they would
	// pile up to twice the heap before it ran.
	runtime.GC()
	return nil
}

func (g *hashGate) release() {
	g.running.Add(-1)
	<-g.slots
	if len(g.slots) > 0 || g.waiting.Load() > 0 {
		return
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.giveBack == nil {
		g.giveBack = time.AfterFunc(hashGiveBack, g.returnMemory)
	} else {
		g.giveBack.Reset(hashGiveBack)
	}
}

// returnMemory gives the heap freed by the burst's hashes back to the system,
// unless hashes run again.
func (g *hashGate) returnMemory() {
	if len(g.slots) == 0 && g.waiting.Load() == 0 {
		debug.FreeOSMemory()
	}
}
