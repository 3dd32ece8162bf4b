package sms_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/catchbox/catchbox/internal/server/servertest"
	"github.com/catchbox/catchbox/internal/sms"
	"github.com/catchbox/catchbox/internal/store"
	"github.com/catchbox/catchbox/internal/tenant"
)

const (
	activePhone   = "+15550001111"
	disabledPhone = "+15550002222"
	otherPhone    = "+447700900123"
	twilioToken   = "test-auth-token-0123456789abcdef"
)

// env is the running service (as catchbox serve builds it) over a fresh store: organisation "default" with an
// active, a requested and a disabled number, and organisation "other" with one
// active number.
type env struct {
	t         testing.TB
	db        *store.DB
	tenants   *tenant.Service
	svc       *sms.Service
	hub       interface{ Waiters() int } // the notifier: a notify.Hub, or notify.Postgres around one
	api       *sms.API
	srv       *httptest.Server
	key       string
	otherKey  string
	org       tenant.Org
	active    sms.Number
	requested sms.Number
	disabled  sms.Number
	otherNum  sms.Number
	clock     atomic.Int64 // Unix ms; 0 means real time
}

func newEnv(t testing.TB, db *store.DB) *env {
	t.Helper()
	ctx := context.Background()
	cfg := servertest.Config(t)
	cfg.WaitHold = 300 * time.Millisecond
	cfg.TwilioAuthToken = twilioToken
	svc := servertest.New(t, db, cfg)
	e := &env{t: t, db: db, tenants: svc.Tenants, svc: svc.SMS.Service, api: svc.SMS, key: svc.NewKey,
		hub: svc.Notifier.(interface{ Waiters() int })}
	var err error
	if e.org, err = e.tenants.OrgByName(ctx, tenant.DefaultName); err != nil {
		t.Fatal(err)
	}
	other, otherKey := servertest.Org(t, svc, "other")
	e.otherKey = otherKey
	e.svc.SetClock(e.now)
	add := func(orgID string, spec sms.NumberSpec) sms.Number {
		n, err := e.svc.AddNumber(ctx, orgID, spec)
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	e.active = add(e.org.ID, sms.NumberSpec{Phone: activePhone})
	e.requested = add(e.org.ID, sms.NumberSpec{Country: "gb", IsTest: true})
	e.disabled = add(e.org.ID, sms.NumberSpec{Phone: disabledPhone, Status: sms.StatusDisabled})
	e.otherNum = add(other.ID, sms.NumberSpec{Phone: otherPhone, Status: sms.StatusActive})
	e.srv = servertest.Serve(t, svc)
	return e
}

func (e *env) now() time.Time {
	if ms := e.clock.Load(); ms != 0 {
		return time.UnixMilli(ms)
	}
	return time.Now()
}

// noRedirects lets a test see a 307 instead of following it.
var noRedirects = &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}

// do sends a request with the key (none when "") and decodes a JSON answer into out.
func (e *env) do(method, key, path string, body any, out any) *http.Response {
	e.t.Helper()
	var rd io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		if s, ok := body.(string); ok {
			b = []byte(s)
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, e.srv.URL+path, rd)
	if err != nil {
		e.t.Fatal(err)
	}
	if key != "" {
		req.Header.Set("X-Api-Key", key)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := noRedirects.Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	if out != nil && len(data) > 0 {
		if err := json.Unmarshal(data, out); err != nil {
			e.t.Fatalf("%s %s: %d %s: %v", method, path, resp.StatusCode, data, err)
		}
	}
	return resp
}

func (e *env) get(key, path string, out any) *http.Response {
	e.t.Helper()
	return e.do(http.MethodGet, key, path, nil, out)
}

// virtual sends a virtual SMS as the default organisation and fails the test
// unless it is created.
func (e *env) virtual(from, to, body string) message {
	e.t.Helper()
	var r struct{ Data message }
	resp := e.do(http.MethodPost, e.key, "/api/sms/virtual", map[string]string{"from_number": from, "to_number": to, "body": body}, &r)
	if resp.StatusCode != http.StatusCreated {
		e.t.Fatalf("virtual SMS: status %d", resp.StatusCode)
	}
	return r.Data
}

// at sets the clock to base plus ms milliseconds.
func (e *env) at(base time.Time, ms int64) {
	e.clock.Store(base.Add(time.Duration(ms) * time.Millisecond).UnixMilli())
}

// webhook posts a form to the Twilio webhook, signed with token over the URL the
// server's public URL names (signature "" sends none).
func (e *env) webhook(form url.Values, query, signature string) (*http.Response, string) {
	e.t.Helper()
	u := e.srv.URL + sms.TwilioWebhookPath
	if query != "" {
		u += "?" + query
	}
	req, _ := http.NewRequest(http.MethodPost, u, strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	if signature != "" {
		req.Header.Set("X-Twilio-Signature", signature)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	return resp, string(data)
}

type message struct {
	ID                string  `json:"id"`
	SmsPhoneNumberID  string  `json:"sms_phone_number_id"`
	Body              string  `json:"body"`
	FromNumber        string  `json:"from_number"`
	ToNumber          string  `json:"to_number"`
	ProviderMessageID *string `json:"provider_message_id"`
	CreatedAt         string  `json:"created_at"`
	Direction         string  `json:"direction"`
}

type searchResp struct {
	TotalCount int            `json:"total_count"`
	Options    map[string]any `json:"options"`
	Data       []message      `json:"data"`
}

type errResp struct {
	StatusCode int    `json:"statusCode"`
	Code       string `json:"code"`
	Message    string `json:"message"`
	Errors     []struct {
		Field string `json:"field"`
	} `json:"errors"`
}

func (r errResp) fields() []string {
	var out []string
	for _, f := range r.Errors {
		out = append(out, f.Field)
	}
	return out
}

// count is the number of stored messages, expired or not.
func (e *env) count() int {
	e.t.Helper()
	var n int
	if err := e.db.QueryRow(context.Background(), "SELECT COUNT(*) FROM sms_messages").Scan(&n); err != nil {
		e.t.Fatal(err)
	}
	return n
}
