package imapd

import (
	"context"
	"fmt"
	"net"
	netsmtp "net/smtp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/emersion/go-imap/v2"
	"github.com/emersion/go-imap/v2/imapclient"

	"github.com/catchbox/catchbox/internal/inbox"
	"github.com/catchbox/catchbox/internal/mailauth"
	"github.com/catchbox/catchbox/internal/notify"
	"github.com/catchbox/catchbox/internal/secret"
	"github.com/catchbox/catchbox/internal/smtpd"
	"github.com/catchbox/catchbox/internal/store"
	"github.com/catchbox/catchbox/internal/tenant"
	"github.com/catchbox/catchbox/internal/testkit"
)

// harness is an SMTP listener and an IMAP listener on 127.0.0.1:0 over one
// store, sharing one credential check, with namespaces "alpha" and "beta" of
// organisation acme and "gamma" of organisation other.
type harness struct {
	t         *testing.T
	db        *store.DB
	tenants   *tenant.Service
	searcher  *inbox.Searcher
	ingester  *inbox.Ingester
	notifier  notify.Notifier
	auth      *mailauth.Checker
	srv       *Server
	imapAddr  string
	imapsAddr string // the implicit TLS listener's, when started
	smtpAddr  string
	ns        map[string]tenant.Namespace
}

func newHarness(t *testing.T, db *store.DB, cfg Config) *harness {
	t.Helper()
	ctx := context.Background()
	ts := tenant.NewService(db, secret.New([]byte("imapd-test-secret-0123456789abcdef")), 720*time.Hour)
	h := &harness{t: t, db: db, tenants: ts, ns: map[string]tenant.Namespace{}, notifier: notify.NewHub()}
	for org, names := range map[string][]string{"acme": {"alpha", "beta"}, "other": {"gamma"}} {
		o, err := ts.CreateOrg(ctx, org, tenant.DefaultTOTPDeviceLimit, true)
		if err != nil {
			t.Fatalf("create org: %v", err)
		}
		for _, name := range names {
			ns, err := ts.CreateNamespace(ctx, o.ID, name, tenant.Settings{})
			if err != nil {
				t.Fatalf("create namespace %s: %v", name, err)
			}
			h.ns[name] = ns
		}
	}
	h.searcher = inbox.NewSearcher(db, inbox.DefaultColumnBudget)
	h.ingester = inbox.NewIngester(db, h.notifier)
	t.Cleanup(h.ingester.Close)
	h.auth = mailauth.New(ts, 10, time.Minute)

	smtpSrv := smtpd.New(smtpd.Config{Auth: h.auth}, ts, h.ingester)
	h.smtpAddr = testkit.Serve(t, smtpSrv.Shutdown, smtpSrv.Serve).Addrs[0]
	h.serve(cfg)
	return h
}

// serve starts an IMAP listener; it is shut down when the test ends.
func (h *harness) serve(cfg Config) {
	h.serveListeners(cfg, false)
}

// serveListeners starts an IMAP listener, and with implicitTLS a second one
// speaking implicit TLS (its address in h.imapsAddr).
func (h *harness) serveListeners(cfg Config, implicitTLS bool) {
	h.t.Helper()
	srv := New(cfg, h.auth, h.tenants, h.searcher, h.ingester, h.notifier)
	serves := []func(net.Listener) error{func(l net.Listener) error { return srv.Serve(l, false) }}
	if implicitTLS {
		serves = append(serves, func(l net.Listener) error { return srv.Serve(l, true) })
	}
	s := testkit.Serve(h.t, srv.Shutdown, serves...)
	h.srv, h.imapAddr = srv, s.Addrs[0]
	if implicitTLS {
		h.imapsAddr = s.Addrs[1]
	}
}

func (h *harness) password(name string) string { return h.tenants.SMTPPassword(h.ns[name]) }

// send sends raw over SMTP to rcpt, as a test's application would; it
// returns once the server answered 250 (the message is stored).
func (h *harness) send(rcpt, raw string) {
	h.t.Helper()
	if err := netsmtp.SendMail(h.smtpAddr, nil, "app@example.org", []string{rcpt}, []byte(raw)); err != nil {
		h.t.Fatalf("send to %s: %v", rcpt, err)
	}
}

// message is a small RFC 5322 message with a distinct Message-ID.
var messageSeq struct {
	sync.Mutex
	n int
}

func message(to, subject, body string) string {
	messageSeq.Lock()
	messageSeq.n++
	n := messageSeq.n
	messageSeq.Unlock()
	return strings.Join([]string{
		"From: App <app@example.org>",
		"To: " + to,
		"Subject: " + subject,
		"Date: Sun, 22 Nov 2026 03:23:50 +0000",
		fmt.Sprintf("Message-ID: <m%d@example.org>", n),
		"MIME-Version: 1.0",
		"Content-Type: text/plain; charset=utf-8",
		"",
		body,
		"",
	}, "\r\n")
}

// dial returns a logged-out go-imap client, closed when the test ends.
func (h *harness) dial(opts *imapclient.Options) *imapclient.Client {
	h.t.Helper()
	c, err := imapclient.DialInsecure(h.imapAddr, opts)
	if err != nil {
		h.t.Fatalf("dial IMAP: %v", err)
	}
	h.t.Cleanup(func() { c.Close() })
	return c
}

// login dials and logs in as the namespace, and selects INBOX.
func (h *harness) login(name string, opts *imapclient.Options) *imapclient.Client {
	c, _ := h.loginSelect(name, opts)
	return c
}

func (h *harness) loginSelect(name string, opts *imapclient.Options) (*imapclient.Client, *imap.SelectData) {
	h.t.Helper()
	c := h.dial(opts)
	if err := c.Login(name, h.password(name)).Wait(); err != nil {
		h.t.Fatalf("login %s: %v", name, err)
	}
	data, err := c.Select("INBOX", nil).Wait()
	if err != nil {
		h.t.Fatalf("select: %v", err)
	}
	return c, data
}
