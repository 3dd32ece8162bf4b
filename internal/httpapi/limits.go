package httpapi

import (
	"errors"
	"net/http"
	"net/netip"
	"strconv"
	"strings"
	"time"

	"github.com/catchbox/catchbox/internal/config"
	"github.com/catchbox/catchbox/internal/httpx"
	"github.com/catchbox/catchbox/internal/limit"
	"github.com/catchbox/catchbox/internal/metrics"
	"github.com/catchbox/catchbox/internal/tenant"
)

// Limits are the request limits the route table's groups apply, answered 429
// with Retry-After and the contract's error body (contract section 4):
//
//   - requests with an API key, per key: the id tenant.RequireKey resolved,
//     never the raw header, so every spelling of one key shares a bucket and a
//     future principal (a dashboard user) gets a bucket by its own id;
//   - requests without a key (health, the OpenAPI document, signed downloads,
//     the provider webhook, unknown paths), per client address;
//   - API-key attempts, per client address, in a stricter bucket: a request
//     with a key is charged before the key is looked up, and the charge given
//     back once the key is found good, so that however many arrive at once no
//     more unknown keys are looked up than the bucket holds. Once an address
//     has used it up, every keyed request from it is 429 until a failure is
//     forgiven, a good key included, so that a guess that happens to be right
//     is not told apart from the wrong ones. A request that finds the bucket
//     empty while other requests' keys are being looked up waits for them (up
//     to authWait): a client sending many requests with its good key at once
//     is not refused for the moment their lookups overlap.
//
// A request takes its token when it arrives, so a wait=true request held for
// its whole hold counts once. The buckets live in the process: with several
// replicas each replica limits on its own (docs/operations.md). A nil *Limits
// limits nothing.
type Limits struct {
	key, addr, authFailures *limit.Buckets
	trusted                 []netip.Prefix
	// authArrived and authEvaluating, when a test sets them, are called as a
	// keyed request arrives, and once it is charged, just before its key is
	// looked up.
	authArrived, authEvaluating func()
}

// NewLimits returns the limits cfg sets; a rate of 0 turns that limit off.
func NewLimits(cfg config.Serve) (*Limits, error) {
	trusted, err := cfg.TrustedProxyPrefixes()
	if err != nil {
		return nil, err
	}
	return &Limits{
		key:          limit.New(cfg.RateLimitKey, cfg.RateLimitKeyBurst),
		addr:         limit.New(cfg.RateLimitIP, cfg.RateLimitIPBurst),
		authFailures: authBuckets(cfg.AuthFailureLimit, cfg.AuthFailureBurst),
		trusted:      trusted,
	}, nil
}

// authWait is how long a keyed request waits, when its address's attempts are
// all charged to requests whose keys are being looked up, for one of those to
// be found good and give its charge back.
const authWait = 5 * time.Second

func authBuckets(perSecond float64, burst int) *limit.Buckets {
	b := limit.New(perSecond, burst)
	if b != nil {
		b.Wait = authWait
	}
	return b
}

// SetClock sets the clock every bucket reads; a test calls it before the
// first request.
func (l *Limits) SetClock(now func() time.Time) {
	for _, b := range []*limit.Buckets{l.key, l.addr, l.authFailures} {
		if b != nil {
			b.Now = now
		}
	}
}

// byKey limits requests per API key id; it runs after tenant.RequireKey.
func (l *Limits) byKey(next http.Handler) http.Handler {
	if l == nil || l.key == nil {
		return next
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if retry, ok := l.key.Take(tenant.PrincipalFrom(r.Context()).ID()); !ok {
			tooMany(w, r, retry, "rate_limited", "too many requests with this API key")
			return
		}
		next.ServeHTTP(w, r)
	})
}

// byAddr limits requests that carry no API key, per client address.
func (l *Limits) byAddr(next http.Handler) http.Handler {
	if l == nil || l.addr == nil {
		return next
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if retry, ok := l.addr.Take(l.clientKey(r)); !ok {
			tooMany(w, r, retry, "rate_limited", "too many requests from this address")
			return
		}
		next.ServeHTTP(w, r)
	})
}

// guardAuth runs before tenant.RequireAPI: a request from an address that
// has used up its attempts is 429 before its key is looked at; a request with
// a key is charged one attempt before the key is looked up, and RequireAPI
// gives it back once the key is found good (limit.Refund). The charge of a
// request answered anything but 401 is given back too (the key was not
// evaluated: a store failure). A request without a key is no guess and is not
// charged.
func (l *Limits) guardAuth(next http.Handler) http.Handler {
	if l == nil || l.authFailures == nil {
		return next
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		addr := l.clientKey(r)
		if retry, ok := l.authFailures.Ready(addr); !ok {
			if r.Header.Get("X-Api-Key") != "" {
				metrics.Auth("api_key", "throttled")
			}
			tooMany(w, r, retry, "too_many_auth_failures", "too many failed API-key attempts from this address")
			return
		}
		if r.Header.Get("X-Api-Key") == "" {
			next.ServeHTTP(w, r)
			return
		}
		if l.authArrived != nil {
			l.authArrived()
		}
		c, err := l.authFailures.Charge(r.Context(), addr)
		var refused *limit.Refused
		if errors.As(err, &refused) {
			metrics.Auth("api_key", "throttled")
			tooMany(w, r, refused.Retry, "too_many_auth_failures", "too many failed API-key attempts from this address")
			return
		}
		sw := &statusWriter{ResponseWriter: w}
		defer func() {
			if sw.status == http.StatusUnauthorized {
				metrics.Auth("api_key", "failed")
			} else {
				metrics.Auth("api_key", "ok")
				c.Refund()
			}
			c.Settle()
		}()
		if l.authEvaluating != nil {
			l.authEvaluating()
		}
		next.ServeHTTP(sw, r.WithContext(limit.WithCharge(r.Context(), c)))
	})
}

// tooMany answers 429 with Retry-After in whole seconds (RFC 6585 section 4).
func tooMany(w http.ResponseWriter, r *http.Request, retry time.Duration, code, msg string) {
	secs := limit.RetryAfter(retry)
	w.Header().Set("Retry-After", strconv.Itoa(secs))
	httpx.WriteError(w, r, httpx.Errorf(http.StatusTooManyRequests, code, "%s; retry after %d s", msg, secs))
}

// clientKey is the bucket key of the request's client address (limit.AddrKey).
// ClientKey names the client of a request for per-address limits (the
// dashboard's sign-in throttle too): its address as clientAddr finds it.
func (l *Limits) ClientKey(r *http.Request) string {
	if l == nil {
		return r.RemoteAddr
	}
	return l.clientKey(r)
}

func (l *Limits) clientKey(r *http.Request) string {
	if a, ok := l.clientAddr(r); ok {
		return limit.AddrKey(a)
	}
	return r.RemoteAddr
}

// clientAddr is the address the request comes from: the connection's peer,
// unless that is a trusted proxy; then X-Forwarded-For is read from its right
// end, past every trusted proxy, and the first address that is not one is the
// client's. Entries left of it were written by the client itself and are
// never believed, nor is the header of a peer that is no trusted proxy.
func (l *Limits) clientAddr(r *http.Request) (netip.Addr, bool) {
	ap, err := netip.ParseAddrPort(r.RemoteAddr)
	if err != nil {
		return netip.Addr{}, false
	}
	client := ap.Addr().Unmap()
	if !l.isTrusted(client) {
		return client, true
	}
	hops := strings.Split(strings.Join(r.Header.Values("X-Forwarded-For"), ","), ",")
	for i := len(hops) - 1; i >= 0; i-- {
		a, err := netip.ParseAddr(strings.TrimSpace(hops[i]))
		if err != nil {
			break // a malformed entry: the last good hop is the client
		}
		client = a.Unmap()
		if !l.isTrusted(client) {
			break
		}
	}
	return client, true
}

func (l *Limits) isTrusted(a netip.Addr) bool {
	for _, p := range l.trusted {
		if p.Contains(a) {
			return true
		}
	}
	return false
}

// statusWriter records the status a handler answered.
type statusWriter struct {
	http.ResponseWriter
	status int
}

func (w *statusWriter) WriteHeader(status int) {
	if w.status == 0 {
		w.status = status
	}
	w.ResponseWriter.WriteHeader(status)
}

func (w *statusWriter) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	return w.ResponseWriter.Write(b)
}

// Unwrap lets http.ResponseController reach the connection's writer.
func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }
