package outbound_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/catchbox/catchbox/internal/config"
	"github.com/catchbox/catchbox/internal/inbox"
	"github.com/catchbox/catchbox/internal/outbound/outstore"
	"github.com/catchbox/catchbox/internal/outbound/outstore/outstoretest"
	"github.com/catchbox/catchbox/internal/server"
	"github.com/catchbox/catchbox/internal/server/servertest"
	"github.com/catchbox/catchbox/internal/store"
	"github.com/catchbox/catchbox/internal/tenant"
	"github.com/catchbox/catchbox/internal/testkit"
)

// apiEnv is the whole service, built as catchbox serve builds it
// (servertest), over a fresh store, its HTTP API on a loopback port, with
// its outbound clock under the test's control. The default organisation
// owns namespace "default"; "other" owns namespace "elsewhere"; "third"
// owns nothing but may read "default" when the test shares it.
type apiEnv struct {
	t        testing.TB
	db       *store.DB
	svc      *server.Service
	base     string
	clock    *testkit.Clock
	key      string // organisation default
	otherKey string // organisation other
	org      tenant.Org
	other    tenant.Org
}

func newAPIEnv(t *testing.T, db *store.DB) *apiEnv { return newAPIEnvWith(t, db, nil) }

// newAPIEnvWith is newAPIEnv with settings changed by configure.
func newAPIEnvWith(t testing.TB, db *store.DB, configure func(*config.Serve)) *apiEnv {
	t.Helper()
	e := newServiceEnv(t, db, configure)
	e.base = servertest.Serve(t, e.svc).URL
	return e
}

// newServiceEnv is the service of newAPIEnvWith, not served: for the tests
// that call its operations.
func newServiceEnv(t testing.TB, db *store.DB, configure func(*config.Serve)) *apiEnv {
	t.Helper()
	ctx := context.Background()
	cfg := servertest.Config(t)
	if configure != nil {
		configure(&cfg)
	}
	svc := servertest.New(t, db, cfg)
	e := &apiEnv{t: t, db: db, svc: svc, key: svc.NewKey, clock: outstoretest.NewClock()}
	svc.Outbound.Store.Now = e.clock.Now
	svc.Outbound.Destinations.Now = e.clock.Now
	var err error
	if e.org, err = svc.Tenants.OrgByName(ctx, tenant.DefaultName); err != nil {
		t.Fatal(err)
	}
	if e.other, err = svc.Tenants.CreateOrg(ctx, "other", 100, true); err != nil {
		t.Fatal(err)
	}
	if _, e.otherKey, err = svc.Tenants.CreateKey(ctx, e.other.ID, "", ""); err != nil {
		t.Fatal(err)
	}
	if _, err := svc.Tenants.CreateNamespace(ctx, e.other.ID, "elsewhere", tenant.Settings{}); err != nil {
		t.Fatal(err)
	}
	return e
}

// response is one answer of the API.
type response struct {
	status int
	header http.Header
	body   []byte
}

// json decodes the body into v.
func (r response) json(t testing.TB, v any) {
	t.Helper()
	if err := json.Unmarshal(r.body, v); err != nil {
		t.Fatalf("decode %s: %v", r.body, err)
	}
}

// errorBody is the contract's error body.
type errorBody struct {
	StatusCode int    `json:"statusCode"`
	Code       string `json:"code"`
	Message    string `json:"message"`
	Errors     []struct {
		Field  string `json:"field"`
		Detail []struct {
			Description string `json:"description"`
		} `json:"detail"`
	} `json:"errors"`
}

// fields are the fields the error body names, in order.
func (b errorBody) fields() []string {
	var out []string
	for _, f := range b.Errors {
		out = append(out, f.Field)
	}
	return out
}

// do sends a request with the key; body is JSON-encoded unless it is a
// string, sent as it is.
func (e *apiEnv) do(key, method, path string, body any) response {
	e.t.Helper()
	var r io.Reader
	switch b := body.(type) {
	case nil:
	case string:
		r = strings.NewReader(b)
	default:
		data, err := json.Marshal(b)
		if err != nil {
			e.t.Fatal(err)
		}
		r = bytes.NewReader(data)
	}
	req, err := http.NewRequest(method, e.base+path, r)
	if err != nil {
		e.t.Fatal(err)
	}
	req.Header.Set("X-Api-Key", key)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		e.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		e.t.Fatal(err)
	}
	return response{status: resp.StatusCode, header: resp.Header, body: data}
}

// sent is the summary form as a client reads it.
type sent struct {
	ID             string `json:"id"`
	OrganisationID string `json:"organisation_id"`
	Type           string `json:"type"`
	Status         string `json:"status"`
	From           struct {
		Email string `json:"email"`
		Name  string `json:"name"`
	} `json:"from"`
	Subject         string `json:"subject"`
	RecipientCount  int    `json:"recipient_count"`
	AttachmentCount int    `json:"attachment_count"`
	MessageID       string `json:"message_id"`
}

// send posts a send to the namespace and expects 202.
func (e *apiEnv) send(namespace string, body any) sent {
	e.t.Helper()
	return e.accepted(e.do(e.key, "POST", "/api/emails/send?namespace="+namespace, body))
}

// accepted checks a 202 with its Location and returns the summary.
func (e *apiEnv) accepted(r response) sent {
	e.t.Helper()
	if r.status != http.StatusAccepted {
		e.t.Fatalf("status %d, want 202: %s", r.status, r.body)
	}
	var s sent
	r.json(e.t, &s)
	if loc := r.header.Get("Location"); loc != "/api/emails/outbound/"+s.ID {
		e.t.Fatalf("Location %q for email %s", loc, s.ID)
	}
	return s
}

// deliver stores raw in the namespace as the SMTP listener would, and returns
// the inbound email's id.
func (e *apiEnv) deliver(namespace, raw string, rcpts ...string) string {
	e.t.Helper()
	ctx := context.Background()
	ns, err := e.svc.Tenants.NamespaceByName(ctx, namespace)
	if err != nil {
		e.t.Fatal(err)
	}
	ids, err := e.svc.Ingester.Deliver(ctx, []byte(strings.ReplaceAll(raw, "\n", "\r\n")),
		inbox.Envelope{ClientIP: "127.0.0.1", Helo: "client.test", MailFrom: "sender@example.com"},
		[]inbox.Target{{Namespace: ns, Recipients: rcpts}})
	if err != nil {
		e.t.Fatal(err)
	}
	return ids[0]
}

// verify makes addr a verified destination of the organisation, as the
// destinations table holds one.
func (e *apiEnv) verify(orgID, addr string) {
	e.t.Helper()
	now := start.UnixMilli()
	err := e.db.InTx(context.Background(), func(tx *store.Tx) error {
		_, err := tx.Exec(context.Background(), `INSERT INTO destinations (id, org_id, address, verified_at, created_at,
			updated_at) VALUES (?, ?, ?, ?, ?, ?)`, outstore.NewID(), orgID, strings.ToLower(addr), now, now, now)
		return err
	})
	if err != nil {
		e.t.Fatal(err)
	}
}

// source is the built message of an outbound email.
func (e *apiEnv) source(id string) []byte {
	e.t.Helper()
	b, err := e.svc.Outbound.Store.Source(context.Background(), id)
	if err != nil {
		e.t.Fatalf("source of %s: %v", id, err)
	}
	return b
}

// detail is the detail form of an outbound email, as the store reads it.
func (e *apiEnv) detail(id string) outstore.Detail {
	e.t.Helper()
	d, err := e.svc.Outbound.Store.Get(context.Background(), e.org.ID, id)
	if err != nil {
		e.t.Fatalf("get %s: %v", id, err)
	}
	return d
}

// later moves the outbound clock on.
func (e *apiEnv) later(d time.Duration) { e.clock.Add(d) }
