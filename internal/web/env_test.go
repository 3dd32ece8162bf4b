package web_test

import (
	"context"
	"io"
	"net"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/catchbox/catchbox/internal/config"
	"github.com/catchbox/catchbox/internal/inbox"
	"github.com/catchbox/catchbox/internal/server"
	"github.com/catchbox/catchbox/internal/server/servertest"
	"github.com/catchbox/catchbox/internal/store"
	"github.com/catchbox/catchbox/internal/tenant"
	"github.com/catchbox/catchbox/internal/testkit"
)

// env is the whole service as catchbox serve builds it (servertest), with
// two organisations, each with a user and a namespace: "default" (alice)
// and "other" (bob, namespace "elsewhere").
type env struct {
	t     *testing.T
	svc   *server.Service
	base  string
	clock *testkit.Clock
	org   tenant.Org
	other tenant.Org
	key   string
	alice tenant.User
	bob   tenant.User
}

const password = "correct horse battery"

func newEnv(t *testing.T, db *store.DB, change func(*config.Serve)) *env {
	t.Helper()
	ctx := context.Background()
	cfg := servertest.Config(t)
	if change != nil {
		change(&cfg)
	}
	svc := servertest.New(t, db, cfg)
	e := &env{t: t, svc: svc, key: svc.NewKey, clock: testkit.NewClock(time.Now())}
	svc.Sessions.SetClock(e.clock.Now)
	svc.Web.Now = e.clock.Now
	var err error
	if e.org, err = svc.Tenants.OrgByName(ctx, tenant.DefaultName); err != nil {
		t.Fatal(err)
	}
	if e.other, err = svc.Tenants.CreateOrg(ctx, "other", 100, true); err != nil {
		t.Fatal(err)
	}
	if _, err := svc.Tenants.CreateNamespace(ctx, e.other.ID, "elsewhere", tenant.Settings{}); err != nil {
		t.Fatal(err)
	}
	if e.alice, err = svc.Tenants.CreateUser(ctx, "Alice@Example.com", password, e.org.ID); err != nil {
		t.Fatal(err)
	}
	if e.bob, err = svc.Tenants.CreateUser(ctx, "bob@example.com", password, e.other.ID); err != nil {
		t.Fatal(err)
	}
	e.base = servertest.Serve(t, svc).URL
	return e
}

// browser is a client with a cookie jar that does not follow redirects, and
// sends the headers a browser sends on a same-origin form post.
type browser struct {
	e      *env
	client *http.Client
	jar    *cookiejar.Jar
}

func (e *env) browser() *browser {
	jar, _ := cookiejar.New(nil)
	return &browser{e: e, jar: jar, client: &http.Client{Jar: jar,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}}
}

// browserFrom is a browser whose connections come from the local address ip
// (Linux routes all of 127.0.0.0/8 to the loopback interface), so that the
// per-address throttles see distinct clients on one machine.
func (e *env) browserFrom(ip string) *browser {
	b := e.browser()
	d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(ip)}, Timeout: 10 * time.Second}
	tr := &http.Transport{DialContext: d.DialContext}
	e.t.Cleanup(tr.CloseIdleConnections)
	b.client.Transport = tr
	return b
}

type page struct {
	status int
	header http.Header
	body   string
}

func (b *browser) do(method, path string, form url.Values, hdr map[string]string) page {
	b.e.t.Helper()
	var body io.Reader
	if form != nil {
		body = strings.NewReader(form.Encode())
	}
	req, err := http.NewRequest(method, b.e.base+path, body)
	if err != nil {
		b.e.t.Fatal(err)
	}
	if form != nil {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	if method != http.MethodGet {
		req.Header.Set("Sec-Fetch-Site", "same-origin")
		req.Header.Set("Origin", b.e.base)
	}
	for k, v := range hdr {
		if v == "" {
			req.Header.Del(k)
		} else {
			req.Header.Set(k, v)
		}
	}
	resp, err := b.client.Do(req)
	if err != nil {
		b.e.t.Fatal(err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	return page{status: resp.StatusCode, header: resp.Header, body: string(data)}
}

func (b *browser) get(path string) page { b.e.t.Helper(); return b.do(http.MethodGet, path, nil, nil) }
func (b *browser) post(path string, form url.Values) page {
	b.e.t.Helper()
	if form == nil {
		form = url.Values{}
	}
	return b.do(http.MethodPost, path, form, nil)
}

// signIn signs the browser in and fails the test unless it worked.
func (b *browser) signIn(email string) page {
	b.e.t.Helper()
	p := b.post("/signin", url.Values{"email": {email}, "password": {password}})
	if p.status != http.StatusSeeOther {
		b.e.t.Fatalf("sign in as %s: %d %s", email, p.status, p.body)
	}
	return p
}

// session is the browser's session cookie value, "" without one.
func (b *browser) session() string {
	u, _ := url.Parse(b.e.base)
	for _, c := range b.jar.Cookies(u) {
		if c.Name == tenant.SessionCookie {
			return c.Value
		}
	}
	return ""
}

// deliver stores a message in the namespace as the SMTP listener would.
func (e *env) deliver(namespace, raw string) string {
	e.t.Helper()
	ctx := context.Background()
	ns, err := e.svc.Tenants.NamespaceByName(ctx, namespace)
	if err != nil {
		e.t.Fatal(err)
	}
	ids, err := e.svc.Ingester.Deliver(ctx, []byte(strings.ReplaceAll(raw, "\n", "\r\n")),
		inbox.Envelope{ClientIP: "127.0.0.1", Helo: "client.test", MailFrom: "sender@example.com"},
		[]inbox.Target{{Namespace: ns, Recipients: []string{"someone@" + namespace + ".localhost"}}})
	if err != nil {
		e.t.Fatal(err)
	}
	return ids[0]
}

func mail(subject, body string) string {
	return "From: Sender <sender@example.com>\nTo: someone@x.localhost\nSubject: " + subject +
		"\nContent-Type: text/plain; charset=utf-8\n\n" + body + "\n"
}

func mustContain(t *testing.T, p page, what ...string) {
	t.Helper()
	for _, w := range what {
		if !strings.Contains(p.body, w) {
			t.Fatalf("page (status %d) lacks %q:\n%s", p.status, w, p.body)
		}
	}
}

func mustLack(t *testing.T, p page, what ...string) {
	t.Helper()
	for _, w := range what {
		if strings.Contains(p.body, w) {
			t.Fatalf("page (status %d) shows %q:\n%s", p.status, w, p.body)
		}
	}
}
