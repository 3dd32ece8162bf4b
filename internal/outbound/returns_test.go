package outbound_test

import (
	"bytes"
	"context"
	"errors"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/emersion/go-sasl"
	"github.com/emersion/go-smtp"

	"github.com/catchbox/catchbox/internal/outbound/outstore"
	"github.com/catchbox/catchbox/internal/store"
	"github.com/catchbox/catchbox/internal/store/storetest"
)

// sample reads a report of returns/testdata with its placeholders filled and
// CRLF line ends, as it travels over SMTP.
func sample(t testing.TB, name, returnPath, rcpt, messageID string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("returns", "testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	s := strings.NewReplacer("{{RETURN_PATH}}", returnPath, "{{RCPT}}", rcpt, "{{MESSAGE_ID}}", messageID).Replace(string(b))
	return []byte(strings.ReplaceAll(s, "\n", "\r\n"))
}

// serveSMTP serves the service's SMTP listener on a loopback port until the
// test ends, and returns its address.
func (e *apiEnv) serveSMTP() string {
	e.t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		e.t.Fatal(err)
	}
	go e.svc.SMTP.Serve(l)
	e.t.Cleanup(func() { e.svc.SMTP.Shutdown(context.Background()) })
	return l.Addr().String()
}

// mailReturn sends raw over SMTP with the null sender, as an MTA sends a
// report (RFC 5321 section 4.5.5), to rcpt.
func mailReturn(addr, rcpt string, raw []byte) error {
	c, err := smtp.Dial(addr)
	if err != nil {
		return err
	}
	defer c.Close()
	if err := c.Hello("mx1.example.net"); err != nil {
		return err
	}
	if err := c.SendMail("", []string{rcpt}, bytes.NewReader(raw)); err != nil {
		return err
	}
	return c.Quit()
}

// recipientNamed is the recipient of d with the address.
func recipientNamed(t *testing.T, d outstore.Detail, addr string) outstore.Recipient {
	t.Helper()
	for _, r := range d.Recipients {
		if r.Email == addr {
			return r
		}
	}
	t.Fatalf("no recipient %s in %+v", addr, d.Recipients)
	return outstore.Recipient{}
}

// eventsOf are the events of d of the type.
func eventsOf(d outstore.Detail, typ outstore.EventType) []outstore.Event {
	var out []outstore.Event
	for _, ev := range d.Events {
		if ev.Type == typ {
			out = append(out, ev)
		}
	}
	return out
}

// TestBounceOverSMTP: a Postfix DSN delivered over SMTP to the message's
// return path makes the named recipient bounced (hard, with the DSN's
// fields), ignores the block naming no recipient of the message, is not
// stored as an inbox email, is recorded once when delivered twice, and
// suppresses the address: the next send records it suppressed without an
// attempt. A forged return path is refused at RCPT.
func TestBounceOverSMTP(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		e := newAPIEnv(t, db)
		addr := e.serveSMTP()
		e.verify(e.org.ID, "mary@example.org")
		e.verify(e.org.ID, "joe@example.org")
		s := e.send("default", map[string]any{"to": []string{"mary@example.org", "joe@example.org"},
			"subject": "Your order", "text": "Thank you for your order."})
		rp := e.svc.Outbound.Routes.ReturnPath(e.svc.Key, s.ID)
		dsn := sample(t, "postfix-bounce.eml", rp, "mary@example.org", s.MessageID)

		// The tag's last character changed (to 0, or to 1 where it is 0: a
		// tag ending in 0 would otherwise be "forged" into itself).
		last := rp[len(rp)-len("@localhost")-1]
		other := "0"
		if last == '0' {
			other = "1"
		}
		forged := rp[:len(rp)-len("@localhost")-1] + other + "@localhost"
		var smtpErr *smtp.SMTPError
		if err := mailReturn(addr, forged, dsn); !errors.As(err, &smtpErr) || smtpErr.Code != 550 {
			t.Fatalf("forged return path: %v, want 550", err)
		}
		if d := e.detail(s.ID); len(eventsOf(d, outstore.EventBounced)) != 0 {
			t.Fatal("a report to a forged return path was recorded")
		}

		e.later(time.Second)
		for range 2 {
			if err := mailReturn(addr, rp, dsn); err != nil {
				t.Fatalf("DSN over SMTP: %v", err)
			}
		}
		d := e.detail(s.ID)
		bounced := eventsOf(d, outstore.EventBounced)
		if len(bounced) != 1 {
			t.Fatalf("%d bounced events, want 1 (the report arrived twice): %+v", len(bounced), d.Events)
		}
		ev := bounced[0]
		if ev.Subtype != "permanent" || ev.Provider != outstore.ProviderSMTP || len(ev.Recipients) != 1 {
			t.Errorf("event %+v", ev)
		}
		er := ev.Recipients[0]
		if er.Email != "mary@example.org" || er.Action != "failed" || er.SMTPCode != "550" || er.EnhancedStatusCode != "5.1.1" ||
			er.DiagnosticCode != "smtp; 550 5.1.1 <mary@example.org>: Recipient address rejected: User unknown in virtual mailbox table" {
			t.Errorf("event recipient %+v", er)
		}
		mary := recipientNamed(t, d, "mary@example.org")
		if mary.Status != outstore.DeliveryBounced || mary.BounceType != "hard" || mary.LastEventType != outstore.EventBounced ||
			mary.LastSMTPCode != "550" || mary.LastEnhancedStatusCode != "5.1.1" || mary.At[outstore.DeliveryBounced].IsZero() ||
			mary.AttemptCount != 0 {
			t.Errorf("mary %+v", mary)
		}
		if joe := recipientNamed(t, d, "joe@example.org"); joe.Status != outstore.DeliveryQueued {
			t.Errorf("joe %s, want queued: the report does not name him", joe.Status)
		}
		if d.DeliverySummary()[outstore.DeliveryBounced] != 1 {
			t.Errorf("summary %v", d.DeliverySummary())
		}
		var inboxed int
		if err := db.QueryRow(context.Background(), "SELECT COUNT(*) FROM emails").Scan(&inboxed); err != nil || inboxed != 0 {
			t.Errorf("%d inbox emails (%v): a report is not one", inboxed, err)
		}

		// The next send to mary records her suppressed; joe is queued.
		s2 := e.send("default", map[string]any{"to": []string{"Mary <MARY@example.org>"}, "cc": []string{"joe@example.org"},
			"subject": "Again", "text": "Hello"})
		d2 := e.detail(s2.ID)
		m2 := recipientNamed(t, d2, "MARY@example.org")
		if m2.Status != outstore.DeliverySuppressed || m2.AttemptCount != 0 || m2.At[outstore.DeliverySuppressed].IsZero() {
			t.Errorf("mary on the next send %+v", m2)
		}
		if sup := eventsOf(d2, outstore.EventSuppressed); len(sup) != 1 || sup[0].Subtype != outstore.SuppressedBounced ||
			len(sup[0].Recipients) != 1 || sup[0].Recipients[0].RecipientID != m2.ID {
			t.Errorf("suppressed events %+v", sup)
		}
		if j2 := recipientNamed(t, d2, "joe@example.org"); j2.Status != outstore.DeliveryQueued {
			t.Errorf("joe on the next send %s", j2.Status)
		}
	})
}

// TestDelayAndComplaintsOverSMTP: a Postfix delay notice makes the recipient
// delayed without suppressing it; a Yahoo-style feedback report (the
// recipient only in the attached original's To) and one naming the
// recipient in Original-Rcpt-To make complained events with their
// Feedback-Type and suppress the address; an auto-reply to a return path is
// accepted and changes nothing; another organisation's send is not touched
// by its suppressions.
func TestDelayAndComplaintsOverSMTP(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		e := newAPIEnv(t, db)
		addr := e.serveSMTP()
		for _, a := range []string{"mary@example.org", "joe@example.org"} {
			e.verify(e.org.ID, a)
			e.verify(e.other.ID, a)
		}
		s := e.send("default", map[string]any{"to": []string{"mary@example.org"}, "subject": "Your order", "text": "Thanks"})
		rp := e.svc.Outbound.Routes.ReturnPath(e.svc.Key, s.ID)

		if err := mailReturn(addr, rp, sample(t, "vacation.eml", rp, "mary@example.org", s.MessageID)); err != nil {
			t.Fatalf("auto-reply: %v", err)
		}
		if d := e.detail(s.ID); len(d.Events) != 1 || d.Recipients[0].Status != outstore.DeliveryQueued {
			t.Fatalf("an auto-reply changed the email: %+v", d.Events)
		}

		e.later(time.Second)
		if err := mailReturn(addr, rp, sample(t, "postfix-delayed.eml", rp, "mary@example.org", s.MessageID)); err != nil {
			t.Fatalf("delay notice: %v", err)
		}
		d := e.detail(s.ID)
		mary := d.Recipients[0]
		if mary.Status != outstore.DeliveryDelayed || mary.LastEnhancedStatusCode != "4.4.1" || mary.BounceType != "" {
			t.Errorf("after the delay notice %+v", mary)
		}
		if ev := eventsOf(d, outstore.EventDelayed); len(ev) != 1 || ev[0].Recipients[0].Action != "delayed" ||
			ev[0].Recipients[0].DiagnosticCode != "X-Postfix; connect to mail.example.com[203.0.113.9]:25: Connection timed out" {
			t.Errorf("delayed events %+v", ev)
		}
		if r, _, _ := e.svc.Outbound.Store.Suppressions(context.Background(), e.org.ID, 10, 0); len(r) != 0 {
			t.Errorf("a delay suppressed %+v", r)
		}

		e.later(time.Second)
		if err := mailReturn(addr, rp, sample(t, "yahoo-arf.eml", rp, "mary@example.org", s.MessageID)); err != nil {
			t.Fatalf("feedback report: %v", err)
		}
		d = e.detail(s.ID)
		mary = d.Recipients[0]
		if mary.Status != outstore.DeliveryComplained || mary.ComplaintFeedbackType != "abuse" || mary.At[outstore.DeliveryComplained].IsZero() {
			t.Errorf("after the feedback report %+v", mary)
		}
		if ev := eventsOf(d, outstore.EventComplained); len(ev) != 1 || ev[0].Subtype != "abuse" {
			t.Errorf("complained events %+v", ev)
		}

		s2 := e.send("default", map[string]any{"to": []string{"joe@example.org", "mary@example.org"}, "subject": "Two", "text": "x"})
		rp2 := e.svc.Outbound.Routes.ReturnPath(e.svc.Key, s2.ID)
		if err := mailReturn(addr, rp2, sample(t, "gmail-arf.eml", rp2, "joe@example.org", s2.MessageID)); err != nil {
			t.Fatalf("feedback report: %v", err)
		}
		d2 := e.detail(s2.ID)
		if joe := recipientNamed(t, d2, "joe@example.org"); joe.Status != outstore.DeliveryComplained || joe.ComplaintFeedbackType != "fraud" {
			t.Errorf("joe %+v", joe)
		}
		if m := recipientNamed(t, d2, "mary@example.org"); m.Status != outstore.DeliverySuppressed {
			t.Errorf("mary %+v, want suppressed since her complaint", m)
		}
		sup, total, err := e.svc.Outbound.Store.Suppressions(context.Background(), e.org.ID, 10, 0)
		if err != nil || total != 2 || len(sup) != 2 {
			t.Fatalf("suppressions %+v %d %v", sup, total, err)
		}
		for _, sp := range sup {
			if sp.Reason != outstore.SuppressedComplained || sp.SourceEventID == "" {
				t.Errorf("suppression %+v", sp)
			}
		}

		// Another organisation still sends to both.
		r := e.do(e.otherKey, "POST", "/api/emails/send?namespace=elsewhere",
			map[string]any{"to": []string{"joe@example.org", "mary@example.org"}, "subject": "Other", "text": "x"})
		o := e.accepted(r)
		od, err := e.svc.Outbound.Store.Get(context.Background(), e.other.ID, o.ID)
		if err != nil {
			t.Fatal(err)
		}
		for _, rc := range od.Recipients {
			if rc.Status != outstore.DeliveryQueued {
				t.Errorf("other organisation's %s is %s", rc.Email, rc.Status)
			}
		}
	})
}

// TestReturnPathNeedsMX: a client authenticated as a namespace may not send
// to a return path (550 5.7.1, as for any address outside its namespace),
// so only mail systems delivering as an MX can report on a message.
func TestReturnPathNeedsMX(t *testing.T) {
	e := newAPIEnv(t, storetest.Open(t, store.SQLite))
	addr := e.serveSMTP()
	e.verify(e.org.ID, "mary@example.org")
	s := e.send("default", map[string]any{"to": []string{"mary@example.org"}, "subject": "Your order", "text": "x"})
	rp := e.svc.Outbound.Routes.ReturnPath(e.svc.Key, s.ID)
	ns, err := e.svc.Tenants.NamespaceByName(context.Background(), "default")
	if err != nil {
		t.Fatal(err)
	}
	c, err := smtp.Dial(addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := c.Auth(sasl.NewPlainClient("", "default", e.svc.Tenants.SMTPPassword(ns))); err != nil {
		t.Fatal(err)
	}
	if err := c.Mail("", nil); err != nil {
		t.Fatal(err)
	}
	var smtpErr *smtp.SMTPError
	if err := c.Rcpt(rp, nil); !errors.As(err, &smtpErr) || smtpErr.Code != 550 || smtpErr.EnhancedCode != (smtp.EnhancedCode{5, 7, 1}) {
		t.Errorf("RCPT TO a return path after AUTH: %v, want 550 5.7.1", err)
	}
}

// TestBounceAfterRelay follows a message through the real delivery job: the
// relay accepts it for two recipients from the message's return path and
// refuses a third with 550 5.1.1 (a hard bounce at once); a DSN sent back to
// that very MAIL FROM turns one of the two from sent to bounced (the message
// stays sent: the other succeeded); the next send records both bounced
// addresses suppressed, and the delivery job never names them to the relay.
func TestBounceAfterRelay(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		relay := startRelay(t)
		e := newDeliveryEnv(t, db, relay.URL())
		addr := e.serveSMTP()
		e.verify(e.org.ID, "mary@example.org")
		e.verify(e.org.ID, "joe@example.org")
		e.verify(e.org.ID, "gone@example.org")
		relay.Reply("gone@example.org", 550, smtp.EnhancedCode{5, 1, 1}, "No such user")
		body := map[string]any{"to": []string{"mary@example.org", "joe@example.org"}, "cc": []string{"gone@example.org"},
			"subject": "Your order", "text": "Thanks"}
		s := e.send("default", body)
		e.until(s.ID, "both sent", settled(1))
		got := relay.Received()
		if len(got) != 1 || got[0].From != e.svc.Outbound.Routes.ReturnPath(e.svc.Key, s.ID) {
			t.Fatalf("relay received %+v", got)
		}

		if err := mailReturn(addr, got[0].From, sample(t, "postfix-bounce.eml", got[0].From, "mary@example.org", s.MessageID)); err != nil {
			t.Fatalf("DSN: %v", err)
		}
		d := e.detail(s.ID)
		mary, joe := recipient(t, d, "mary@example.org"), recipient(t, d, "joe@example.org")
		if mary.Status != outstore.DeliveryBounced || mary.BounceType != "hard" || mary.At[outstore.DeliverySent].IsZero() ||
			mary.AttemptCount != 1 || joe.Status != outstore.DeliverySent || d.Status != outstore.StatusSent {
			t.Errorf("after the DSN: status %s, mary %+v, joe %+v", d.Status, mary, joe)
		}

		s2 := e.send("default", body)
		d2 := e.until(s2.ID, "the second send settled", settled(1))
		if m := recipient(t, d2, "mary@example.org"); m.Status != outstore.DeliverySuppressed || m.AttemptCount != 0 {
			t.Errorf("mary on the second send %+v", m)
		}
		if j := recipient(t, d2, "joe@example.org"); j.Status != outstore.DeliverySent {
			t.Errorf("joe on the second send %+v", j)
		}
		if g := recipient(t, d2, "gone@example.org"); g.Status != outstore.DeliverySuppressed || g.AttemptCount != 0 {
			t.Errorf("gone on the second send %+v", g)
		}
		for _, a := range []string{"mary@example.org", "gone@example.org"} {
			if n := relay.Rcpts(a); n != 1 {
				t.Errorf("the relay was asked for %s %d times, want 1 (the second send suppressed it)", a, n)
			}
		}
		sup, _, err := e.svc.Outbound.Store.Suppressions(context.Background(), e.org.ID, 10, 0)
		if err != nil || len(sup) != 2 {
			t.Errorf("suppressions %+v (%v)", sup, err)
		}
		if n := relay.Delivered("joe@example.org"); n != 2 {
			t.Errorf("joe delivered %d times, want 2", n)
		}
	})
}
