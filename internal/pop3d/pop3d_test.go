package pop3d

import (
	"bufio"
	"context"
	"encoding/base64"
	"fmt"
	"net"
	netsmtp "net/smtp"
	"strings"
	"testing"
	"time"

	"github.com/emersion/go-sasl"
	gosmtp "github.com/emersion/go-smtp"

	"github.com/catchbox/catchbox/internal/inbox"
	"github.com/catchbox/catchbox/internal/mailauth"
	"github.com/catchbox/catchbox/internal/notify"
	"github.com/catchbox/catchbox/internal/secret"
	"github.com/catchbox/catchbox/internal/smtpd"
	"github.com/catchbox/catchbox/internal/store"
	"github.com/catchbox/catchbox/internal/store/storetest"
	"github.com/catchbox/catchbox/internal/tenant"
	"github.com/catchbox/catchbox/internal/testkit"
)

// harness is an SMTP listener and a POP3 listener on 127.0.0.1:0 over one
// store, with namespaces "alpha" (organisation acme) and "gamma" (other).
type harness struct {
	t        *testing.T
	auth     *mailauth.Checker
	tenants  *tenant.Service
	searcher *inbox.Searcher
	pop3Addr string
	smtpAddr string
	ns       map[string]tenant.Namespace
}

func newHarness(t *testing.T, db *store.DB, cfg Config) *harness {
	t.Helper()
	ctx := context.Background()
	ts := tenant.NewService(db, secret.New([]byte("pop3d-test-secret-0123456789abcdef")), 720*time.Hour)
	h := &harness{t: t, tenants: ts, ns: map[string]tenant.Namespace{}, searcher: inbox.NewSearcher(db, inbox.DefaultColumnBudget)}
	for org, name := range map[string]string{"acme": "alpha", "other": "gamma"} {
		o, err := ts.CreateOrg(ctx, org, tenant.DefaultTOTPDeviceLimit, true)
		if err != nil {
			t.Fatal(err)
		}
		if h.ns[name], err = ts.CreateNamespace(ctx, o.ID, name, tenant.Settings{}); err != nil {
			t.Fatal(err)
		}
	}
	ing := inbox.NewIngester(db, notify.NewHub())
	t.Cleanup(ing.Close)
	auth := mailauth.New(ts, 3, time.Minute)
	h.auth = auth
	smtpSrv := smtpd.New(smtpd.Config{Auth: auth}, ts, ing)
	h.smtpAddr = testkit.Serve(t, smtpSrv.Shutdown, smtpSrv.Serve).Addrs[0]
	srv := New(cfg, auth, h.searcher)
	h.pop3Addr = testkit.Serve(t, srv.Shutdown, func(l net.Listener) error { return srv.Serve(l, false) }).Addrs[0]
	return h
}

func (h *harness) send(rcpt, raw string) {
	h.t.Helper()
	if err := netsmtp.SendMail(h.smtpAddr, nil, "app@example.org", []string{rcpt}, []byte(raw)); err != nil {
		h.t.Fatalf("send: %v", err)
	}
}

// serveTLS starts another POP3 listener with cfg, and a second one speaking
// implicit TLS, returning their addresses; both stop when the test ends.
func (h *harness) serveTLS(cfg Config) (plain, implicit string) {
	h.t.Helper()
	srv := New(cfg, h.auth, h.searcher)
	s := testkit.Serve(h.t, srv.Shutdown,
		func(l net.Listener) error { return srv.Serve(l, false) },
		func(l net.Listener) error { return srv.Serve(l, true) })
	return s.Addrs[0], s.Addrs[1]
}

// client speaks POP3 line by line.
type client struct {
	t  *testing.T
	nc net.Conn
	r  *bufio.Reader
}

func (h *harness) dial() *client {
	h.t.Helper()
	nc, err := net.Dial("tcp", h.pop3Addr)
	if err != nil {
		h.t.Fatal(err)
	}
	return h.client(nc)
}

// client reads the greeting on nc and returns a client speaking on it.
func (h *harness) client(nc net.Conn) *client {
	h.t.Helper()
	h.t.Cleanup(func() { nc.Close() })
	nc.SetDeadline(time.Now().Add(30 * time.Second)) // a guard against a hung test
	c := &client{t: h.t, nc: nc, r: bufio.NewReader(nc)}
	c.expect("+OK")
	return c
}

func (c *client) line() string {
	c.t.Helper()
	l, err := c.r.ReadString('\n')
	if err != nil {
		c.t.Fatalf("read: %v (got %q)", err, l)
	}
	return strings.TrimRight(l, "\r\n")
}

func (c *client) expect(prefix string) string {
	c.t.Helper()
	l := c.line()
	if !strings.HasPrefix(l, prefix) {
		c.t.Fatalf("got %q, want %s...", l, prefix)
	}
	return l
}

func (c *client) cmd(line, prefix string) string {
	c.t.Helper()
	fmt.Fprintf(c.nc, "%s\r\n", line)
	return c.expect(prefix)
}

// multi reads a multi-line body up to the "." line, undoing the stuffing.
func (c *client) multi() string {
	c.t.Helper()
	var b strings.Builder
	for {
		l := c.line()
		if l == "." {
			return b.String()
		}
		b.WriteString(strings.TrimPrefix(l, "."))
		b.WriteString("\r\n")
	}
}

const raw = "From: App <app@example.org>\r\nTo: a@alpha.localhost\r\nSubject: Hello POP3\r\nMessage-ID: <p1@example.org>\r\n\r\nfirst line\r\n.dotted line\r\nthird line\r\n"

// A message sent over SMTP is retrieved byte for byte; UIDL is its email id;
// TOP gives the header and the first lines; DELE then QUIT deletes it, and a
// session that ends without QUIT deletes nothing.
func TestRetrieveWhatSMTPStored(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		h := newHarness(t, db, Config{})
		h.send("a@alpha.localhost", raw)
		h.send("b@alpha.localhost", strings.Replace(raw, "p1@", "p2@", 1))

		c := h.dial()
		capa := c.cmd("CAPA", "+OK")
		_ = capa
		if body := c.multi(); !strings.Contains(body, "UIDL\r\n") || !strings.Contains(body, "TOP\r\n") || !strings.Contains(body, "SASL PLAIN LOGIN") {
			t.Fatalf("CAPA: %q", body)
		}
		c.cmd("USER alpha", "+OK")
		c.cmd("PASS "+h.tenants.SMTPPassword(h.ns["alpha"]), "+OK")
		if got := c.cmd("STAT", "+OK"); got != fmt.Sprintf("+OK 2 %d", 2*len(raw)) {
			t.Fatalf("STAT %q", got)
		}
		c.cmd("RETR 1", fmt.Sprintf("+OK %d octets", len(raw)))
		if got := c.multi(); got != raw {
			t.Fatalf("RETR:\n%q\nwant\n%q", got, raw)
		}
		c.cmd("TOP 1 1", "+OK")
		if got, want := c.multi(), raw[:strings.Index(raw, ".dotted")]; got != want {
			t.Fatalf("TOP 1 1:\n%q\nwant\n%q", got, want)
		}
		res, err := h.searcher.Search(context.Background(), inbox.Query{NamespaceID: h.ns["alpha"].ID, Limit: 10})
		if err != nil {
			t.Fatal(err)
		}
		oldest := res.Emails[1].ID
		if got := c.cmd("UIDL 1", "+OK"); got != "+OK 1 "+oldest {
			t.Fatalf("UIDL 1 %q, want the email id %s", got, oldest)
		}
		c.cmd("DELE 1", "+OK")
		c.cmd("DELE 1", "-ERR")
		c.cmd("LIST", "+OK")
		if got := c.multi(); got != fmt.Sprintf("2 %d\r\n", len(raw)) {
			t.Fatalf("LIST after DELE: %q", got)
		}
		// Another session ends without QUIT: its DELE is not done.
		other := h.dial()
		other.cmd("USER alpha", "+OK")
		other.cmd("PASS "+h.tenants.SMTPPassword(h.ns["alpha"]), "+OK")
		other.cmd("DELE 2", "+OK")
		other.nc.Close()

		c.cmd("QUIT", "+OK")
		eventuallyCount(t, h, 1)
	})
}

// eventuallyCount waits until alpha holds want emails.
func eventuallyCount(t *testing.T, h *harness, want int) {
	t.Helper()
	testkit.Await(t, fmt.Sprintf("%d emails in alpha", want), func() (int, bool) {
		n, err := h.searcher.Count(context.Background(), h.ns["alpha"].ID)
		if err != nil {
			t.Fatal(err)
		}
		return n, n == want
	})
}

// Wrong credentials, and another organisation's namespace with this one's
// password, are refused; after the attempts allowed, the address is refused
// whatever it sends, and AUTH PLAIN works with the right ones.
func TestLoginRefusals(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		h := newHarness(t, db, Config{})
		c := h.dial()
		c.cmd("STAT", "-ERR")
		c.cmd("USER alpha", "+OK")
		c.cmd("PASS wrong", "-ERR [AUTH]")
		c.cmd("USER gamma", "+OK")
		c.cmd("PASS "+h.tenants.SMTPPassword(h.ns["alpha"]), "-ERR [AUTH]")
		good := base64.StdEncoding.EncodeToString([]byte("\x00alpha\x00" + h.tenants.SMTPPassword(h.ns["alpha"])))
		c.cmd("AUTH PLAIN "+good, "+OK")
		c.cmd("QUIT", "+OK")

		bad := h.dial()
		bad.cmd("USER alpha", "+OK")
		bad.cmd("PASS wrong", "-ERR [AUTH]")
		bad.cmd("USER alpha", "+OK")
		bad.cmd("PASS "+h.tenants.SMTPPassword(h.ns["alpha"]), "-ERR [AUTH] Too many")
		if _, err := bad.r.ReadString('\n'); err == nil {
			t.Fatal("the connection stayed open after the throttled login")
		}
	})
}

// A client that never sends is told so and closed; a line too long is refused.
func TestSilentAndLongLines(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		h := newHarness(t, db, Config{CommandTimeout: 200 * time.Millisecond})
		c := h.dial()
		c.expect("-ERR Autologout")
		if _, err := c.r.ReadString('\n'); err == nil {
			t.Fatal("the silent connection stayed open")
		}
		long := h.dial()
		fmt.Fprintf(long.nc, "USER %s\r\n", strings.Repeat("x", 1000))
		long.expect("-ERR Line too long")
	})
}

// Failed logins count once per address across SMTP AUTH and POP3 (one
// mailauth.Checker): two failed SMTP AUTHs and one failed POP3 login use up
// the three attempts, and the next POP3 login is refused whatever it sends.
func TestThrottleSharedWithSMTP(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		h := newHarness(t, db, Config{})
		for i := 0; i < 2; i++ {
			c, err := gosmtp.Dial(h.smtpAddr)
			if err != nil {
				t.Fatal(err)
			}
			if err := c.Auth(sasl.NewPlainClient("", "alpha", "wrong")); err == nil {
				t.Fatal("a wrong SMTP AUTH was accepted")
			}
			c.Close()
		}
		c := h.dial()
		c.cmd("USER alpha", "+OK")
		c.cmd("PASS wrong", "-ERR [AUTH] Authentication failed")
		c.cmd("USER alpha", "+OK")
		c.cmd("PASS "+h.tenants.SMTPPassword(h.ns["alpha"]), "-ERR [AUTH] Too many")
	})
}
