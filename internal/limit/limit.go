// Package limit bounds how fast one client may use the service: a token bucket
// per key (an API key's id, a client's address), shared by the HTTP API's
// request limits, the throttling of API-key and dashboard sign-in attempts and
// the SMTP listener's throttling of AUTH.
//
// A bucket holds up to Burst tokens and gains Rate tokens a second; a request
// takes one, and a client whose bucket is empty is told how long until the
// next token. A full bucket is the same as no bucket, so buckets that have
// refilled are dropped: memory grows with the clients active in the last few
// seconds, not with every client ever seen, and a hard cap bounds it even
// under a flood of new keys.
//
// Attempts at credentials are charged before they are evaluated (Charge), and
// the charge is given back when the credentials were right (Charge.Refund):
// however many attempts arrive at once, no more are evaluated than the bucket
// holds. Buckets keeps its buckets in the process; Shared keeps them in the
// store, where every replica charges the same ones.
package limit

import (
	"context"
	"math"
	"net/netip"
	"sync"
	"time"
)

// DefaultMaxKeys is how many buckets a Buckets holds at most. At the cap, a new
// key first sweeps away the full buckets, then, if that freed too little,
// drops a quarter of the rest (those keys start afresh, with a full bucket):
// memory stays bounded, at the price of forgiving some clients during a flood
// of more distinct keys than this.
const DefaultMaxKeys = 100_000

// sweepInterval is how often buckets that have refilled are dropped.
const sweepInterval = 10 * time.Second

// Buckets is a set of token buckets of one rate and burst, one per key. It is
// safe for concurrent use. A nil *Buckets limits nothing: every call succeeds.
type Buckets struct {
	// Now is the clock. A test sets it before the first call; nil is time.Now.
	Now func() time.Time
	// MaxKeys bounds the buckets held; 0 is DefaultMaxKeys. Set before use.
	MaxKeys int
	// Wait is how long Charge waits, when a bucket is empty, for attempts
	// charged to it and still being evaluated: one that turns out right gives
	// its token back to the waiter. 0: an empty bucket refuses at once. Set
	// before use.
	Wait time.Duration

	rate  float64 // tokens gained per second
	burst float64 // tokens a bucket holds at most

	mu    sync.Mutex
	m     map[string]*bucket
	swept time.Time
}

// bucket is one key's tokens as of at, and the charges of attempts still
// being evaluated (pending), whose end is announced by closing wake.
type bucket struct {
	tokens  float64
	at      time.Time
	pending int
	wake    chan struct{}
}

// New returns buckets that gain perSecond tokens a second, up to burst (at
// least 1). perSecond <= 0 means no limit: New returns nil.
func New(perSecond float64, burst int) *Buckets {
	if perSecond <= 0 || math.IsNaN(perSecond) || math.IsInf(perSecond, 0) {
		return nil
	}
	return &Buckets{rate: perSecond, burst: float64(max(burst, 1)), m: map[string]*bucket{}}
}

func (b *Buckets) now() time.Time {
	if b.Now != nil {
		return b.Now()
	}
	return time.Now()
}

// Take takes a token from key's bucket. When the bucket is empty it takes
// nothing and returns false with the time until a token is there.
func (b *Buckets) Take(key string) (retry time.Duration, ok bool) {
	return b.use(key, true)
}

// Ready reports whether key's bucket holds a token, or charges that may yet
// be refunded, without taking anything; when it does not, it tells the time
// until a token is there. It lets a caller refuse early what Charge would
// refuse anyway.
func (b *Buckets) Ready(key string) (retry time.Duration, ok bool) {
	return b.use(key, false)
}

func (b *Buckets) use(key string, take bool) (time.Duration, bool) {
	if b == nil {
		return 0, true
	}
	now := b.now()
	b.mu.Lock()
	defer b.mu.Unlock()
	bk := b.m[key]
	if bk == nil {
		if !take {
			return 0, true // a key without a bucket has a full one
		}
		b.makeRoom(now)
		bk = &bucket{tokens: b.burst, at: now}
		b.m[key] = bk
	}
	b.refill(bk, now)
	if bk.tokens < 1 {
		if !take && bk.pending > 0 {
			return 0, true
		}
		return b.untilToken(bk), false
	}
	if take {
		bk.tokens--
	}
	return 0, true
}

// refill adds the tokens gained since the bucket was last seen.
func (b *Buckets) refill(bk *bucket, now time.Time) {
	if d := now.Sub(bk.at); d > 0 {
		bk.tokens = min(b.burst, bk.tokens+d.Seconds()*b.rate)
		bk.at = now
	}
}

// untilToken is the time until an empty bucket holds a whole token.
func (b *Buckets) untilToken(bk *bucket) time.Duration {
	return time.Duration((1 - bk.tokens) / b.rate * float64(time.Second))
}

// Charge takes a token from key's bucket for an attempt about to be
// evaluated, and returns the charge, which the caller ends with Refund when
// the attempt succeeded and Settle in every case (a deferred Settle). When the
// bucket is empty it waits up to b.Wait (and while ctx lasts) for a pending
// charge to be refunded; then, or at once, it returns a *Refused error with
// the time until the next token. A nil *Buckets charges nothing.
func (b *Buckets) Charge(ctx context.Context, key string) (*Charge, error) {
	if b == nil {
		return nil, nil
	}
	var timer *time.Timer
	for {
		now := b.now()
		b.mu.Lock()
		bk := b.m[key]
		if bk == nil {
			b.makeRoom(now)
			bk = &bucket{tokens: b.burst, at: now}
			b.m[key] = bk
		}
		b.refill(bk, now)
		if bk.tokens >= 1 {
			bk.tokens--
			bk.pending++
			b.mu.Unlock()
			if timer != nil {
				timer.Stop()
			}
			return &Charge{settle: func(refund bool) { b.settle(key, refund) }}, nil
		}
		retry := b.untilToken(bk)
		if bk.pending == 0 || b.Wait <= 0 {
			b.mu.Unlock()
			return nil, &Refused{Retry: retry}
		}
		if bk.wake == nil {
			bk.wake = make(chan struct{})
		}
		wake := bk.wake
		b.mu.Unlock()
		if timer == nil {
			timer = time.NewTimer(b.Wait)
			defer timer.Stop()
		}
		select {
		case <-wake:
		case <-timer.C:
			return nil, &Refused{Retry: retry}
		case <-ctx.Done():
			return nil, &Refused{Retry: retry}
		}
	}
}

// settle ends a pending charge of key, giving its token back on a refund, and
// wakes the attempts waiting for the bucket.
func (b *Buckets) settle(key string, refund bool) {
	now := b.now()
	b.mu.Lock()
	defer b.mu.Unlock()
	bk := b.m[key]
	if bk == nil {
		return
	}
	b.refill(bk, now)
	bk.pending--
	if refund {
		bk.tokens = min(b.burst, bk.tokens+1)
	}
	if bk.wake != nil {
		close(bk.wake)
		bk.wake = nil
	}
}

// Charge is the token an attempt took before it was evaluated. One goroutine
// uses it; a nil *Charge (nothing was charged) is a valid one.
type Charge struct {
	settle func(refund bool)
	done   bool
}

// Refund gives the token back: the attempt succeeded, and a success costs
// nothing. It ends the charge.
func (c *Charge) Refund() { c.end(true) }

// Settle ends the charge; unless it was refunded, its token stays spent.
// Calling it again, or after Refund, does nothing.
func (c *Charge) Settle() { c.end(false) }

func (c *Charge) end(refund bool) {
	if c == nil || c.done {
		return
	}
	c.done = true
	if c.settle != nil {
		c.settle(refund)
	}
}

// Refused is the error of a charge that found no token: Retry is the time
// until the bucket holds one again.
type Refused struct{ Retry time.Duration }

func (e *Refused) Error() string { return "limit reached" }

// makeRoom is called before a new key is added: every sweepInterval, and
// whenever the cap is reached, the buckets that have refilled are dropped;
// at the cap with too few of those, a quarter of the others go too.
func (b *Buckets) makeRoom(now time.Time) {
	limit := b.MaxKeys
	if limit <= 0 {
		limit = DefaultMaxKeys
	}
	if len(b.m) < limit && now.Sub(b.swept) < sweepInterval {
		return
	}
	b.swept = now
	for k, bk := range b.m {
		if bk.pending == 0 && bk.tokens+now.Sub(bk.at).Seconds()*b.rate >= b.burst {
			delete(b.m, k)
		}
	}
	if len(b.m) < limit {
		return
	}
	// A bucket with charges pending stays: its charges end in it.
	keep := limit * 3 / 4
	for k, bk := range b.m {
		if len(b.m) <= keep {
			break
		}
		if bk.pending == 0 {
			delete(b.m, k)
		}
	}
}

// Len is the number of buckets held (for tests and metrics).
func (b *Buckets) Len() int {
	if b == nil {
		return 0
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.m)
}

// RetryAfter is d as the value of a Retry-After header or a reply's text:
// whole seconds, rounded up, at least 1 (RFC 9110 section 10.2.3).
func RetryAfter(d time.Duration) int {
	return max(1, int(math.Ceil(d.Seconds())))
}

// AddrKey is the key of a client address: the address itself for IPv4, its
// /64 network for IPv6, since one host usually holds a whole /64 and could
// otherwise take a fresh bucket with every request. An IPv4 address written
// in IPv6 form counts as IPv4.
func AddrKey(a netip.Addr) string {
	a = a.Unmap()
	if a.Is6() {
		p, _ := a.Prefix(64)
		return p.String()
	}
	return a.String()
}

type chargeKey struct{}

// WithCharge returns ctx carrying c, the charge of the attempt the request
// makes, for the code that evaluates it to Refund.
func WithCharge(ctx context.Context, c *Charge) context.Context {
	return context.WithValue(ctx, chargeKey{}, c)
}

// Refund gives back the charge ctx carries (WithCharge), if any: the
// attempt's credentials were right.
func Refund(ctx context.Context) {
	if c, ok := ctx.Value(chargeKey{}).(*Charge); ok {
		c.Refund()
	}
}
