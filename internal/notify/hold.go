package notify

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"runtime/debug"
	"time"

	"github.com/catchbox/catchbox/internal/metrics"
)

// RecheckInterval is how often a held request re-checks while wake-ups are
// degraded (Policy.Degraded reports true).
const RecheckInterval = 250 * time.Millisecond

// ErrHoldEnded is returned by Until when the hold ran out with no match; the
// caller answers 307 to the same URL and the client asks again.
var ErrHoldEnded = errors.New("hold ended without a match")

// Policy is how long a request is held and when it re-checks on its own.
type Policy struct {
	Hold time.Duration
	// Degraded, when set, is asked every RecheckInterval; while it reports true
	// (cross-replica wake-ups may be lost) the request re-checks without waiting
	// for a wake-up.
	Degraded func() bool
}

// Until answers a request that waits for something to arrive (an inbox or SMS
// search with wait=true). It subscribes to what w describes before the first
// look, so an arrival between the look and the wait is never missed, then
// looks again on every wake-up until look reports a match, the hold ends
// (ErrHoldEnded) or ctx ends. w's terms must hold on every arrival look could
// find (match.go): the request is woken only by those. An error from the
// first look is returned; a failing re-check (the database restarting, say)
// counts as "not yet" and the hold goes on.
func Until[T any](ctx context.Context, n Notifier, w Want, p Policy, look func(context.Context) (T, bool, error)) (T, error) {
	sub := n.Watch(w)
	defer sub.Close()
	look = apart(look)
	res, ok, err := look(ctx)
	if err != nil || ok {
		return res, err
	}
	drain, _ := ctx.Value(drainKey{}).(<-chan struct{})
	done := metrics.HoldStarted()
	ended := "gone"
	defer func() { done(ended) }()
	timer := time.NewTimer(p.Hold)
	defer timer.Stop()
	var recheck <-chan time.Time
	if p.Degraded != nil {
		t := time.NewTicker(RecheckInterval)
		defer t.Stop()
		recheck = t.C
	}
	var zero T
	for {
		select {
		case <-ctx.Done():
			return zero, ctx.Err()
		case <-timer.C:
			ended = "redirected"
			return zero, ErrHoldEnded
		case <-drain:
			// The server is stopping: the client asks again, of another
			// replica or of this one once restarted.
			ended = "redirected"
			return zero, ErrHoldEnded
		case <-sub.C:
		case <-recheck:
			if !p.Degraded() {
				continue
			}
		}
		woke := time.Now()
		res, ok, err := look(ctx)
		metrics.WakeUp(time.Since(woke))
		if err != nil {
			if ctx.Err() != nil {
				return zero, ctx.Err()
			}
			slog.Warn("Re-checking a held request failed; still holding", "topic", w.Topic, "err", err)
			continue
		}
		if ok {
			ended = "matched"
			return res, nil
		}
	}
}

type drainKey struct{}

// WithDrain returns ctx carrying the server's drain channel: when it closes
// (the server is shutting down), every request held in Until under ctx ends
// at once with ErrHoldEnded, i.e. its 307 to the same URL, instead of being
// cut when the server exits.
func WithDrain(ctx context.Context, drain <-chan struct{}) context.Context {
	return context.WithValue(ctx, drainKey{}, drain)
}

// Search runs a search that may wait (wait=true, contract section 4): without
// hold, look runs once and its result is the answer, match or not; with hold,
// the search is held as Until holds it, and a hold that ends without a match
// is ErrHoldEnded, which a listener answers by having the client ask again
// (notifyhttp.Answer: a 307 to the same URL).
func Search[T any](ctx context.Context, hold bool, n Notifier, want Want, p Policy, look func(context.Context) (T, bool, error)) (T, error) {
	if hold {
		return Until(ctx, n, want, p, look)
	}
	res, _, err := look(ctx)
	return res, err
}

// apart returns look run on a goroutine of its own each time. A held request
// waits on its own goroutine for as long as its hold, and a goroutine keeps
// the stack it once grew: a search through SQLite grows it to tens of
// kilobytes, which thousands of held requests would each keep (held waits'
// memory, docs/benchmarks.md). The look's goroutine ends with the look, and
// its stack with it. A panic in look is logged and returned as an error.
func apart[T any](look func(context.Context) (T, bool, error)) func(context.Context) (T, bool, error) {
	type result struct {
		res T
		ok  bool
		err error
	}
	return func(ctx context.Context) (T, bool, error) {
		c := make(chan result, 1)
		go func() {
			defer func() {
				if p := recover(); p != nil {
					slog.Error("Panic in a held request's look", "panic", fmt.Sprint(p), "stack", string(debug.Stack()))
					c <- result{err: fmt.Errorf("look panicked: %v", p)}
				}
			}()
			res, ok, err := look(ctx)
			c <- result{res, ok, err}
		}()
		r := <-c
		return r.res, r.ok, r.err
	}
}
