package httpapi_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/getkin/kin-openapi/routers/legacy"

	"github.com/catchbox/catchbox/internal/config"
	"github.com/catchbox/catchbox/internal/httpapi"
	"github.com/catchbox/catchbox/internal/server"
	"github.com/catchbox/catchbox/internal/server/servertest"
	"github.com/catchbox/catchbox/internal/store"
	"github.com/catchbox/catchbox/internal/store/storetest"
	"github.com/catchbox/catchbox/internal/testkit"
)

// limitEnv is the service with low request limits, a clock the test moves,
// and HTTP clients that connect from distinct loopback addresses (Linux
// routes all of 127.0.0.0/8 to lo), so that per-address limits see distinct
// clients on one machine.
type limitEnv struct {
	t     *testing.T
	svc   *server.Service
	url   string
	clock *testkit.Clock
	mu    sync.Mutex
	from  map[string]*http.Client
}

func newLimitEnv(t *testing.T, db *store.DB, set func(*config.Serve)) *limitEnv {
	t.Helper()
	cfg := servertest.Config(t)
	set(&cfg)
	svc := servertest.New(t, db, cfg)
	clock := testkit.NewClock(time.Date(2026, 11, 22, 3, 23, 50, 0, time.UTC))
	svc.Limits.SetClock(clock.Now)
	srv := servertest.Serve(t, svc)
	return &limitEnv{t: t, svc: svc, url: srv.URL, clock: clock, from: map[string]*http.Client{}}
}

// client returns an HTTP client whose connections come from the local
// address ip; it does not follow redirects.
func (e *limitEnv) client(ip string) *http.Client {
	e.mu.Lock()
	defer e.mu.Unlock()
	if c, ok := e.from[ip]; ok {
		return c
	}
	d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(ip)}, Timeout: 10 * time.Second}
	tr := &http.Transport{DialContext: d.DialContext}
	e.t.Cleanup(tr.CloseIdleConnections)
	c := &http.Client{Transport: tr, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	e.from[ip] = c
	return c
}

// reply is what one request was answered.
type reply struct {
	status     int
	code       string
	retryAfter string
	requestID  string
	statusCode int // the body's statusCode
}

func (e *limitEnv) get(ip, key, path string) reply {
	e.t.Helper()
	req, err := http.NewRequest(http.MethodGet, e.url+path, nil)
	if err != nil {
		e.t.Fatal(err)
	}
	if key != "" {
		req.Header.Set("X-Api-Key", key)
	}
	resp, err := e.client(ip).Do(req)
	if err != nil {
		e.t.Fatalf("GET %s from %s: %v", path, ip, err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	r := reply{status: resp.StatusCode, retryAfter: resp.Header.Get("Retry-After"), requestID: resp.Header.Get("X-Request-Id")}
	if resp.StatusCode >= 400 {
		var eb struct {
			StatusCode int    `json:"statusCode"`
			Code       string `json:"code"`
		}
		if err := json.Unmarshal(body, &eb); err != nil {
			e.t.Fatalf("GET %s: error body is not JSON: %s", path, body)
		}
		r.code, r.statusCode = eb.Code, eb.StatusCode
	}
	return r
}

func (e *limitEnv) want(r reply, status int, code string) {
	e.t.Helper()
	if r.status != status || r.code != code {
		e.t.Fatalf("answered %d %q, want %d %q", r.status, r.code, status, code)
	}
	if status == http.StatusTooManyRequests {
		if r.retryAfter == "" || r.statusCode != 429 || r.requestID == "" {
			e.t.Fatalf("429 with Retry-After %q, statusCode %d, X-Request-Id %q", r.retryAfter, r.statusCode, r.requestID)
		}
	} else if r.retryAfter != "" {
		e.t.Fatalf("%d with Retry-After %q", r.status, r.retryAfter)
	}
}

// A key over its limit is answered 429 with Retry-After and the contract's
// error body, another key of the same organisation is not, and the key is
// served again once Retry-After has passed.
func TestKeyLimit(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		e := newLimitEnv(t, db, func(c *config.Serve) { c.RateLimitKey, c.RateLimitKeyBurst = 0.5, 3 })
		org, err := e.svc.Tenants.OrgByName(context.Background(), "default")
		if err != nil {
			t.Fatal(err)
		}
		_, other, err := e.svc.Tenants.CreateKey(context.Background(), org.ID, "second", "")
		if err != nil {
			t.Fatal(err)
		}
		key := e.svc.NewKey
		for i := 0; i < 3; i++ {
			e.want(e.get("127.0.0.1", key, "/api/test"), 200, "")
		}
		over := e.get("127.0.0.1", key, "/api/test")
		e.want(over, 429, "rate_limited")
		if over.retryAfter != "2" { // one token every 2 s
			t.Fatalf("Retry-After %q, want 2", over.retryAfter)
		}
		// The limit is the key's, wherever it comes from, and not the
		// organisation's: the other key is served.
		e.want(e.get("127.0.0.2", key, "/api/namespaces"), 429, "rate_limited")
		e.want(e.get("127.0.0.1", other, "/api/test"), 200, "")

		e.clock.Add(1999 * time.Millisecond)
		e.want(e.get("127.0.0.1", key, "/api/test"), 429, "rate_limited")
		e.clock.Add(time.Millisecond)
		e.want(e.get("127.0.0.1", key, "/api/test"), 200, "")
		e.want(e.get("127.0.0.1", key, "/api/test"), 429, "rate_limited")
	})
}

// A burst of refused keys from one address is slowed: past the burst every
// keyed request from it is 429, a good key's too, while a good key from
// another address is served and that address keeps its own allowance.
func TestAuthFailureLimit(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		e := newLimitEnv(t, db, func(c *config.Serve) { c.AuthFailureLimit, c.AuthFailureBurst = 1, 3 })
		const attacker, ci = "127.0.0.2", "127.0.0.1"
		for i := 0; i < 3; i++ {
			e.want(e.get(attacker, "cbx_wrong-key-"+string(rune('a'+i)), "/api/test"), 401, "invalid_api_key")
		}
		e.want(e.get(attacker, "cbx_wrong-key-d", "/api/test"), 429, "too_many_auth_failures")
		e.want(e.get(attacker, e.svc.NewKey, "/api/test"), 429, "too_many_auth_failures")

		e.want(e.get(ci, e.svc.NewKey, "/api/test"), 200, "")
		e.want(e.get(ci, "cbx_typo", "/api/test"), 401, "invalid_api_key")
		// A request without a key is no guess: it spends nothing.
		for i := 0; i < 5; i++ {
			e.want(e.get("127.0.0.3", "", "/api/test"), 401, "missing_api_key")
		}
		e.want(e.get("127.0.0.3", "cbx_wrong", "/api/test"), 401, "invalid_api_key")

		e.clock.Add(time.Second)
		e.want(e.get(attacker, e.svc.NewKey, "/api/test"), 200, "")
		e.want(e.get(attacker, "cbx_wrong-key-e", "/api/test"), 401, "invalid_api_key")
		e.want(e.get(attacker, "cbx_wrong-key-f", "/api/test"), 429, "too_many_auth_failures")
	})
}

// Requests without a key (health, downloads, the webhook, unknown paths) are
// limited per client address; keyed requests from that address are not.
func TestAddressLimit(t *testing.T) {
	db := storetest.Open(t, store.SQLite)
	e := newLimitEnv(t, db, func(c *config.Serve) { c.RateLimitIP, c.RateLimitIPBurst = 1, 2 })
	e.want(e.get("127.0.0.2", "", "/healthz"), 200, "")
	e.want(e.get("127.0.0.2", "", "/download/attachments/x?expires=1&signature=y"), 404, "link_invalid")
	e.want(e.get("127.0.0.2", "", "/healthz"), 429, "rate_limited")
	e.want(e.get("127.0.0.2", "", "/no/such/path"), 429, "rate_limited")
	e.want(e.get("127.0.0.1", "", "/healthz"), 200, "")
	e.want(e.get("127.0.0.2", e.svc.NewKey, "/api/test"), 200, "")
	e.clock.Add(time.Second)
	e.want(e.get("127.0.0.2", "", "/no/such/path"), 404, "route_not_found")
}

// A wait=true request takes one token when it arrives, however long it is
// held: with a burst of 3 and no refill, a held search, then two requests, are
// served, and the next is refused.
func TestHeldWaitCountsOnce(t *testing.T) {
	db := storetest.Open(t, store.SQLite)
	e := newLimitEnv(t, db, func(c *config.Serve) {
		c.RateLimitKey, c.RateLimitKeyBurst = 0.001, 3
		c.WaitHold = 300 * time.Millisecond
	})
	key := e.svc.NewKey
	e.want(e.get("127.0.0.1", key, "/api/emails/default/inbox?subject_includes=nothing&wait=true"), 307, "")
	e.want(e.get("127.0.0.1", key, "/api/test"), 200, "")
	e.want(e.get("127.0.0.1", key, "/api/test"), 200, "")
	e.want(e.get("127.0.0.1", key, "/api/test"), 429, "rate_limited")
}

// A 429 matches the OpenAPI document, which lists it for every operation, and
// its codes are in docs/api.md's error table.
func TestTooManyRequestsDocumented(t *testing.T) {
	db := storetest.Open(t, store.SQLite)
	e := newLimitEnv(t, db, func(c *config.Serve) {
		c.RateLimitKey, c.RateLimitKeyBurst = 0.001, 1
		c.AuthFailureLimit, c.AuthFailureBurst = 0.001, 1
	})
	doc := loadDocument(t, e.url)
	for path, item := range doc.Paths.Map() {
		for method, op := range item.Operations() {
			if op.Responses.Status(http.StatusTooManyRequests) == nil {
				t.Errorf("%s %s does not document 429", method, path)
			}
		}
	}
	router, err := legacy.NewRouter(doc)
	if err != nil {
		t.Fatal(err)
	}
	apiMD, err := os.ReadFile("../../docs/api.md")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(apiMD), "Retry-After") {
		t.Error("docs/api.md does not mention Retry-After")
	}
	c := &conformance{t: t, e: &apiEnv{t: t, srv: &httptest.Server{URL: e.url}}, doc: doc, router: router, apiMD: string(apiMD)}
	c.check(call{method: "GET", path: "/api/test", route: "/api/test", key: e.svc.NewKey, status: 200})
	c.check(call{method: "GET", path: "/api/namespaces", route: "/api/namespaces", key: e.svc.NewKey, status: 429, code: "rate_limited"})
	c.check(call{method: "GET", path: "/api/test", route: "/api/test", key: "cbx_wrong", status: 401, code: "invalid_api_key"})
	c.check(call{method: "GET", path: "/api/devices", route: "/api/devices", key: "cbx_wrong", status: 429, code: "too_many_auth_failures"})
}

// fetch is get for goroutines: it returns the status instead of failing the
// test.
func (e *limitEnv) fetch(ip, key, path string) (int, error) {
	req, err := http.NewRequest(http.MethodGet, e.url+path, nil)
	if err != nil {
		return 0, err
	}
	if key != "" {
		req.Header.Set("X-Api-Key", key)
	}
	resp, err := e.client(ip).Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	io.Copy(io.Discard, resp.Body)
	return resp.StatusCode, nil
}

// newGate holds keyed requests just before their key is looked up, so that a
// test can make every request arrive before any is answered.
func newGate(t *testing.T, l *httpapi.Limits) *testkit.Gate {
	g := testkit.NewGate(t)
	l.SetAuthHooks(g.Arrive, g.Hold)
	return g
}

// Fifty requests with wrong keys from one address, all arrived before any is
// answered, have at most the burst (20) of their keys looked up (401); the
// others are 429 unevaluated. A good key from that address is then refused
// too, and served from another.
func TestParallelBadKeysNeverExceedLimit(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		e := newLimitEnv(t, db, func(c *config.Serve) { c.AuthFailureLimit, c.AuthFailureBurst = 0.001, 20 })
		g := newGate(t, e.svc.Limits)
		const n = 50
		codes := make(chan int, n)
		for i := 0; i < n; i++ {
			go func(i int) {
				code, err := e.fetch("127.0.0.2", fmt.Sprintf("cbx_wrong-%d", i), "/api/test")
				if err != nil {
					t.Error(err)
				}
				codes <- code
			}(i)
		}
		g.Await(t, "every request to arrive and the first to be looked up", func(c testkit.GateCounts) bool {
			return c.Arrived == n && c.Held >= 20
		})
		g.Open()
		count := map[int]int{}
		for i := 0; i < n; i++ {
			count[<-codes]++
		}
		if count[401] != 20 || count[429] != n-20 || g.Held() != 20 {
			t.Fatalf("answers %v, %d keys looked up; want 20 × 401, %d × 429, 20 looked up", count, g.Held(), n-20)
		}
		e.want(e.get("127.0.0.2", e.svc.NewKey, "/api/test"), 429, "too_many_auth_failures")
		e.want(e.get("127.0.0.3", e.svc.NewKey, "/api/test"), 200, "")
	})
}

// A client sending many requests with its good key at once is not refused
// for the moment their lookups overlap: requests over the budget wait for
// the lookups in flight, which give their charges back.
func TestParallelGoodKeyServed(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		e := newLimitEnv(t, db, func(c *config.Serve) { c.AuthFailureLimit, c.AuthFailureBurst = 0.001, 2 })
		e.svc.Limits.SetAuthWait(time.Minute) // however long the gate takes to open
		g := newGate(t, e.svc.Limits)
		const n = 20
		codes := make(chan int, n)
		for i := 0; i < n; i++ {
			go func() {
				code, err := e.fetch("127.0.0.4", e.svc.NewKey, "/api/test")
				if err != nil {
					t.Error(err)
				}
				codes <- code
			}()
		}
		g.Await(t, "every request to arrive and two to be looked up", func(c testkit.GateCounts) bool {
			return c.Arrived == n && c.Held == 2
		})
		g.Open()
		for i := 0; i < n; i++ {
			if code := <-codes; code != 200 {
				t.Fatalf("a good key among many at once: %d", code)
			}
		}
	})
}

// A burst of 10,000 requests with wrong keys from two addresses is logged in
// under 100 lines (each kind of refusal from each address once per
// interval, with a count: four lines, and two more every 10 s the burst
// lasts), while the metrics count every one; on both stores, where the keys
// that get past the throttle are looked up.
func TestBadKeyFloodLogsFewLines(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		var buf logBuffer
		saved := slog.Default()
		slog.SetDefault(slog.New(slog.NewJSONHandler(&buf, nil)))
		t.Cleanup(func() { slog.SetDefault(saved) })
		e := newLimitEnv(t, db, func(*config.Serve) {})
		before := authAttempts(t, e)
		startLog := len(buf.String())

		const n, addrs, workers = 10000, 2, 16
		jobs := make(chan int)
		var wg sync.WaitGroup
		var failed atomic.Int32
		for w := 0; w < workers; w++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := range jobs {
					code, err := e.fetch(fmt.Sprintf("127.0.1.%d", 1+i%addrs), fmt.Sprintf("cbx_guess-%d", i), "/api/test")
					if err != nil || (code != 401 && code != 429) {
						failed.Add(1)
					}
				}
			}()
		}
		for i := 0; i < n; i++ {
			jobs <- i
		}
		close(jobs)
		wg.Wait()
		if failed.Load() > 0 {
			t.Fatalf("%d requests failed or were not refused", failed.Load())
		}
		if got := authAttempts(t, e) - before; got != n {
			t.Fatalf("catchbox_auth_attempts_total{kind=\"api_key\"} grew by %v, want %d", got, n)
		}
		burst := buf.String()[startLog:]
		lines := strings.Count(burst, "\n")
		if lines >= 100 {
			t.Fatalf("%d log lines for %d refused requests, want under 100:\n%s", lines, n, burst)
		}
		if !strings.Contains(burst, `"code":"invalid_api_key"`) || !strings.Contains(burst, `"code":"too_many_auth_failures"`) {
			t.Fatalf("the refusals are not in the log:\n%s", burst)
		}
		t.Logf("%d requests, %d log lines", n, lines)
	})
}

// authAttempts is the sum of catchbox_auth_attempts_total{kind="api_key"} on
// the service's /metrics.
func authAttempts(t *testing.T, e *limitEnv) float64 {
	t.Helper()
	resp, err := e.client("127.0.0.9").Get(e.url + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	var sum float64
	for _, line := range strings.Split(string(body), "\n") {
		if !strings.HasPrefix(line, `catchbox_auth_attempts_total{kind="api_key"`) {
			continue
		}
		var v float64
		if _, err := fmt.Sscan(line[strings.LastIndexByte(line, ' ')+1:], &v); err != nil {
			t.Fatalf("metric line %q: %v", line, err)
		}
		sum += v
	}
	return sum
}

// logBuffer collects log lines from every goroutine.
type logBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}
