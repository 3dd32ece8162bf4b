// Package limit bounds how fast one client may use the service: a token bucket
// per key (an API key's id, a client's address), shared by the HTTP API's
// request limits and the SMTP listener's throttling of failed AUTH.
//
// A bucket holds up to Burst tokens and gains Rate tokens a second; a request
// takes one, and a client whose bucket is empty is told how long until the
// next token. A full bucket is the same as no bucket, so buckets that have
// refilled are dropped: memory grows with the clients active in the last few
// seconds, not with every client ever seen, and a hard cap bounds it even
// under a flood of new keys.
package limit

import (
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

	rate  float64 // tokens gained per second
	burst float64 // tokens a bucket holds at most

	mu    sync.Mutex
	m     map[string]bucket
	swept time.Time
}

// bucket is one key's tokens as of at.
type bucket struct {
	tokens float64
	at     time.Time
}

// New returns buckets that gain perSecond tokens a second, up to burst (at
// least 1). perSecond <= 0 means no limit: New returns nil.
func New(perSecond float64, burst int) *Buckets {
	if perSecond <= 0 || math.IsNaN(perSecond) || math.IsInf(perSecond, 0) {
		return nil
	}
	return &Buckets{rate: perSecond, burst: float64(max(burst, 1)), m: map[string]bucket{}}
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

// Ready reports whether key's bucket holds a token, without taking it, and
// when it does not, the time until it will. A caller that spends tokens only
// on failures (failed authentication) asks Ready first and Takes on failure.
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
	bk, found := b.m[key]
	if !found {
		if !take {
			return 0, true // a key without a bucket has a full one
		}
		b.makeRoom(now)
		bk = bucket{tokens: b.burst, at: now}
	} else if d := now.Sub(bk.at); d > 0 {
		bk.tokens = min(b.burst, bk.tokens+d.Seconds()*b.rate)
		bk.at = now
	}
	if bk.tokens < 1 {
		return time.Duration((1 - bk.tokens) / b.rate * float64(time.Second)), false
	}
	if take {
		bk.tokens--
		b.m[key] = bk
	}
	return 0, true
}

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
		if bk.tokens+now.Sub(bk.at).Seconds()*b.rate >= b.burst {
			delete(b.m, k)
		}
	}
	if len(b.m) < limit {
		return
	}
	keep := limit * 3 / 4
	for k := range b.m {
		if len(b.m) <= keep {
			break
		}
		delete(b.m, k)
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
