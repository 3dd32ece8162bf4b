package smtpd

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"math/big"
	"net"
	netsmtp "net/smtp"
	"net/textproto"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/emersion/go-sasl"
	"github.com/emersion/go-smtp"

	"github.com/catchbox/catchbox/internal/inbox"
	"github.com/catchbox/catchbox/internal/notify"
	"github.com/catchbox/catchbox/internal/secret"
	"github.com/catchbox/catchbox/internal/store"
	"github.com/catchbox/catchbox/internal/store/storetest"
	"github.com/catchbox/catchbox/internal/tenant"
	"github.com/catchbox/catchbox/internal/testkit"
)

// harness is a listener on 127.0.0.1:0 over a fresh store holding namespaces
// "alpha" and "beta" of one organisation.
type harness struct {
	t        *testing.T
	db       *store.DB
	tenants  *tenant.Service
	ingester *inbox.Ingester
	srv      *Server
	addr     string
	ns       map[string]tenant.Namespace

	// serveResult waits for the current listener's Serve to return.
	serveResult func() error
}

func newHarness(t *testing.T, db *store.DB, cfg Config) *harness {
	t.Helper()
	ctx := context.Background()
	ts := tenant.NewService(db, secret.New([]byte("smtpd-test-secret-0123456789abcdef")), 720*time.Hour)
	org, err := ts.CreateOrg(ctx, "acme", tenant.DefaultTOTPDeviceLimit, true)
	if err != nil {
		t.Fatalf("create org: %v", err)
	}
	h := &harness{t: t, db: db, tenants: ts, ns: map[string]tenant.Namespace{}}
	for _, name := range []string{"alpha", "beta"} {
		ns, err := ts.CreateNamespace(ctx, org.ID, name, tenant.Settings{})
		if err != nil {
			t.Fatalf("create namespace %s: %v", name, err)
		}
		h.ns[name] = ns
	}
	h.ingester = inbox.NewIngester(db, notify.NewHub())
	t.Cleanup(h.ingester.Close)
	h.serve(cfg, h.ingester)
	return h
}

// serve starts a listener; it is shut down when the test ends.
func (h *harness) serve(cfg Config, in *inbox.Ingester) {
	h.t.Helper()
	srv := New(cfg, h.tenants, in)
	s := testkit.Serve(h.t, srv.Shutdown, srv.Serve)
	h.srv, h.addr, h.serveResult = srv, s.Addrs[0], s.Wait
}

func (h *harness) password(name string) string { return h.tenants.SMTPPassword(h.ns[name]) }

// dial returns a go-smtp client, closed when the test ends.
func (h *harness) dial() *smtp.Client {
	h.t.Helper()
	c, err := smtp.Dial(h.addr)
	if err != nil {
		h.t.Fatalf("dial: %v", err)
	}
	h.t.Cleanup(func() { c.Close() })
	return c
}

// rawClient speaks SMTP line by line, to see exact replies and closes.
type rawClient struct {
	t  *testing.T
	nc net.Conn
	tp *textproto.Conn
}

func (h *harness) raw() *rawClient {
	h.t.Helper()
	nc, err := net.Dial("tcp", h.addr)
	if err != nil {
		h.t.Fatalf("dial: %v", err)
	}
	h.t.Cleanup(func() { nc.Close() })
	// A guard against a hung test, not a timing assertion.
	nc.SetDeadline(time.Now().Add(30 * time.Second))
	return &rawClient{t: h.t, nc: nc, tp: textproto.NewConn(nc)}
}

// reply reads one reply; err is set when the connection ended instead.
func (r *rawClient) reply() (int, string, error) {
	code, msg, err := r.tp.ReadResponse(0)
	var protoErr *textproto.Error
	if errors.As(err, &protoErr) {
		return protoErr.Code, protoErr.Msg, nil
	}
	return code, msg, err
}

func (r *rawClient) mustReply(want int) string {
	r.t.Helper()
	code, msg, err := r.reply()
	if err != nil {
		r.t.Fatalf("read reply: %v", err)
	}
	if code != want {
		r.t.Fatalf("reply %d %s, want %d", code, msg, want)
	}
	return msg
}

func (r *rawClient) send(line string) {
	r.t.Helper()
	if err := r.tp.PrintfLine("%s", line); err != nil {
		r.t.Fatalf("send %q: %v", line, err)
	}
}

func (r *rawClient) cmd(line string, want int) string {
	r.t.Helper()
	r.send(line)
	return r.mustReply(want)
}

// expectClosed reads until the server closes the connection.
func (r *rawClient) expectClosed() {
	r.t.Helper()
	if _, err := io.ReadAll(r.tp.R); err != nil {
		r.t.Fatalf("connection not closed by the server: %v", err)
	}
}

func message(from, to, subject, body string) []byte {
	return []byte("From: " + from + "\r\nTo: " + to + "\r\nSubject: " + subject +
		"\r\nMessage-ID: <" + subject + "@test>\r\nContent-Type: text/plain; charset=utf-8\r\n\r\n" + body + "\r\n")
}

// send runs one transaction on a go-smtp client.
func send(c *smtp.Client, from string, to []string, msg []byte) error {
	return c.SendMail(from, to, bytes.NewReader(msg))
}

func wantSMTPError(t *testing.T, err error, code int, enhanced smtp.EnhancedCode) {
	t.Helper()
	var se *smtp.SMTPError
	if !errors.As(err, &se) {
		t.Fatalf("got %v, want SMTP error %d %v", err, code, enhanced)
	}
	if se.Code != code || se.EnhancedCode != enhanced {
		t.Fatalf("got %d %v %q, want %d %v", se.Code, se.EnhancedCode, se.Message, code, enhanced)
	}
}

type storedEmail struct {
	ID, ClientIP, Helo, MailFrom, Subject string
}

func (h *harness) emails(ns string) []storedEmail {
	h.t.Helper()
	rows, err := h.db.Query(context.Background(), `SELECT e.id, e.client_ip, e.helo, e.mail_from, e.subject
		FROM emails e WHERE e.namespace_id = ? ORDER BY e.seq`, h.ns[ns].ID)
	if err != nil {
		h.t.Fatalf("query emails: %v", err)
	}
	defer rows.Close()
	var out []storedEmail
	for rows.Next() {
		var e storedEmail
		if err := rows.Scan(&e.ID, &e.ClientIP, &e.Helo, &e.MailFrom, &e.Subject); err != nil {
			h.t.Fatalf("scan email: %v", err)
		}
		out = append(out, e)
	}
	if err := rows.Err(); err != nil {
		h.t.Fatalf("query emails: %v", err)
	}
	return out
}

func (h *harness) recipients(emailID string) []string {
	h.t.Helper()
	rows, err := h.db.Query(context.Background(), `SELECT r.addr FROM email_recipients r
		JOIN emails e ON e.seq = r.email_seq WHERE e.id = ? ORDER BY r.addr`, emailID)
	if err != nil {
		h.t.Fatalf("query recipients: %v", err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var a string
		if err := rows.Scan(&a); err != nil {
			h.t.Fatalf("scan recipient: %v", err)
		}
		out = append(out, a)
	}
	return out
}

func (h *harness) rawSource(emailID string) []byte {
	h.t.Helper()
	data, err := inbox.NewSearcher(h.db, inbox.DefaultColumnBudget).RawMessage(context.Background(), emailID)
	if err != nil {
		h.t.Fatalf("read raw message: %v", err)
	}
	return data
}

func TestMXDelivery(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		h := newHarness(t, db, Config{})
		c, err := netsmtp.Dial(h.addr)
		if err != nil {
			t.Fatalf("dial: %v", err)
		}
		defer c.Close()
		if err := c.Hello("client.example"); err != nil {
			t.Fatalf("hello: %v", err)
		}
		for _, ext := range []string{"8BITMIME", "SMTPUTF8", "PIPELINING", "ENHANCEDSTATUSCODES"} {
			if ok, _ := c.Extension(ext); !ok {
				t.Errorf("%s not advertised", ext)
			}
		}
		if ok, size := c.Extension("SIZE"); !ok || size != fmt.Sprint(DefaultMaxMessageBytes) {
			t.Errorf("SIZE %q advertised, want %d", size, DefaultMaxMessageBytes)
		}
		if ok, _ := c.Extension("STARTTLS"); ok {
			t.Error("STARTTLS advertised without a certificate")
		}
		if ok, mechs := c.Extension("AUTH"); !ok || mechs != "PLAIN LOGIN" {
			t.Errorf("AUTH %q, want PLAIN LOGIN", mechs)
		}
		if err := c.Mail("sender@example.org"); err != nil {
			t.Fatalf("mail: %v", err)
		}
		// The domain matches without regard to case; the hidden copy has no
		// header of its own.
		for _, rcpt := range []string{"User@Alpha.LOCALHOST", "hidden@alpha.localhost"} {
			if err := c.Rcpt(rcpt); err != nil {
				t.Fatalf("rcpt %s: %v", rcpt, err)
			}
		}
		w, err := c.Data()
		if err != nil {
			t.Fatalf("data: %v", err)
		}
		w.Write(message("sender@example.org", "User@Alpha.LOCALHOST", "hello-mx", "Grüße"))
		if err := w.Close(); err != nil {
			t.Fatalf("end of data: %v", err)
		}
		if err := c.Quit(); err != nil {
			t.Fatalf("quit: %v", err)
		}

		got := h.emails("alpha")
		if len(got) != 1 {
			t.Fatalf("%d emails stored in alpha, want 1", len(got))
		}
		e := got[0]
		if e.ClientIP != "127.0.0.1" || e.Helo != "client.example" || e.MailFrom != "sender@example.org" || e.Subject != "hello-mx" {
			t.Errorf("stored %+v", e)
		}
		if rcpts := h.recipients(e.ID); !slices.Equal(rcpts, []string{"hidden@alpha.localhost", "user@alpha.localhost"}) {
			t.Errorf("recipients %q", rcpts)
		}
		raw := h.rawSource(e.ID)
		// The raw source is exactly the bytes received: nothing added, nothing lost.
		if want := message("sender@example.org", "User@Alpha.LOCALHOST", "hello-mx", "Grüße"); !bytes.Equal(raw, want) {
			t.Errorf("raw source differs from the message sent:\n%q\nwant\n%q", raw, want)
		}
		if n := len(h.emails("beta")); n != 0 {
			t.Errorf("%d emails in beta, want 0", n)
		}
	})
}

func TestRecipientReplies(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		h := newHarness(t, db, Config{})
		c := h.dial()
		if err := c.Mail("sender@example.org", nil); err != nil {
			t.Fatalf("mail: %v", err)
		}
		for _, tc := range []struct {
			rcpt     string
			code     int
			enhanced smtp.EnhancedCode
		}{
			{"a@nosuch.localhost", 550, smtp.EnhancedCode{5, 1, 1}},
			{"a@example.com", 550, smtp.EnhancedCode{5, 1, 1}},
			{"a@localhost", 550, smtp.EnhancedCode{5, 1, 1}},
			{"a@x.alpha.localhost", 550, smtp.EnhancedCode{5, 1, 1}},
			{"a@share.localhost", 550, smtp.EnhancedCode{5, 1, 1}},
			{"a@[127.0.0.1]", 550, smtp.EnhancedCode{5, 1, 1}},
			{"a@alpha..localhost", 550, smtp.EnhancedCode{5, 1, 3}},
			{"a@-alpha.localhost", 550, smtp.EnhancedCode{5, 1, 3}},
			{"a@al_pha.localhost", 550, smtp.EnhancedCode{5, 1, 3}},
			{"a@alpha.localhost:25", 550, smtp.EnhancedCode{5, 1, 3}},
			{"a\x01b@alpha.localhost", 550, smtp.EnhancedCode{5, 1, 3}},
			{"josé@alpha.localhost", 553, smtp.EnhancedCode{5, 6, 7}},
			// go-smtp's path parser refuses a mailbox without a domain.
			{"postmaster", 501, smtp.EnhancedCode{5, 5, 2}},
			{"a@alpha.localhost", 250, smtp.EnhancedCode{}},
			{"b@ALPHA.localhost.", 250, smtp.EnhancedCode{}},
			{`"first last"@alpha.localhost`, 250, smtp.EnhancedCode{}},
			// A source route is ignored (RFC 5321 section 4.1.1.3).
			{"@relay.example:c@alpha.localhost", 250, smtp.EnhancedCode{}},
		} {
			err := c.Rcpt(tc.rcpt, nil)
			if tc.code == 250 {
				if err != nil {
					t.Errorf("rcpt %s: %v", tc.rcpt, err)
				}
				continue
			}
			var se *smtp.SMTPError
			if !errors.As(err, &se) || se.Code != tc.code || se.EnhancedCode != tc.enhanced {
				t.Errorf("rcpt %s: got %v, want %d %v", tc.rcpt, err, tc.code, tc.enhanced)
			}
			// Without a catch-all, the 550 says which addresses are taken.
			if tc.enhanced == (smtp.EnhancedCode{5, 1, 1}) && (se == nil || !strings.Contains(se.Message, "<anything>@<namespace>.localhost")) {
				t.Errorf("rcpt %s: %v does not name the accepted form", tc.rcpt, err)
			}
		}
		w, err := c.Data()
		if err != nil {
			t.Fatalf("data: %v", err)
		}
		w.Write(message("sender@example.org", "a@alpha.localhost", "replies", "body"))
		if err := w.Close(); err != nil {
			t.Fatalf("end of data: %v", err)
		}
		got := h.emails("alpha")
		if len(got) != 1 {
			t.Fatalf("%d emails, want 1", len(got))
		}
		want := []string{"a@alpha.localhost", "b@alpha.localhost", "c@alpha.localhost", "first last@alpha.localhost"}
		if rcpts := h.recipients(got[0].ID); !slices.Equal(rcpts, want) {
			t.Errorf("recipients %q, want %q", rcpts, want)
		}

		// With SMTPUTF8 a non-ASCII address is accepted.
		if err := c.Mail("sénder@example.org", &smtp.MailOptions{UTF8: true}); err != nil {
			t.Fatalf("mail SMTPUTF8: %v", err)
		}
		if err := c.Rcpt("josé@alpha.localhost", nil); err != nil {
			t.Fatalf("rcpt SMTPUTF8: %v", err)
		}
		if err := c.Reset(); err != nil {
			t.Fatalf("rset: %v", err)
		}
	})
}

// TestCatchAll: with a catch-all namespace, a recipient of no namespace
// (another domain, the bare mail domain, an unknown namespace, an address
// literal) is stored there, its address kept; recipients of a namespace still
// reach it; a return path's form is never caught; a client authenticated as a
// namespace still sends to it alone; and a catch-all namespace that does not
// exist refuses as if there were none.
func TestCatchAll(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		h := newHarness(t, db, Config{CatchAll: "beta"})
		c := h.dial()
		if err := c.Mail("app@example.org", nil); err != nil {
			t.Fatal(err)
		}
		for _, rcpt := range []string{"Someone@Example.com", "a@nosuch.localhost", "b@localhost", "c@x.alpha.localhost", "d@[127.0.0.1]", "e@alpha.localhost"} {
			if err := c.Rcpt(rcpt, nil); err != nil {
				t.Errorf("rcpt %s: %v", rcpt, err)
			}
		}
		wantSMTPError(t, c.Rcpt("bounce+01a21259-c6d7-7706-be06-9ea19d32b4ba.0123456789abcdef@localhost", nil), 550, smtp.EnhancedCode{5, 1, 1})
		wantSMTPError(t, c.Rcpt("a@alpha..localhost", nil), 550, smtp.EnhancedCode{5, 1, 3})
		w, err := c.Data()
		if err != nil {
			t.Fatal(err)
		}
		w.Write(message("app@example.org", "Someone@Example.com", "caught", "hello"))
		if err := w.Close(); err != nil {
			t.Fatalf("end of data: %v", err)
		}
		caught := h.emails("beta")
		if len(caught) != 1 || caught[0].Subject != "caught" {
			t.Fatalf("beta holds %+v, want the caught message", caught)
		}
		want := []string{"a@nosuch.localhost", "b@localhost", "c@x.alpha.localhost", "d@[127.0.0.1]", "someone@example.com"}
		if got := h.recipients(caught[0].ID); !slices.Equal(got, want) {
			t.Errorf("caught recipients %q, want %q", got, want)
		}
		// alpha's copy: its own envelope recipient and the header's To.
		if got := h.emails("alpha"); len(got) != 1 || !slices.Equal(h.recipients(got[0].ID), []string{"e@alpha.localhost", "someone@example.com"}) {
			t.Errorf("alpha holds %+v, want one copy for e@alpha.localhost", got)
		}

		auth := h.dial()
		if err := auth.Auth(sasl.NewPlainClient("", "alpha", h.password("alpha"))); err != nil {
			t.Fatal(err)
		}
		if err := auth.Mail("app@example.org", nil); err != nil {
			t.Fatal(err)
		}
		wantSMTPError(t, auth.Rcpt("someone@example.com", nil), 550, smtp.EnhancedCode{5, 7, 1})

		gone := newHarness(t, storetest.Open(t, db.Dialect), Config{CatchAll: "gone"})
		c = gone.dial()
		if err := c.Mail("app@example.org", nil); err != nil {
			t.Fatal(err)
		}
		err = c.Rcpt("someone@example.com", nil)
		wantSMTPError(t, err, 550, smtp.EnhancedCode{5, 1, 1})
		if !strings.Contains(err.Error(), "<anything>@<namespace>.localhost") {
			t.Errorf("the 550 without a catch-all namespace says %q", err)
		}
	})
}

func TestAuth(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		h := newHarness(t, db, Config{})

		t.Run("plain", func(t *testing.T) {
			// net/smtp quits after a failed AUTH: one connection per attempt.
			for _, user := range []string{"alpha", "nosuch", "-bad-"} {
				c, err := netsmtp.Dial(h.addr)
				if err != nil {
					t.Fatalf("dial: %v", err)
				}
				wantProto(t, c.Auth(netsmtp.PlainAuth("", user, "wrong-password", "127.0.0.1")), 535, "5.7.8")
				c.Close()
			}
			c, err := netsmtp.Dial(h.addr)
			if err != nil {
				t.Fatalf("dial: %v", err)
			}
			defer c.Close()
			if err := c.Auth(netsmtp.PlainAuth("", "ALPHA", h.password("alpha"), "127.0.0.1")); err != nil {
				t.Fatalf("auth: %v", err)
			}
			if err := c.Mail("app@example.org"); err != nil {
				t.Fatalf("mail: %v", err)
			}
			wantProto(t, c.Rcpt("x@beta.localhost"), 550, "5.7.1")
			wantProto(t, c.Rcpt("x@example.com"), 550, "5.7.1")
			wantProto(t, c.Rcpt("x@alpha..localhost"), 550, "5.1.3")
			if err := c.Rcpt("x@alpha.localhost"); err != nil {
				t.Fatalf("rcpt own namespace: %v", err)
			}
			w, err := c.Data()
			if err != nil {
				t.Fatalf("data: %v", err)
			}
			w.Write(message("app@example.org", "x@alpha.localhost", "authenticated", "body"))
			if err := w.Close(); err != nil {
				t.Fatalf("end of data: %v", err)
			}
			c.Quit()
			if got := h.emails("alpha"); len(got) != 1 || got[0].Subject != "authenticated" {
				t.Errorf("stored %+v", got)
			}
			if n := len(h.emails("beta")); n != 0 {
				t.Errorf("%d emails in beta, want 0", n)
			}
		})

		t.Run("login", func(t *testing.T) {
			c := h.dial()
			wantSMTPError(t, c.Auth(sasl.NewLoginClient("beta", h.password("alpha"))), 535, smtp.EnhancedCode{5, 7, 8})
			wantSMTPError(t, c.Auth(sasl.NewLoginClient("nosuch", "whatever")), 535, smtp.EnhancedCode{5, 7, 8})
			if err := c.Auth(sasl.NewLoginClient("beta", h.password("beta"))); err != nil {
				t.Fatalf("auth: %v", err)
			}
			if err := send(c, "app@example.org", []string{"y@beta.localhost"}, message("app@example.org", "y@beta.localhost", "login", "body")); err != nil {
				t.Fatalf("send: %v", err)
			}
			if err := c.Mail("app@example.org", nil); err != nil {
				t.Fatalf("mail: %v", err)
			}
			wantSMTPError(t, c.Rcpt("y@alpha.localhost", nil), 550, smtp.EnhancedCode{5, 7, 1})
			if got := h.emails("beta"); len(got) != 1 || got[0].Subject != "login" {
				t.Errorf("stored %+v", got)
			}
		})

		t.Run("login without initial response", func(t *testing.T) {
			r := h.raw()
			r.mustReply(220)
			r.cmd("EHLO client.example", 250)
			if got := r.cmd("AUTH LOGIN", 334); got != b64("Username:") {
				t.Errorf("first challenge %q", got)
			}
			if got := r.cmd(b64("alpha"), 334); got != b64("Password:") {
				t.Errorf("second challenge %q", got)
			}
			r.cmd(b64(h.password("alpha")), 235)
			r.cmd("AUTH PLAIN", 503) // already authenticated
		})

		t.Run("plain in two steps and malformed", func(t *testing.T) {
			r := h.raw()
			r.mustReply(220)
			r.cmd("EHLO client.example", 250)
			r.cmd("AUTH PLAIN", 334)
			r.cmd(b64("only-one-part"), 501)
			r.cmd("AUTH CRAM-MD5", 504)
			r.cmd("MAIL FROM:<a@example.org>", 250)
			r.cmd("AUTH PLAIN "+b64("\x00alpha\x00"+h.password("alpha")), 503) // not during a transaction
			r.cmd("RSET", 250)
			r.cmd("AUTH PLAIN "+b64("beta\x00alpha\x00"+h.password("alpha")), 535) // identity not the user
			r.cmd("AUTH PLAIN "+b64("\x00alpha\x00"+h.password("alpha")), 235)
		})
	})
}

func b64(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) }

// wantProto checks a net/smtp error's reply code and enhanced code.
func wantProto(t *testing.T, err error, code int, enhanced string) {
	t.Helper()
	var pe *textproto.Error
	if !errors.As(err, &pe) || pe.Code != code || !strings.HasPrefix(pe.Msg, enhanced+" ") {
		t.Fatalf("got %v, want %d %s", err, code, enhanced)
	}
}

// testCert makes a self-signed certificate for 127.0.0.1 and a pool trusting it.
func testCert(t *testing.T) (tls.Certificate, *x509.CertPool) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatalf("generate key: %v", err)
	}
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "catchbox test"},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(time.Hour),
		IPAddresses:           []net.IP{net.IPv4(127, 0, 0, 1)},
		DNSNames:              []string{"localhost"},
		KeyUsage:              x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatalf("create certificate: %v", err)
	}
	leaf, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatalf("parse certificate: %v", err)
	}
	pool := x509.NewCertPool()
	pool.AddCert(leaf)
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key, Leaf: leaf}, pool
}

func TestStartTLS(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		cert, pool := testCert(t)
		h := newHarness(t, db, Config{TLSConfig: &tls.Config{Certificates: []tls.Certificate{cert}}, RequireTLS: true})
		clientTLS := &tls.Config{RootCAs: pool, ServerName: "127.0.0.1"}

		t.Run("net/smtp plain", func(t *testing.T) {
			c, err := netsmtp.Dial(h.addr)
			if err != nil {
				t.Fatalf("dial: %v", err)
			}
			defer c.Close()
			if err := c.Hello("client.example"); err != nil {
				t.Fatalf("hello: %v", err)
			}
			if ok, _ := c.Extension("STARTTLS"); !ok {
				t.Fatal("STARTTLS not advertised")
			}
			if ok, _ := c.Extension("AUTH"); ok {
				t.Error("AUTH advertised before STARTTLS although TLS is required")
			}
			// net/smtp quits after a failed AUTH: see the refusal on a
			// connection of its own.
			refused, err := netsmtp.Dial(h.addr)
			if err != nil {
				t.Fatalf("dial: %v", err)
			}
			wantProto(t, refused.Auth(netsmtp.PlainAuth("", "alpha", h.password("alpha"), "127.0.0.1")), 530, "5.7.0")
			refused.Close()
			if err := c.StartTLS(clientTLS); err != nil {
				t.Fatalf("starttls: %v", err)
			}
			if ok, mechs := c.Extension("AUTH"); !ok || mechs != "PLAIN LOGIN" {
				t.Errorf("AUTH %q after STARTTLS, want PLAIN LOGIN", mechs)
			}
			if ok, _ := c.Extension("STARTTLS"); ok {
				t.Error("STARTTLS advertised inside TLS")
			}
			if err := c.Auth(netsmtp.PlainAuth("", "alpha", h.password("alpha"), "127.0.0.1")); err != nil {
				t.Fatalf("auth: %v", err)
			}
			if err := c.Mail("app@example.org"); err != nil {
				t.Fatalf("mail: %v", err)
			}
			if err := c.Rcpt("tls@alpha.localhost"); err != nil {
				t.Fatalf("rcpt: %v", err)
			}
			w, err := c.Data()
			if err != nil {
				t.Fatalf("data: %v", err)
			}
			w.Write(message("app@example.org", "tls@alpha.localhost", "over-tls", "body"))
			if err := w.Close(); err != nil {
				t.Fatalf("end of data: %v", err)
			}
			c.Quit()
			got := h.emails("alpha")
			if len(got) != 1 || got[0].Helo != "client.example" {
				t.Fatalf("stored %+v", got)
			}
		})

		t.Run("go-smtp login", func(t *testing.T) {
			c, err := smtp.DialStartTLS(h.addr, clientTLS)
			if err != nil {
				t.Fatalf("dial with STARTTLS: %v", err)
			}
			defer c.Close()
			if _, ok := c.TLSConnectionState(); !ok {
				t.Fatal("no TLS after STARTTLS")
			}
			wantSMTPError(t, c.Auth(sasl.NewLoginClient("alpha", "wrong")), 535, smtp.EnhancedCode{5, 7, 8})
			if err := c.Auth(sasl.NewLoginClient("alpha", h.password("alpha"))); err != nil {
				t.Fatalf("auth: %v", err)
			}
			if err := send(c, "app@example.org", []string{"tls2@alpha.localhost"}, message("app@example.org", "tls2@alpha.localhost", "over-tls-2", "b")); err != nil {
				t.Fatalf("send: %v", err)
			}
		})

		t.Run("untrusted certificate", func(t *testing.T) {
			c, err := smtp.DialStartTLS(h.addr, &tls.Config{ServerName: "127.0.0.1"})
			if err != nil {
				t.Fatalf("dial: %v", err)
			}
			defer c.Close()
			// The handshake runs with the first command inside TLS.
			if err := c.Noop(); err == nil {
				t.Fatal("a client without the test CA accepted the certificate")
			}
		})
	})
}

func TestNoTLS(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		h := newHarness(t, db, Config{RequireTLS: true})
		r := h.raw()
		r.mustReply(220)
		ehlo := r.cmd("EHLO client.example", 250)
		if strings.Contains(ehlo, "STARTTLS") || strings.Contains(ehlo, "AUTH") {
			t.Errorf("EHLO without a certificate offers %q", ehlo)
		}
		r.cmd("STARTTLS", 502)
		r.cmd("AUTH PLAIN "+b64("\x00alpha\x00"+h.password("alpha")), 530)
	})
}

func TestMessageSizeLimit(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		h := newHarness(t, db, Config{MaxMessageBytes: 2048})
		c := h.dial()
		if err := c.Hello("client.example"); err != nil {
			t.Fatalf("hello: %v", err)
		}
		if size, ok := c.MaxMessageSize(); !ok || size != 2048 {
			t.Errorf("SIZE %d %v, want 2048", size, ok)
		}
		// Declared too large: refused at MAIL (RFC 1870).
		wantSMTPError(t, c.Mail("a@example.org", &smtp.MailOptions{Size: 4096}), 552, smtp.EnhancedCode{5, 3, 4})
		// Undeclared: refused at the end of DATA.
		big := message("a@example.org", "x@alpha.localhost", "big", strings.Repeat("0123456789abcdef\r\n", 300))
		wantSMTPError(t, send(c, "a@example.org", []string{"x@alpha.localhost"}, big), 552, smtp.EnhancedCode{5, 3, 4})
		// The connection carries on.
		if err := send(c, "a@example.org", []string{"x@alpha.localhost"}, message("a@example.org", "x@alpha.localhost", "small", "ok")); err != nil {
			t.Fatalf("small message after a refused one: %v", err)
		}
		got := h.emails("alpha")
		if len(got) != 1 || got[0].Subject != "small" {
			t.Fatalf("stored %+v, want only the small message", got)
		}
	})
}

func TestLineLengthLimit(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		h := newHarness(t, db, Config{})
		r := h.raw()
		r.mustReply(220)
		r.send("EHLO " + strings.Repeat("a", maxLineLength+10))
		if code, _, _ := r.reply(); code != 500 {
			t.Fatalf("over-long command line answered %d, want 500", code)
		}
		r.expectClosed()
	})
}

func TestTooManyRecipients(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		h := newHarness(t, db, Config{MaxRecipients: 2})
		c := h.dial()
		if err := c.Mail("a@example.org", nil); err != nil {
			t.Fatalf("mail: %v", err)
		}
		for _, rcpt := range []string{"one@alpha.localhost", "two@beta.localhost", "ONE@alpha.localhost"} {
			if err := c.Rcpt(rcpt, nil); err != nil {
				t.Fatalf("rcpt %s: %v", rcpt, err)
			}
		}
		wantSMTPError(t, c.Rcpt("three@alpha.localhost", nil), 452, smtp.EnhancedCode{4, 5, 3})
		w, err := c.Data()
		if err != nil {
			t.Fatalf("data: %v", err)
		}
		w.Write(message("a@example.org", "one@alpha.localhost", "limited", "b"))
		if err := w.Close(); err != nil {
			t.Fatalf("end of data: %v", err)
		}
		got := h.emails("alpha")
		if len(got) != 1 {
			t.Fatalf("%d emails in alpha, want 1", len(got))
		}
		// The repeated address counted, and is stored, once.
		if rcpts := h.recipients(got[0].ID); !slices.Equal(rcpts, []string{"one@alpha.localhost"}) {
			t.Errorf("recipients %q", rcpts)
		}
	})
}

func TestConnectionLimit(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		h := newHarness(t, db, Config{MaxConnections: 1})
		first := h.dial()
		if err := first.Hello("first.example"); err != nil {
			t.Fatalf("hello: %v", err)
		}
		second := h.raw()
		code, msg, err := second.reply()
		if err != nil || code != 421 || !strings.HasPrefix(msg, "4.7.0 ") {
			t.Fatalf("connection over the limit got %d %q %v, want 421 4.7.0", code, msg, err)
		}
		second.expectClosed()

		if err := first.Quit(); err != nil {
			t.Fatalf("quit: %v", err)
		}
		// The slot is freed once the server has closed the first connection.
		testkit.Await(t, "a connection accepted after the first closed", func() (string, bool) {
			r := h.raw()
			code, msg, err := r.reply()
			if err == nil && code == 220 {
				r.cmd("QUIT", 221)
				return "220", true
			}
			return fmt.Sprintf("%d %q %v", code, msg, err), false
		})
	})
}

func TestTwoNamespaces(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		h := newHarness(t, db, Config{})
		c := h.dial()
		rcpts := []string{"a@alpha.localhost", "b@beta.localhost", "c@alpha.localhost", "A@Alpha.localhost"}
		msg := message("a@example.org", "a@alpha.localhost, b@beta.localhost", "shared", "b")
		if err := send(c, "sender@example.org", rcpts, msg); err != nil {
			t.Fatalf("send: %v", err)
		}
		alpha, beta := h.emails("alpha"), h.emails("beta")
		if len(alpha) != 1 || len(beta) != 1 {
			t.Fatalf("%d emails in alpha and %d in beta, want one each", len(alpha), len(beta))
		}
		if alpha[0].ID == beta[0].ID || alpha[0].Subject != "shared" || beta[0].Subject != "shared" {
			t.Errorf("stored %+v and %+v", alpha[0], beta[0])
		}
		// Each copy knows its own namespace's recipients (and the header ones).
		if got := h.recipients(alpha[0].ID); !slices.Equal(got, []string{"a@alpha.localhost", "b@beta.localhost", "c@alpha.localhost"}) {
			t.Errorf("alpha recipients %q", got)
		}
		if got := h.recipients(beta[0].ID); !slices.Equal(got, []string{"a@alpha.localhost", "b@beta.localhost"}) {
			t.Errorf("beta recipients %q", got)
		}
	})
}

func TestIdleTimeout(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		h := newHarness(t, db, Config{IdleTimeout: 200 * time.Millisecond})
		r := h.raw()
		r.mustReply(220)
		r.cmd("EHLO client.example", 250)
		// Say nothing more: the server must end the conversation.
		code, msg, err := r.reply()
		if err != nil || code != 421 {
			t.Fatalf("idle connection got %d %q %v, want 421", code, msg, err)
		}
		r.expectClosed()
	})
}

func TestCommandLimit(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		h := newHarness(t, db, Config{MaxCommands: 10})
		r := h.raw()
		r.mustReply(220)
		r.cmd("EHLO client.example", 250)
		for i := 2; i <= 10; i++ {
			r.cmd("NOOP", 250)
		}
		r.send("NOOP")
		code, msg, err := r.reply()
		if err != nil || code != 421 || !strings.HasPrefix(msg, "4.7.0 ") {
			t.Fatalf("command 11 got %d %q %v, want 421 4.7.0", code, msg, err)
		}
		r.expectClosed()
	})
}

func TestChunking(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		h := newHarness(t, db, Config{MaxMessageBytes: 2048})
		r := h.raw()
		r.mustReply(220)
		if ehlo := r.cmd("EHLO client.example", 250); !strings.Contains(ehlo, "CHUNKING") {
			t.Fatalf("CHUNKING not advertised: %q", ehlo)
		}
		r.cmd("MAIL FROM:<a@example.org>", 250)
		r.cmd("RCPT TO:<bdat@alpha.localhost>", 250)
		msg := string(message("a@example.org", "bdat@alpha.localhost", "chunked", "body"))
		first, last := msg[:20], msg[20:]
		r.send(fmt.Sprintf("BDAT %d", len(first)))
		r.nc.Write([]byte(first))
		r.mustReply(250)
		r.send(fmt.Sprintf("BDAT %d LAST", len(last)))
		r.nc.Write([]byte(last))
		if got := r.mustReply(250); got != "2.0.0 Message stored" {
			t.Errorf("reply %q", got)
		}
		// Chunks over the size limit are refused.
		r.cmd("MAIL FROM:<a@example.org>", 250)
		r.cmd("RCPT TO:<bdat@alpha.localhost>", 250)
		r.send("BDAT 4096 LAST")
		r.nc.Write(bytes.Repeat([]byte("0123456789abcdef0123456789abcd\r\n"), 128))
		r.mustReply(552)
		r.cmd("QUIT", 221)
		if got := h.emails("alpha"); len(got) != 1 || got[0].Subject != "chunked" {
			t.Fatalf("stored %+v", got)
		}
	})
}

func TestShutdown(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		h := newHarness(t, db, Config{})
		idle := h.raw()
		idle.mustReply(220)
		idle.cmd("EHLO idle.example", 250)

		busy := h.raw()
		busy.mustReply(220)
		busy.cmd("EHLO busy.example", 250)
		busy.cmd("MAIL FROM:<a@example.org>", 250)
		busy.cmd("RCPT TO:<late@alpha.localhost>", 250)
		busy.cmd("DATA", 354)
		msg := message("a@example.org", "late@alpha.localhost", "during-shutdown", "body")
		busy.nc.Write(msg[:30])

		done := make(chan error, 1)
		go func() {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			done <- h.srv.Shutdown(ctx)
		}()
		testkit.WaitFor(t, "the server to start closing", h.srv.closing.Load)

		// The idle client is told and let go.
		if code, msg, err := idle.reply(); err != nil || code != 421 {
			t.Fatalf("idle client got %d %q %v, want 421", code, msg, err)
		}
		idle.expectClosed()

		// The message under way is finished and stored, then the connection ends.
		busy.nc.Write(msg[30:])
		busy.nc.Write([]byte(".\r\n"))
		busy.mustReply(250)
		busy.send("NOOP")
		if code, msg, err := busy.reply(); err != nil || code != 421 || !strings.HasPrefix(msg, "4.3.2 ") {
			t.Fatalf("command after shutdown got %d %q %v, want 421 4.3.2", code, msg, err)
		}
		busy.expectClosed()

		if err := testkit.Receive(t, "the shutdown", done); err != nil {
			t.Fatalf("shutdown: %v", err)
		}
		if err := h.serveResult(); err != nil {
			t.Fatalf("serve returned %v after shutdown", err)
		}
		if got := h.emails("alpha"); len(got) != 1 || got[0].Subject != "during-shutdown" {
			t.Fatalf("stored %+v", got)
		}
		if _, err := net.Dial("tcp", h.addr); err == nil {
			t.Error("listener still accepts after shutdown")
		}
	})
}

func TestTemporaryFailures(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		t.Run("ingester closed", func(t *testing.T) {
			h := newHarness(t, db, Config{})
			h.ingester.Close()
			c := h.dial()
			err := send(c, "a@example.org", []string{"x@alpha.localhost"}, message("a@example.org", "x@alpha.localhost", "lost", "b"))
			wantSMTPError(t, err, 451, smtp.EnhancedCode{4, 3, 0})
			if n := len(h.emails("alpha")); n != 0 {
				t.Errorf("%d emails stored after a 451", n)
			}
		})

		t.Run("panic in delivery", func(t *testing.T) {
			h := newHarness(t, storetest.Open(t, db.Dialect), Config{})
			// A listener whose ingester is missing panics inside Deliver.
			h.serve(Config{}, nil)
			c := h.dial()
			err := send(c, "a@example.org", []string{"x@alpha.localhost"}, message("a@example.org", "x@alpha.localhost", "panic", "b"))
			wantSMTPError(t, err, 451, smtp.EnhancedCode{4, 3, 0})
			if err := c.Noop(); err != nil {
				t.Fatalf("connection unusable after a panic: %v", err)
			}
			other := h.dial()
			if err := other.Hello("other.example"); err != nil {
				t.Fatalf("server unusable after a panic: %v", err)
			}
		})

		t.Run("store down at RCPT", func(t *testing.T) {
			sdb := storetest.Open(t, db.Dialect)
			h := newHarness(t, sdb, Config{})
			c := h.dial()
			if err := c.Mail("a@example.org", nil); err != nil {
				t.Fatalf("mail: %v", err)
			}
			sdb.Close()
			wantSMTPError(t, c.Rcpt("x@alpha.localhost", nil), 451, smtp.EnhancedCode{4, 3, 0})
			wantSMTPError(t, c.Auth(sasl.NewPlainClient("", "alpha", "x")), 503, smtp.EnhancedCode{5, 5, 1})
			c.Reset()
			wantSMTPError(t, c.Auth(sasl.NewPlainClient("", "alpha", "x")), 454, smtp.EnhancedCode{4, 7, 0})
		})
	})
}
