package smtpd

import (
	"bytes"
	"context"
	"crypto/tls"
	"io"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/emersion/go-sasl"
	"github.com/emersion/go-smtp"

	"github.com/catchbox/catchbox/internal/chaos"
	"github.com/catchbox/catchbox/internal/store"
	"github.com/catchbox/catchbox/internal/store/storetest"
	"github.com/catchbox/catchbox/internal/tenant"
)

// chaosHarness is a listener whose namespaces' fault rules are set through
// chaos.Service, as the API sets them.
type chaosHarness struct {
	*harness
	svc   *chaos.Service
	table *chaos.Table
}

func newChaosHarness(t *testing.T, db *store.DB, cfg Config) *chaosHarness {
	t.Helper()
	table := chaos.NewTable(db)
	if err := table.Refresh(context.Background()); err != nil {
		t.Fatal(err)
	}
	cfg.Faults = table
	h := newHarness(t, db, cfg)
	return &chaosHarness{harness: h, table: table, svc: chaos.NewService(db, h.tenants, nil, table)}
}

// rules replaces a namespace's rules.
func (h *chaosHarness) rules(ns string, rules ...chaos.Rule) {
	h.t.Helper()
	org, err := h.tenants.OrgByID(context.Background(), h.ns[ns].OrgID)
	if err != nil {
		h.t.Fatal(err)
	}
	p := tenant.Principal{Org: org, Orgs: []tenant.Org{org}}
	if _, err := h.svc.SetRules(context.Background(), p, chaos.SetRequest{Namespace: ns, Rules: rules}); err != nil {
		h.t.Fatalf("set rules: %v", err)
	}
}

func intp(n int) *int { return &n }

// TestChaosRcpt refuses one recipient of alpha with the rule's reply and
// accepts alpha's others and beta's as usual, in one transaction.
func TestChaosRcpt(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		h := newChaosHarness(t, db, Config{})
		h.rules("alpha", chaos.Rule{Stage: chaos.StageRcpt, Match: "BOUNCE*@*", Reply: "550 5.1.1 No such user here"})
		r := h.raw()
		r.mustReply(220)
		r.cmd("EHLO client.example", 250)
		r.cmd("MAIL FROM:<app@example.com>", 250)
		if msg := r.cmd("RCPT TO:<Bounce-1@alpha.localhost>", 550); msg != "5.1.1 No such user here" {
			t.Fatalf("RCPT refused with %q", msg)
		}
		r.cmd("RCPT TO:<bounce-1@beta.localhost>", 250) // beta has no rules
		r.cmd("RCPT TO:<ok@alpha.localhost>", 250)
		r.cmd("DATA", 354)
		r.send("Subject: rcpt\r\n\r\nbody\r\n.")
		r.mustReply(250)
		if len(h.emails("alpha")) != 1 || len(h.emails("beta")) != 1 {
			t.Fatalf("stored %d in alpha, %d in beta; want 1 each", len(h.emails("alpha")), len(h.emails("beta")))
		}
		if got := h.recipients(h.emails("alpha")[0].ID); len(got) != 1 || got[0] != "ok@alpha.localhost" {
			t.Fatalf("alpha's recipients %v", got)
		}
	})
}

// TestChaosRcptDisconnect answers RCPT with the rule's reply and closes the
// connection after it; without a reply it closes at once.
func TestChaosRcptDisconnect(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		h := newChaosHarness(t, db, Config{})
		h.rules("alpha", chaos.Rule{Stage: chaos.StageRcpt, Match: "quiet@*", Disconnect: true},
			chaos.Rule{Stage: chaos.StageRcpt, Reply: "421 4.7.0 Closing for a test", Disconnect: true})
		r := h.raw()
		r.mustReply(220)
		r.cmd("EHLO client.example", 250)
		r.cmd("MAIL FROM:<app@example.com>", 250)
		if msg := r.cmd("RCPT TO:<a@alpha.localhost>", 421); msg != "4.7.0 Closing for a test" {
			t.Fatalf("RCPT answered %q", msg)
		}
		r.send("NOOP")
		r.expectClosed()

		r = h.raw()
		r.mustReply(220)
		r.cmd("EHLO client.example", 250)
		r.cmd("MAIL FROM:<app@example.com>", 250)
		r.send("RCPT TO:<quiet@alpha.localhost>")
		r.expectClosed()
	})
}

// TestChaosDataReplacesThe354 answers DATA with the rule's reply instead of
// 354; the client sends no message and the connection stays usable.
func TestChaosDataReplacesThe354(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		h := newChaosHarness(t, db, Config{})
		h.rules("alpha", chaos.Rule{Stage: chaos.StageData, Reply: "452 4.3.1 Insufficient system storage"})
		r := h.raw()
		r.mustReply(220)
		r.cmd("EHLO client.example", 250)
		r.cmd("MAIL FROM:<app@example.com>", 250)
		r.cmd("RCPT TO:<a@alpha.localhost>", 250)
		if msg := r.cmd("DATA", 452); msg != "4.3.1 Insufficient system storage" {
			t.Fatalf("DATA answered %q", msg)
		}
		r.cmd("NOOP", 250)
		r.cmd("RSET", 250)
		// Mail to beta alone is not touched; then, once the rules are gone,
		// alpha takes mail on the same connection.
		r.cmd("MAIL FROM:<app@example.com>", 250)
		r.cmd("RCPT TO:<a@beta.localhost>", 250)
		r.cmd("DATA", 354)
		r.send("Subject: beta\r\n\r\nbody\r\n.")
		r.mustReply(250)
		h.rules("alpha")
		r.cmd("MAIL FROM:<app@example.com>", 250)
		r.cmd("RCPT TO:<a@alpha.localhost>", 250)
		r.cmd("DATA", 354)
		r.send("Subject: alpha\r\n\r\nbody\r\n.")
		r.mustReply(250)
		r.cmd("QUIT", 221)
		if n := len(h.emails("alpha")); n != 1 {
			t.Fatalf("alpha holds %d emails, want 1", n)
		}
		if n := len(h.emails("beta")); n != 1 {
			t.Fatalf("beta holds %d emails, want 1", n)
		}
	})
}

// TestChaosDataDisconnect closes the connection instead of the 354, and,
// with a reply, after the reply.
func TestChaosDataDisconnect(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		h := newChaosHarness(t, db, Config{})
		h.rules("alpha", chaos.Rule{Stage: chaos.StageData, Match: "drop@*", Disconnect: true},
			chaos.Rule{Stage: chaos.StageData, Reply: "421 4.4.2 Going away", Disconnect: true})
		r := h.raw()
		r.mustReply(220)
		r.cmd("EHLO client.example", 250)
		r.cmd("MAIL FROM:<app@example.com>", 250)
		r.cmd("RCPT TO:<drop@alpha.localhost>", 250)
		r.send("DATA")
		r.expectClosed()

		r = h.raw()
		r.mustReply(220)
		r.cmd("EHLO client.example", 250)
		r.cmd("MAIL FROM:<app@example.com>", 250)
		r.cmd("RCPT TO:<other@alpha.localhost>", 250)
		if msg := r.cmd("DATA", 421); msg != "4.4.2 Going away" {
			t.Fatalf("DATA answered %q", msg)
		}
		r.expectClosed()
		if n := len(h.emails("alpha")); n != 0 {
			t.Fatalf("alpha holds %d emails", n)
		}
	})
}

// TestChaosAfterDataEvery refuses every second message of alpha after its
// data, whichever connection sends it; the refused ones are not stored.
func TestChaosAfterDataEvery(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		h := newChaosHarness(t, db, Config{})
		h.rules("alpha", chaos.Rule{Stage: chaos.StageAfterData, Every: intp(2), Reply: "451 4.3.0 Every second message"})
		var refused []int
		for i := 1; i <= 6; i++ {
			c := h.dial()
			err := send(c, "app@example.com", []string{"x@alpha.localhost"}, message("app@example.com", "x@alpha.localhost", "m"+string(rune('0'+i)), "body"))
			if err != nil {
				wantSMTPError(t, err, 451, smtp.EnhancedCode{4, 3, 0})
				refused = append(refused, i)
			}
			c.Close()
		}
		if len(refused) != 3 || refused[0] != 2 || refused[1] != 4 || refused[2] != 6 {
			t.Fatalf("refused messages %v, want 2, 4, 6", refused)
		}
		if n := len(h.emails("alpha")); n != 3 {
			t.Fatalf("alpha holds %d emails, want 3", n)
		}
	})
}

// TestChaosAfterDataDisconnect drops the connection once the message is
// read, before any reply: nothing is stored. A delay alone stores as usual.
func TestChaosAfterDataDisconnect(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		h := newChaosHarness(t, db, Config{})
		h.rules("alpha", chaos.Rule{Stage: chaos.StageAfterData, Match: "slow@*", DelayMS: 200},
			chaos.Rule{Stage: chaos.StageAfterData, Disconnect: true})
		r := h.raw()
		r.mustReply(220)
		r.cmd("EHLO client.example", 250)
		r.cmd("MAIL FROM:<app@example.com>", 250)
		r.cmd("RCPT TO:<a@alpha.localhost>", 250)
		r.cmd("DATA", 354)
		r.send("Subject: dropped\r\n\r\nbody\r\n.")
		r.expectClosed()
		if n := len(h.emails("alpha")); n != 0 {
			t.Fatalf("alpha holds %d emails after a disconnect mid-DATA", n)
		}
		c := h.dial()
		start := time.Now()
		if err := send(c, "app@example.com", []string{"slow@alpha.localhost"}, message("app@example.com", "slow@alpha.localhost", "slow", "body")); err != nil {
			t.Fatal(err)
		}
		if waited := time.Since(start); waited < 200*time.Millisecond {
			t.Fatalf("answered after %v, before the rule's delay", waited)
		}
		if n := len(h.emails("alpha")); n != 1 {
			t.Fatalf("alpha holds %d emails after a delayed message", n)
		}
	})
}

// TestChaosMail applies mail-stage rules to a client authenticated as the
// namespace, with match on the sender, and not to unauthenticated clients.
func TestChaosMail(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		h := newChaosHarness(t, db, Config{})
		h.rules("alpha", chaos.Rule{Stage: chaos.StageMail, Match: "*@blocked.test", Reply: "553 5.7.1 Sender refused"})
		c := h.dial()
		if err := c.Auth(sasl.NewPlainClient("", "alpha", h.password("alpha"))); err != nil {
			t.Fatal(err)
		}
		err := c.Mail("Someone@Blocked.test", nil)
		wantSMTPError(t, err, 553, smtp.EnhancedCode{5, 7, 1})
		if err := send(c, "app@fine.test", []string{"x@alpha.localhost"}, message("app@fine.test", "x@alpha.localhost", "fine", "body")); err != nil {
			t.Fatal(err)
		}
		// Unauthenticated, the namespace is not known at MAIL.
		if err := send(h.dial(), "someone@blocked.test", []string{"x@alpha.localhost"}, message("someone@blocked.test", "x@alpha.localhost", "mx", "body")); err != nil {
			t.Fatal(err)
		}
		if n := len(h.emails("alpha")); n != 2 {
			t.Fatalf("alpha holds %d emails, want 2", n)
		}
	})
}

// TestChaosDataAfterStartTLS: on a connection upgraded by STARTTLS the 354
// is written inside TLS before the rules can act, so a data-stage reply
// follows the (discarded) message.
func TestChaosDataAfterStartTLS(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		cert, pool := testCert(t)
		h := newChaosHarness(t, db, Config{TLSConfig: &tls.Config{Certificates: []tls.Certificate{cert}}})
		h.rules("alpha", chaos.Rule{Stage: chaos.StageData, Reply: "554 5.3.0 Refused at DATA"})
		c, err := smtp.DialStartTLS(h.addr, &tls.Config{RootCAs: pool, ServerName: "127.0.0.1"})
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		err = send(c, "app@example.com", []string{"x@alpha.localhost"}, message("app@example.com", "x@alpha.localhost", "tls", "body"))
		wantSMTPError(t, err, 554, smtp.EnhancedCode{5, 3, 0})
		if err := send(c, "app@example.com", []string{"x@beta.localhost"}, message("app@example.com", "x@beta.localhost", "tls", "body")); err != nil {
			t.Fatalf("beta after alpha's refusal on the same connection: %v", err)
		}
		if len(h.emails("alpha")) != 0 || len(h.emails("beta")) != 1 {
			t.Fatalf("stored %d in alpha, %d in beta", len(h.emails("alpha")), len(h.emails("beta")))
		}
	})
}

// TestChaosLogLine names the rule that fired in the transaction's log line.
func TestChaosLogLine(t *testing.T) {
	var buf syncBuffer
	old := slog.Default()
	slog.SetDefault(slog.New(slog.NewTextHandler(&buf, nil)))
	defer slog.SetDefault(old)
	db := storetest.Open(t, store.SQLite)
	h := newChaosHarness(t, db, Config{})
	h.rules("alpha", chaos.Rule{Stage: chaos.StageRcpt, Match: "no@*", Reply: "550"},
		chaos.Rule{Stage: chaos.StageAfterData, Reply: "451 4.3.0 Later"})
	c := h.dial()
	err := send(c, "app@example.com", []string{"no@alpha.localhost", "yes@alpha.localhost"}, message("app@example.com", "yes@alpha.localhost", "log", "body"))
	wantSMTPError(t, err, 550, smtp.EnhancedCode{5, 0, 0}) // the 550 without an enhanced code carries 5.0.0
	c.Reset()
	err = send(c, "app@example.com", []string{"yes@alpha.localhost"}, message("app@example.com", "yes@alpha.localhost", "log", "body"))
	wantSMTPError(t, err, 451, smtp.EnhancedCode{4, 3, 0})
	c.Quit()
	h.srv.Shutdown(context.Background())
	h.serveResult()
	logs := buf.String()
	for _, want := range []string{
		`result=faulted`, `reply=451`, `chaos="alpha after_data rules[1] reply 451"`,
		`chaos="alpha rcpt rules[0] reply 550"`,
	} {
		if !strings.Contains(logs, want) {
			t.Errorf("log lacks %s:\n%s", want, logs)
		}
	}
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

var _ io.Writer = (*syncBuffer)(nil)
