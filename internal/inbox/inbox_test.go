package inbox_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/catchbox/catchbox/internal/inbox"
	"github.com/catchbox/catchbox/internal/server/servertest"
	"github.com/catchbox/catchbox/internal/store"
	"github.com/catchbox/catchbox/internal/store/storetest"
	"github.com/catchbox/catchbox/internal/tenant"
	"github.com/catchbox/catchbox/internal/testkit"
)

// env is the running service (as catchbox serve builds it) over a fresh store
// with two organisations, its HTTP API on a loopback port.
type env struct {
	t        *testing.T
	db       *store.DB
	tenants  *tenant.Service
	ingester *inbox.Ingester
	api      *inbox.API
	srv      *httptest.Server
	key      string // organisation "default"
	otherKey string // organisation "other"
	ns       tenant.Namespace
	clock    atomic.Int64 // Unix ms; 0 means real time
}

func newEnv(t *testing.T, db *store.DB) *env {
	t.Helper()
	ctx := context.Background()
	cfg := servertest.Config(t)
	cfg.WaitHold = 300 * time.Millisecond
	svc := servertest.New(t, db, cfg)
	e := &env{t: t, db: db, tenants: svc.Tenants, ingester: svc.Ingester, api: svc.Inbox, key: svc.NewKey}
	_, e.otherKey = servertest.Org(t, svc, "other")
	var err error
	if e.ns, err = e.tenants.NamespaceByName(ctx, "default"); err != nil {
		t.Fatal(err)
	}
	now := func() time.Time {
		if ms := e.clock.Load(); ms != 0 {
			return time.UnixMilli(ms)
		}
		return time.Now()
	}
	svc.Ingester.SetClock(now)
	svc.Searcher.SetClock(now)
	svc.Inbox.Now = now
	e.srv = servertest.Serve(t, svc)
	return e
}

type msg struct {
	from, to, cc, subject, body string
	rcpts                       []string
	extra                       string // raw extra headers / MIME
}

func (m msg) raw() []byte {
	var b strings.Builder
	fmt.Fprintf(&b, "From: %s\r\nTo: %s\r\n", m.from, m.to)
	if m.cc != "" {
		fmt.Fprintf(&b, "Cc: %s\r\n", m.cc)
	}
	fmt.Fprintf(&b, "Subject: %s\r\nMessage-ID: <%d@test>\r\n", m.subject, time.Now().UnixNano())
	if m.extra != "" {
		b.WriteString(m.extra)
		return []byte(b.String())
	}
	fmt.Fprintf(&b, "Content-Type: text/plain; charset=utf-8\r\n\r\n%s\r\n", m.body)
	return []byte(b.String())
}

// deliver stores m in the namespace as SMTP would.
func (e *env) deliver(ns tenant.Namespace, m msg) string {
	e.t.Helper()
	rcpts := m.rcpts
	if rcpts == nil {
		rcpts = []string{m.to}
	}
	ids, err := e.ingester.Deliver(context.Background(), m.raw(), inbox.Envelope{ClientIP: "127.0.0.1", Helo: "client.test", MailFrom: "sender@example.com"},
		[]inbox.Target{{Namespace: ns, Recipients: rcpts}})
	if err != nil {
		e.t.Fatal(err)
	}
	return ids[0]
}

func (e *env) get(key, path string, out any) *http.Response {
	e.t.Helper()
	req, _ := http.NewRequest(http.MethodGet, e.srv.URL+path, nil)
	if key != "" {
		req.Header.Set("X-Api-Key", key)
	}
	client := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := client.Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if out != nil && len(body) > 0 {
		if err := json.Unmarshal(body, out); err != nil {
			e.t.Fatalf("GET %s: %d %s: %v", path, resp.StatusCode, body, err)
		}
	}
	return resp
}

type searchResp struct {
	TotalCount int            `json:"total_count"`
	Options    map[string]any `json:"options"`
	Data       []inbox.Email  `json:"data"`
}

type errResp struct {
	StatusCode int    `json:"statusCode"`
	Error      string `json:"error"`
	Code       string `json:"code"`
	Message    string `json:"message"`
	Errors     []struct {
		Field  string `json:"field"`
		Detail []struct {
			Description string `json:"description"`
		} `json:"detail"`
	} `json:"errors"`
}

func TestSearchFilters(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		e := newEnv(t, db)
		base := time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC)
		at := func(sec int) { e.clock.Store(base.Add(time.Duration(sec) * time.Second).UnixMilli()) }
		at(0)
		e.deliver(e.ns, msg{from: "Alice <alice@Example.com>", to: "john@default.localhost", subject: "Password reset for John", body: "a"})
		at(10)
		e.deliver(e.ns, msg{from: "bob@other.org", to: "mary@default.localhost", cc: "Copy <CC-Person@default.localhost>", subject: "Welcome 100%_done", body: "b"})
		at(20)
		e.deliver(e.ns, msg{from: "carol@example.com", to: "outside@elsewhere.test", subject: "Ünïcode Grüße", body: "c",
			rcpts: []string{"hidden@default.localhost"}})
		at(30)

		type tc struct {
			query    string
			subjects []string
		}
		b := base.Unix()
		for _, c := range []tc{
			{"", []string{"Ünïcode Grüße", "Welcome 100%_done", "Password reset for John"}},
			{"limit=1", []string{"Ünïcode Grüße"}},
			{"limit=1&offset=1", []string{"Welcome 100%_done"}},
			{"offset=3", nil},
			{fmt.Sprintf("from_timestamp=%d", b+10), []string{"Ünïcode Grüße", "Welcome 100%_done"}},
			{fmt.Sprintf("to_timestamp=%d", b+10), []string{"Welcome 100%_done", "Password reset for John"}},
			{fmt.Sprintf("from_timestamp=%d&to_timestamp=%d", b+10, b+10), []string{"Welcome 100%_done"}},
			{"to_addr_prefix=john", []string{"Password reset for John"}},
			{"to_addr_prefix=JOHN@default", []string{"Password reset for John"}},
			{"to_addr_prefix=cc-person", []string{"Welcome 100%_done"}},
			{"to_addr_prefix=hidden@", []string{"Ünïcode Grüße"}},
			{"to_addr_prefix=outside", []string{"Ünïcode Grüße"}},
			{"to_addr_prefix=nobody", nil},
			{"from_addr_includes=example.com", []string{"Ünïcode Grüße", "Password reset for John"}},
			{"from_addr_includes=ALICE", []string{"Password reset for John"}},
			{"from_addr_includes=b@", []string{"Welcome 100%_done"}},
			{"subject_includes=password", []string{"Password reset for John"}},
			{"subject_includes=RESET+FOR", []string{"Password reset for John"}},
			{"subject_includes=" + url.QueryEscape("100%_"), []string{"Welcome 100%_done"}},
			{"subject_includes=" + url.QueryEscape("%"), []string{"Welcome 100%_done"}},
			{"subject_includes=_", []string{"Welcome 100%_done"}},
			{"subject_includes=" + url.QueryEscape(`"quoted"`), nil},
			{"subject_includes=" + url.QueryEscape("grüße"), []string{"Ünïcode Grüße"}},
			{"subject_includes=ohn", []string{"Password reset for John"}},
			{"subject_includes=jo", []string{"Password reset for John"}},
			{"subject_includes=welcome&from_addr_includes=alice", nil},
			// An empty value is no filter (an HTML form sends every field).
			{"to_addr_prefix=&from_addr_includes=&subject_includes=password&from_timestamp=&to_timestamp=&limit=&offset=&wait=",
				[]string{"Password reset for John"}},
			{"from_timestamp=&to_timestamp=" + fmt.Sprint(b+10), []string{"Welcome 100%_done", "Password reset for John"}},
			// A whole number written with a zero fraction is that number.
			{"limit=1.0&offset=1.00", []string{"Welcome 100%_done"}},
		} {
			var r searchResp
			resp := e.get(e.key, "/api/emails/default/inbox?"+c.query, &r)
			if resp.StatusCode != 200 {
				t.Fatalf("%s: status %d", c.query, resp.StatusCode)
			}
			var got []string
			for _, em := range r.Data {
				got = append(got, em.Subject)
			}
			if strings.Join(got, "|") != strings.Join(c.subjects, "|") {
				t.Errorf("%q: got %q, want %q", c.query, got, c.subjects)
			}
			if c.query == "offset=3" && r.TotalCount != 3 {
				t.Errorf("offset past the end: total_count %d, want 3", r.TotalCount)
			}
			if strings.HasPrefix(c.query, "limit=1") && r.TotalCount != 3 {
				t.Errorf("%q: total_count %d, want 3 (every match)", c.query, r.TotalCount)
			}
		}
	})
}

func TestSearchOptionsEcho(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		e := newEnv(t, db)
		e.deliver(e.ns, msg{from: "a@b.c", to: "x@default.localhost", subject: "hello", body: "x"})
		var r searchResp
		e.get(e.key, "/api/emails/default/inbox", &r)
		if r.Options["limit"] != float64(10) || r.Options["offset"] != float64(0) || len(r.Options) != 2 {
			t.Errorf("default options = %v, want limit 10 offset 0 only", r.Options)
		}
		e.get(e.key, "/api/emails/default/inbox?limit=5&offset=0&from_timestamp=1&to_timestamp=99999999999&subject_includes=hel&to_addr_prefix=x&from_addr_includes=a&wait=false", &r)
		want := map[string]any{"limit": 5.0, "offset": 0.0, "from_timestamp": 1.0, "to_timestamp": 99999999999.0,
			"subject_includes": "hel", "to_addr_prefix": "x", "from_addr_includes": "a", "wait": false}
		for k, v := range want {
			if r.Options[k] != v {
				t.Errorf("options[%s] = %v, want %v", k, r.Options[k], v)
			}
		}
		if r.TotalCount != 1 {
			t.Errorf("total_count %d, want 1", r.TotalCount)
		}
		// Empty values are absent: not echoed; a zero fraction is echoed as
		// the whole number applied.
		r.Options = nil
		e.get(e.key, "/api/emails/default/inbox?limit=5.0&offset=&from_timestamp=&to_timestamp=&subject_includes=&wait=", &r)
		if r.Options["limit"] != 5.0 || r.Options["offset"] != 0.0 || len(r.Options) != 2 {
			t.Errorf("options with empty values = %v, want limit 5 offset 0 only", r.Options)
		}
	})
}

func TestSearchValidation(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		e := newEnv(t, db)
		for _, c := range []struct{ query, field string }{
			{"limit=0", "limit"},
			{"limit=21", "limit"},
			{"limit=abc", "limit"},
			{"limit=5.5", "limit"},
			{"offset=1.5", "offset"},
			{"limit=5e0", "limit"},
			{"offset=-1", "offset"},
			{"from_timestamp=-5", "from_timestamp"},
			{"to_timestamp=x", "to_timestamp"},
			{"wait=yes", "wait"},
			{"subject_includes=" + strings.Repeat("a", 999), "subject_includes"},
			{"subject_includes=a%00b", "subject_includes"},
			{"from_addr_includes=%FF%FE", "from_addr_includes"},
			{"to_addr_prefix=%00", "to_addr_prefix"},
		} {
			var r errResp
			resp := e.get(e.key, "/api/emails/default/inbox?"+c.query, &r)
			if resp.StatusCode != 400 || r.StatusCode != 400 || r.Error != "Bad Request" || r.Code != "invalid_parameter" {
				t.Errorf("%s: got %d %+v", c.query, resp.StatusCode, r)
				continue
			}
			if len(r.Errors) != 1 || r.Errors[0].Field != c.field || len(r.Errors[0].Detail) != 1 || r.Errors[0].Detail[0].Description == "" {
				t.Errorf("%s: errors = %+v, want one for %s", c.query, r.Errors, c.field)
			}
		}
		var r errResp
		e.get(e.key, "/api/emails/default/inbox?limit=0&offset=-1", &r)
		if len(r.Errors) != 2 {
			t.Errorf("two bad parameters reported as %d errors", len(r.Errors))
		}
		if r.Message != "limit must be between 1 and 20; offset must be at least 0" {
			t.Errorf("message %q", r.Message)
		}
	})
}

func TestAuthAndIsolation(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		e := newEnv(t, db)
		id := e.deliver(e.ns, msg{from: "a@b.c", to: "x@default.localhost", subject: "s", extra: attachmentMIME})
		var r errResp
		resp := e.get("", "/api/emails/default/inbox", &r)
		if resp.StatusCode != 401 || r.Code != "missing_api_key" || resp.Header.Get("WWW-Authenticate") == "" {
			t.Errorf("no key: %d %+v", resp.StatusCode, r)
		}
		if resp.Header.Get("X-Request-Id") == "" {
			t.Error("no X-Request-Id")
		}
		resp = e.get("cbx_wrong", "/api/test", &r)
		if resp.StatusCode != 401 || r.Code != "invalid_api_key" {
			t.Errorf("wrong key: %d %+v", resp.StatusCode, r)
		}
		var em struct{ Data inbox.Email }
		e.get(e.key, "/api/emails/"+id, &em)
		if len(em.Data.Attachments) != 1 {
			t.Fatalf("attachments %+v", em.Data.Attachments)
		}
		attID := em.Data.Attachments[0].ID
		for _, p := range []string{
			"/api/emails/default/inbox", "/api/emails/default/latest", "/api/emails/" + id,
			"/api/emails/" + id + "/attachments", "/api/attachments/" + attID, "/api/smtp/default",
		} {
			if resp := e.get(e.otherKey, p, &r); resp.StatusCode != 404 {
				t.Errorf("other organisation GET %s: %d, want 404", p, resp.StatusCode)
			}
			if resp := e.get(e.key, p, nil); resp.StatusCode != 200 {
				t.Errorf("owner GET %s: %d, want 200", p, resp.StatusCode)
			}
		}
		for _, p := range []string{"/api/emails/not-a-uuid", "/api/attachments/not-a-uuid", "/api/emails/nosuchns/inbox"} {
			if resp := e.get(e.key, p, &r); resp.StatusCode != 404 {
				t.Errorf("GET %s: %d, want 404", p, resp.StatusCode)
			}
		}
	})
}

const attachmentMIME = "MIME-Version: 1.0\r\nContent-Type: multipart/mixed; boundary=b1\r\n\r\n" +
	"--b1\r\nContent-Type: text/plain\r\n\r\nSee attached.\r\n" +
	"--b1\r\nContent-Type: application/pdf; name=\"report.pdf\"\r\nContent-Disposition: attachment; filename=\"report.pdf\"\r\nContent-Transfer-Encoding: base64\r\n\r\nJVBERi0xLjQKJcfsj6IK\r\n" +
	"--b1--\r\n"

func TestAttachmentsAndSignedDownload(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		e := newEnv(t, db)
		id := e.deliver(e.ns, msg{from: "a@b.c", to: "x@default.localhost", subject: "with attachment", extra: attachmentMIME})
		var list struct{ Data []inbox.Attachment }
		if resp := e.get(e.key, "/api/emails/"+id+"/attachments", &list); resp.StatusCode != 200 || len(list.Data) != 1 {
			t.Fatalf("list: %d %+v", resp.StatusCode, list)
		}
		a := list.Data[0]
		if a.Filename != "report.pdf" || a.ContentType != "application/pdf" || a.Size != 15 || a.ExpiresAt == nil {
			t.Fatalf("attachment %+v", a)
		}
		var one struct{ Data inbox.Attachment }
		e.get(e.key, "/api/attachments/"+a.ID, &one)
		if one.Data.ID != a.ID || one.Data.DownloadURL == "" {
			t.Fatalf("get attachment %+v", one.Data)
		}
		// The link needs no key.
		resp, err := http.Get(one.Data.DownloadURL)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || string(body) != "%PDF-1.4\n%\xc7\xec\x8f\xa2\n" {
			t.Fatalf("download: %d %q", resp.StatusCode, body)
		}
		for h, want := range map[string]string{
			"Content-Type": "application/pdf", "X-Content-Type-Options": "nosniff", "Content-Security-Policy": "sandbox",
			"Content-Disposition": `attachment; filename="report.pdf"`,
		} {
			if got := resp.Header.Get(h); got != want {
				t.Errorf("%s = %q, want %q", h, got, want)
			}
		}
		// Tampering with the signature, the id or the expiry is a 404.
		u, _ := url.Parse(one.Data.DownloadURL)
		q := u.Query()
		tampered := []string{}
		q2 := url.Values{"expires": {q.Get("expires")}, "signature": {"AAAA" + q.Get("signature")[4:]}}
		tampered = append(tampered, u.Path+"?"+q2.Encode())
		q3 := url.Values{"expires": {q.Get("expires") + "0"}, "signature": {q.Get("signature")}}
		tampered = append(tampered, u.Path+"?"+q3.Encode())
		tampered = append(tampered, strings.Replace(u.Path, a.ID, tenant.NewID(), 1)+"?"+q.Encode())
		for _, p := range tampered {
			if resp := e.get("", p, nil); resp.StatusCode != 404 {
				t.Errorf("tampered %s: %d, want 404", p, resp.StatusCode)
			}
		}
		// After an hour the link has expired.
		e.clock.Store(time.Now().Add(61 * time.Minute).UnixMilli())
		if resp := e.get("", u.Path+"?"+q.Encode(), nil); resp.StatusCode != 404 {
			t.Errorf("expired link: %d, want 404", resp.StatusCode)
		}
	})
}

func TestLatestAndExpiry(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		e := newEnv(t, db)
		var r errResp
		if resp := e.get(e.key, "/api/emails/default/latest", &r); resp.StatusCode != 404 || r.Code != "no_emails" {
			t.Fatalf("empty latest: %d %+v", resp.StatusCode, r)
		}
		start := time.Now()
		e.clock.Store(start.UnixMilli())
		e.deliver(e.ns, msg{from: "a@b.c", to: "x@default.localhost", subject: "first", body: "1"})
		e.clock.Store(start.Add(time.Second).UnixMilli())
		id := e.deliver(e.ns, msg{from: "a@b.c", to: "x@default.localhost", subject: "second", body: "2", extra: ""})
		var latest struct{ Data inbox.Email }
		e.get(e.key, "/api/emails/default/latest", &latest)
		if latest.Data.ID != id || latest.Data.Subject != "second" {
			t.Fatalf("latest = %+v", latest.Data)
		}
		if latest.Data.ExpiresTimestamp != latest.Data.ReceivedTimestamp+int64(e.ns.RetentionTime) {
			t.Errorf("expires_timestamp %d, received %d, retention %d", latest.Data.ExpiresTimestamp, latest.Data.ReceivedTimestamp, e.ns.RetentionTime)
		}
		// Past the retention the emails are gone from every endpoint before the
		// reaper has run, and the reaper then deletes them.
		e.clock.Store(start.Add(time.Duration(e.ns.RetentionTime)*time.Second + 2*time.Second).UnixMilli())
		var s searchResp
		e.get(e.key, "/api/emails/default/inbox", &s)
		if s.TotalCount != 0 {
			t.Errorf("expired emails still searchable: %d", s.TotalCount)
		}
		if resp := e.get(e.key, "/api/emails/"+id, nil); resp.StatusCode != 404 {
			t.Errorf("expired email by id: %d", resp.StatusCode)
		}
		if resp := e.get(e.key, "/api/emails/default/latest", nil); resp.StatusCode != 404 {
			t.Errorf("expired latest: %d", resp.StatusCode)
		}
		n, err := inbox.Reap(context.Background(), db, time.UnixMilli(e.clock.Load()))
		if err != nil || n != 2 {
			t.Fatalf("Reap = %d, %v; want 2", n, err)
		}
		for _, table := range []string{"emails", "email_recipients", "raw_sources", "attachments"} {
			var c int
			db.QueryRow(context.Background(), "SELECT COUNT(*) FROM "+table).Scan(&c)
			if c != 0 {
				t.Errorf("%s has %d rows after reaping", table, c)
			}
		}
	})
}

func TestWaitIsAnsweredOnArrival(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		e := newEnv(t, db)
		e.api.WaitHold = time.Minute
		type result struct {
			resp *http.Response
			r    searchResp
		}
		const search = "/api/emails/default/inbox?subject_includes=token"
		done := make(chan result, 1)
		go func() {
			var r searchResp
			req, _ := http.NewRequestWithContext(t.Context(), "GET", e.srv.URL+search+"&wait=true", nil) // ended with the test
			req.Header.Set("X-Api-Key", e.key)
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				done <- result{}
				return
			}
			json.NewDecoder(resp.Body).Decode(&r)
			resp.Body.Close()
			done <- result{resp, r}
		}()
		// A non-matching arrival does not answer the wait: it is stored and
		// found by a search of its own, and the held search's own terms find
		// nothing, so the wait's answer below can hold only the match.
		waitForWaiters(t, e)
		e.deliver(e.ns, msg{from: "a@b.c", to: "x@default.localhost", subject: "unrelated", body: "x"})
		var r searchResp
		if e.get(e.key, "/api/emails/default/inbox?subject_includes=unrelated", &r); r.TotalCount != 1 {
			t.Fatalf("the non-matching email was not stored: %+v", r)
		}
		if e.get(e.key, search, &r); r.TotalCount != 0 {
			t.Fatalf("the held search's terms match the non-matching email: %+v", r)
		}
		select {
		case res := <-done:
			t.Fatalf("wait answered by a non-matching email: %+v", res)
		default:
		}
		e.deliver(e.ns, msg{from: "a@b.c", to: "x@default.localhost", subject: "your token", body: "x"})
		res := testkit.Receive(t, "the wait's answer", done)
		if res.resp == nil || res.resp.StatusCode != 200 || res.r.TotalCount != 1 || res.r.Data[0].Subject != "your token" {
			t.Fatalf("wait answered %+v", res)
		}
		if res.r.Options["wait"] != true {
			t.Errorf("options.wait = %v", res.r.Options["wait"])
		}
	})
}

// waitForWaiters blocks until a request is held (its subscription is open).
func waitForWaiters(t *testing.T, e *env) {
	t.Helper()
	hub := e.api.Notifier.(interface{ Waiters() int }) // notify.Hub, or notify.Postgres around one
	testkit.WaitFor(t, "the wait request held", func() bool { return hub.Waiters() > 0 })
}

func TestWaitRedirectsAfterHold(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		e := newEnv(t, db)
		path := "/api/emails/default/inbox?subject_includes=never&wait=1&limit=3"
		resp := e.get(e.key, path, nil)
		if resp.StatusCode != http.StatusTemporaryRedirect {
			t.Fatalf("status %d, want 307", resp.StatusCode)
		}
		if loc := resp.Header.Get("Location"); loc != path {
			t.Fatalf("Location %q, want %q", loc, path)
		}
		// A match already present is answered at once, without holding.
		e.deliver(e.ns, msg{from: "a@b.c", to: "x@default.localhost", subject: "never mind", body: "x"})
		var r searchResp
		if resp := e.get(e.key, path, &r); resp.StatusCode != 200 || r.TotalCount != 1 {
			t.Fatalf("status %d total %d", resp.StatusCode, r.TotalCount)
		}
	})
}

func TestMessageToTwoNamespacesIsStoredInEach(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		e := newEnv(t, db)
		ctx := context.Background()
		org, _ := e.tenants.OrgByName(ctx, "default")
		second, err := e.tenants.CreateNamespace(ctx, org.ID, "second", tenant.Settings{})
		if err != nil {
			t.Fatal(err)
		}
		m := msg{from: "a@b.c", to: "x@default.localhost, y@second.localhost", subject: "both", body: "x"}
		ids, err := e.ingester.Deliver(ctx, m.raw(), inbox.Envelope{}, []inbox.Target{
			{Namespace: e.ns, Recipients: []string{"x@default.localhost", "bcc@default.localhost"}},
			{Namespace: second, Recipients: []string{"y@second.localhost"}},
		})
		if err != nil || len(ids) != 2 || ids[0] == ids[1] {
			t.Fatalf("Deliver = %v, %v", ids, err)
		}
		var a, b struct{ Data inbox.Email }
		e.get(e.key, "/api/emails/"+ids[0], &a)
		e.get(e.key, "/api/emails/"+ids[1], &b)
		if len(a.Data.Bcc) != 1 || a.Data.Bcc[0].Address != "bcc@default.localhost" {
			t.Errorf("default bcc = %+v", a.Data.Bcc)
		}
		if len(b.Data.Bcc) != 0 {
			t.Errorf("second bcc = %+v (no blind recipients there)", b.Data.Bcc)
		}
		if len(a.Data.To) != 2 || a.Data.To[1].Address != "y@second.localhost" {
			t.Errorf("to = %+v", a.Data.To)
		}
	})
}

// Concurrent deliveries are committed in shared batches; every email of every
// batch must be findable by substring.
func TestSubstringSearchAfterConcurrentDelivery(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		e := newEnv(t, db)
		const n = 60
		var wg sync.WaitGroup
		for i := 0; i < n; i++ {
			wg.Add(1)
			go func(i int) {
				defer wg.Done()
				m := msg{from: fmt.Sprintf("sender%03d@example.com", i), to: fmt.Sprintf("rcpt%03d@default.localhost", i),
					subject: fmt.Sprintf("batch token zq%03dx", i), body: "x"}
				if _, err := e.ingester.Deliver(context.Background(), m.raw(), inbox.Envelope{}, []inbox.Target{{Namespace: e.ns, Recipients: []string{m.to}}}); err != nil {
					t.Error(err)
				}
			}(i)
		}
		wg.Wait()
		for i := 0; i < n; i++ {
			for _, q := range []string{
				fmt.Sprintf("subject_includes=zq%03dx", i),
				fmt.Sprintf("from_addr_includes=sender%03d@", i),
				fmt.Sprintf("to_addr_prefix=rcpt%03d@", i),
			} {
				var r searchResp
				e.get(e.key, "/api/emails/default/inbox?"+q, &r)
				if r.TotalCount != 1 {
					t.Errorf("%s: total_count %d, want 1", q, r.TotalCount)
				}
			}
		}
	})
}

// An unfiltered search's total_count is read from counters; it must always equal
// a real count of the namespace's unexpired emails.
func TestUnfilteredTotalMatchesCount(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		e := newEnv(t, db)
		ctx := context.Background()
		org, _ := e.tenants.OrgByName(ctx, "default")
		quota := 5
		small, err := e.tenants.CreateNamespace(ctx, org.ID, "small", tenant.Settings{QuotaLimit: &quota, RetentionTime: ptr(600)})
		if err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		check := func(step string, ns tenant.Namespace) {
			t.Helper()
			var want int
			db.QueryRow(ctx, "SELECT COUNT(*) FROM emails WHERE namespace_id = ? AND expires_ms > ?", ns.ID, e.clock.Load()).Scan(&want)
			var r searchResp
			e.get(e.key, "/api/emails/"+ns.Name+"/inbox", &r)
			if r.TotalCount != want {
				t.Fatalf("%s: total_count %d, real count %d", step, r.TotalCount, want)
			}
		}
		for i := 0; i < 8; i++ {
			e.clock.Store(start.Add(time.Duration(i) * time.Second).UnixMilli())
			e.deliver(small, msg{from: "a@b.c", to: "x@small.localhost", subject: fmt.Sprintf("m%d", i), body: "x"})
			e.deliver(e.ns, msg{from: "a@b.c", to: "x@default.localhost", subject: fmt.Sprintf("d%d", i), body: "x"})
			check(fmt.Sprintf("after delivery %d", i), small)
		}
		check("default", e.ns)
		// Past the small namespace's retention, before and after the reaper.
		e.clock.Store(start.Add(604 * time.Second).UnixMilli())
		check("expired, not reaped", small)
		if _, err := inbox.Reap(ctx, db, time.UnixMilli(e.clock.Load())); err != nil {
			t.Fatal(err)
		}
		check("reaped", small)
		check("default after reaping", e.ns)
		var r searchResp
		e.get(e.key, "/api/emails/small/inbox", &r)
		// The quota kept m3..m7; at 604 s those received at 3 s and 4 s have expired.
		if r.TotalCount != 3 {
			t.Fatalf("total_count %d, want 3 (m5, m6, m7)", r.TotalCount)
		}
	})
}

// A held search whose re-checks fail (the database restarting) keeps its hold and
// ends in the usual 307, rather than answering 500.
func TestHoldSurvivesFailingRechecks(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		e := newEnv(t, db)
		e.api.WaitHold = 1500 * time.Millisecond
		// Re-check every RecheckInterval. Degraded is first asked once the
		// first look has answered "not yet": the table goes away only then, so
		// that only re-checks fail (a failing first look is a 500 by design).
		held := make(chan struct{})
		var once sync.Once
		e.api.Degraded = func() bool { once.Do(func() { close(held) }); return true }
		type result struct {
			status int
			err    error
		}
		done := make(chan result, 1)
		go func() {
			req, _ := http.NewRequest("GET", e.srv.URL+"/api/emails/default/inbox?wait=true&subject_includes=never", nil)
			req.Header.Set("X-Api-Key", e.key)
			client := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
			resp, err := client.Do(req)
			if err != nil {
				done <- result{err: err}
				return
			}
			resp.Body.Close()
			done <- result{status: resp.StatusCode}
		}()
		select {
		case <-held:
		case res := <-done: // the hold ended before its first re-check (a slow first look)
			if res.err != nil || res.status != http.StatusTemporaryRedirect {
				t.Fatalf("held search answered %d (%v), want 307", res.status, res.err)
			}
			t.Skip("the first look outlasted the hold; nothing re-checked")
		}
		ctx := context.Background()
		if _, err := db.Exec(ctx, "ALTER TABLE emails RENAME TO emails_away"); err != nil {
			t.Fatal(err)
		}
		res := <-done
		if _, err := db.Exec(ctx, "ALTER TABLE emails_away RENAME TO emails"); err != nil {
			t.Fatal(err)
		}
		if res.err != nil || res.status != http.StatusTemporaryRedirect {
			t.Fatalf("held search with failing re-checks answered %d (%v), want 307", res.status, res.err)
		}
	})
}
