package totp_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/catchbox/catchbox/internal/server/servertest"
	"github.com/catchbox/catchbox/internal/store"
	"github.com/catchbox/catchbox/internal/tenant"
	"github.com/catchbox/catchbox/internal/totp"
)

// clock is the fake time of a test: Now reads it, Sleep advances it.
type clock struct {
	mu     sync.Mutex
	now    time.Time
	slept  []time.Duration
	asleep func(ctx context.Context, d time.Duration) error // replaces the default sleep when set
}

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *clock) Set(t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = t
}

func (c *clock) Add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// Sleep records the wait and moves the clock on by it, at once.
func (c *clock) Sleep(ctx context.Context, d time.Duration) error {
	c.mu.Lock()
	hook := c.asleep
	c.slept = append(c.slept, d)
	c.mu.Unlock()
	if hook != nil {
		return hook(ctx, d)
	}
	c.Add(d)
	return nil
}

func (c *clock) Slept() []time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]time.Duration(nil), c.slept...)
}

// lockedBuffer collects log output written from server goroutines.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// env is the running service (as catchbox serve builds it) over a fresh store,
// with one organisation ("acme") and its key beside the first one ("default").
type env struct {
	t      *testing.T
	db     *store.DB
	tenant *tenant.Service
	svc    *totp.Service
	srv    *httptest.Server
	clock  *clock
	logs   *lockedBuffer
	org    tenant.Org
	key    string
}

// start is the fake clock's first instant: 2026-11-22T03:23:50Z.
var start = time.Unix(1795317830, 0).UTC()

func newEnv(t *testing.T, db *store.DB) *env {
	t.Helper()
	svc := servertest.New(t, db, servertest.Config(t))
	e := &env{t: t, db: db, tenant: svc.Tenants, svc: svc.TOTP, clock: &clock{now: start}, logs: &lockedBuffer{}}
	e.svc.Now = e.clock.Now
	e.svc.Sleep = e.clock.Sleep
	e.svc.Log = slog.New(slog.NewTextHandler(e.logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	e.srv = servertest.Serve(t, svc)
	e.org, e.key = e.newOrg("acme", 100, true)
	return e
}

// newOrg creates an organisation and returns it with a new API key.
func (e *env) newOrg(name string, limit int, enabled bool) (tenant.Org, string) {
	e.t.Helper()
	ctx := context.Background()
	o, err := e.tenant.CreateOrg(ctx, name, limit, enabled)
	if err != nil {
		e.t.Fatalf("create org: %v", err)
	}
	_, key, err := e.tenant.CreateKey(ctx, o.ID, "test", "")
	if err != nil {
		e.t.Fatalf("create key: %v", err)
	}
	return o, key
}

// response is an answer of the server.
type response struct {
	status int
	header http.Header
	body   []byte
}

// json decodes the body into a generic map.
func (r response) json(t *testing.T) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(r.body, &m); err != nil {
		t.Fatalf("status %d, body %q is not a JSON object: %v", r.status, r.body, err)
	}
	return m
}

// errorCode returns the contract error body's code and its first field.
func (r response) errorCode(t *testing.T) (code, field string) {
	t.Helper()
	var b struct {
		StatusCode int    `json:"statusCode"`
		Code       string `json:"code"`
		Message    string `json:"message"`
		Errors     []struct {
			Field string `json:"field"`
		} `json:"errors"`
	}
	if err := json.Unmarshal(r.body, &b); err != nil {
		t.Fatalf("error body %q: %v", r.body, err)
	}
	if b.StatusCode != r.status {
		t.Fatalf("error body statusCode %d, HTTP status %d", b.StatusCode, r.status)
	}
	if len(b.Errors) > 0 {
		field = b.Errors[0].Field
	}
	return b.Code, field
}

// call sends a request with the API key; body is JSON-encoded unless it is a string.
func (e *env) call(method, path, key string, body any) response {
	e.t.Helper()
	return e.callCtx(context.Background(), method, path, key, body)
}

func (e *env) callCtx(ctx context.Context, method, path, key string, body any) response {
	e.t.Helper()
	var rd io.Reader
	switch b := body.(type) {
	case nil:
	case string:
		rd = strings.NewReader(b)
	default:
		data, err := json.Marshal(b)
		if err != nil {
			e.t.Fatal(err)
		}
		rd = bytes.NewReader(data)
	}
	req, err := http.NewRequestWithContext(ctx, method, e.srv.URL+path, rd)
	if err != nil {
		e.t.Fatal(err)
	}
	if key != "" {
		req.Header.Set("X-Api-Key", key)
	}
	if rd != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	res, err := e.srv.Client().Do(req)
	if err != nil {
		e.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer res.Body.Close()
	data, err := io.ReadAll(res.Body)
	if err != nil {
		e.t.Fatalf("%s %s: read body: %v", method, path, err)
	}
	return response{status: res.StatusCode, header: res.Header, body: data}
}

// create saves a device through path and returns it, failing unless 201.
func (e *env) create(path string, body any) map[string]any {
	e.t.Helper()
	r := e.call("POST", path, e.key, body)
	if r.status != http.StatusCreated {
		e.t.Fatalf("POST %s: status %d, body %s", path, r.status, r.body)
	}
	return r.json(e.t)
}

// otp fetches a device's code, failing unless 200.
func (e *env) otp(id, query string) (code, expires string) {
	e.t.Helper()
	r := e.call("GET", "/api/devices/"+id+"/otp"+query, e.key, nil)
	if r.status != http.StatusOK {
		e.t.Fatalf("GET otp: status %d, body %s", r.status, r.body)
	}
	m := r.json(e.t)
	return m["code"].(string), m["expires"].(string)
}
