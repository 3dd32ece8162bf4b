package webhook_test

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/catchbox/catchbox/internal/config"
	"github.com/catchbox/catchbox/internal/inbox"
	"github.com/catchbox/catchbox/internal/server"
	"github.com/catchbox/catchbox/internal/server/servertest"
	"github.com/catchbox/catchbox/internal/store"
	"github.com/catchbox/catchbox/internal/tenant"
	"github.com/catchbox/catchbox/internal/testkit"
	"github.com/catchbox/catchbox/internal/webhook"
)

// env is the service as catchbox serve builds it, its HTTP API on loopback,
// its job queue running, and a receiver of webhooks.
type env struct {
	t    testing.TB
	db   *store.DB
	svc  *server.Service
	srv  *httptest.Server
	key  string
	ns   tenant.Namespace
	recv *receiver
	// lastEndpoint is the id of the endpoint createEndpoint made last.
	lastEndpoint string
}

func (e *env) endpointID() string { return e.lastEndpoint }

// testConfig is the service's configuration with retries fast enough for a test.
func testConfig(t testing.TB) config.Serve {
	cfg := servertest.Config(t)
	cfg.WebhookBackoff = 20 * time.Millisecond
	cfg.WebhookMaxBackoff = 100 * time.Millisecond
	cfg.WebhookTimeout = 5 * time.Second
	return cfg
}

func newEnv(t testing.TB, db *store.DB, cfg config.Serve) *env {
	t.Helper()
	e := &env{t: t, db: db, recv: newReceiver(t)}
	e.svc = servertest.New(t, db, cfg)
	e.srv = servertest.Serve(t, e.svc)
	e.key = e.svc.NewKey
	var err error
	if e.ns, err = e.svc.Tenants.NamespaceByName(context.Background(), tenant.DefaultName); err != nil {
		t.Fatal(err)
	}
	return e
}

// start runs the service's job queue until the test ends.
func (e *env) start() {
	e.t.Helper()
	servertest.StartJobs(e.t, e.svc)
}

// call makes an API request with the env's key and decodes the answer.
func (e *env) call(method, path string, body any) (int, map[string]any) {
	e.t.Helper()
	var r io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		r = bytes.NewReader(b)
	}
	req, _ := http.NewRequest(method, e.srv.URL+path, r)
	req.Header.Set("X-Api-Key", e.key)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	defer resp.Body.Close()
	var out map[string]any
	b, _ := io.ReadAll(resp.Body)
	if len(b) > 0 {
		if err := json.Unmarshal(b, &out); err != nil {
			e.t.Fatalf("%s %s: %d %s", method, path, resp.StatusCode, b)
		}
	}
	return resp.StatusCode, out
}

// createEndpoint creates an endpoint to the receiver and returns its id and secret.
func (e *env) createEndpoint(body map[string]any) (string, string) {
	e.t.Helper()
	if body == nil {
		body = map[string]any{}
	}
	if body["url"] == nil {
		body["url"] = e.recv.srv.URL + "/hook"
	}
	st, out := e.call("POST", "/api/webhooks", body)
	if st != http.StatusCreated {
		e.t.Fatalf("create endpoint: %d %v", st, out)
	}
	d := out["data"].(map[string]any)
	e.lastEndpoint = d["id"].(string)
	secret := d["secret"].(string)
	e.recv.addSecret(secret)
	return d["id"].(string), secret
}

// deliver stores a message for the default namespace, as the SMTP listener does.
func (e *env) deliver(subject string) string {
	e.t.Helper()
	raw := "From: a@example.com\r\nTo: b@default.localhost\r\nSubject: " + subject + "\r\n\r\nhello\r\n"
	ids, err := e.svc.Ingester.Deliver(context.Background(), []byte(raw), inbox.Envelope{ClientIP: "127.0.0.1"},
		[]inbox.Target{{Namespace: e.ns, Recipients: []string{"b@default.localhost"}}})
	if err != nil {
		e.t.Fatal(err)
	}
	return ids[0]
}

// hook is one request the receiver got.
type hook struct {
	ID, Type  string
	Timestamp int64
	Body      map[string]any
	Verified  []string // the secrets a signature verified with
	Status    int      // what the receiver answered
}

// receiver is a webhook endpoint that checks every signature against the
// secrets it knows (an implementation of the Standard Webhooks scheme of its
// own, written from the specification) and answers 500 while told to fail.
type receiver struct {
	t       testing.TB
	srv     *httptest.Server
	mu      sync.Mutex
	secrets []string
	fail    int // answer 500 to this many more requests
	all     []hook
	changed chan struct{}
}

func newReceiver(t testing.TB) *receiver {
	r := &receiver{t: t, changed: make(chan struct{}, 1)}
	r.srv = httptest.NewServer(http.HandlerFunc(r.serve))
	t.Cleanup(r.srv.Close)
	return r
}

func (r *receiver) addSecret(s string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.secrets = append(r.secrets, s)
}

func (r *receiver) failNext(n int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.fail = n
}

func (r *receiver) serve(w http.ResponseWriter, req *http.Request) {
	body, _ := io.ReadAll(req.Body)
	h := hook{ID: req.Header.Get("webhook-id")}
	h.Timestamp, _ = strconv.ParseInt(req.Header.Get("webhook-timestamp"), 10, 64)
	json.Unmarshal(body, &h.Body)
	h.Type, _ = h.Body["type"].(string)
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, s := range r.secrets {
		key, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(s, "whsec_"))
		if err != nil {
			r.t.Errorf("secret %q is not whsec_ and base64", s)
			continue
		}
		mac := hmac.New(sha256.New, key)
		mac.Write([]byte(h.ID + "." + req.Header.Get("webhook-timestamp") + "."))
		mac.Write(body)
		want := "v1," + base64.StdEncoding.EncodeToString(mac.Sum(nil))
		for _, sig := range strings.Fields(req.Header.Get("webhook-signature")) {
			if hmac.Equal([]byte(sig), []byte(want)) {
				h.Verified = append(h.Verified, s)
			}
		}
	}
	h.Status = http.StatusNoContent
	if r.fail > 0 {
		r.fail--
		h.Status = http.StatusInternalServerError
	}
	r.all = append(r.all, h)
	w.WriteHeader(h.Status)
	if h.Status != http.StatusNoContent {
		fmt.Fprint(w, "receiver failing on purpose")
	}
	select {
	case r.changed <- struct{}{}:
	default:
	}
}

// accepted returns the requests answered 2xx, in the order they came.
func (r *receiver) accepted() []hook {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []hook
	for _, h := range r.all {
		if h.Status < 300 {
			out = append(out, h)
		}
	}
	return out
}

func (r *receiver) requests() []hook {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]hook(nil), r.all...)
}

// await waits until the receiver has accepted n requests or more; a failure
// says how many it had accepted, of how many.
func (r *receiver) await(t testing.TB, what string, n int) {
	t.Helper()
	testkit.Await(t, what, func() (string, bool) {
		accepted, all := len(r.accepted()), len(r.requests())
		return fmt.Sprintf("%d of %d requests accepted", accepted, all), accepted >= n
	})
}

// awaitRequests waits until the receiver has had n requests or more, accepted
// or not.
func (r *receiver) awaitRequests(t testing.TB, what string, n int) {
	t.Helper()
	testkit.Await(t, what, func() (int, bool) { all := len(r.requests()); return all, all >= n })
}

func webhookSpec(u string) webhook.Spec { return webhook.Spec{URL: &u} }
