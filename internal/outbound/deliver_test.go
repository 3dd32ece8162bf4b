package outbound_test

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/emersion/go-smtp"

	"github.com/catchbox/catchbox/internal/config"
	"github.com/catchbox/catchbox/internal/outbound"
	"github.com/catchbox/catchbox/internal/outbound/outstore"
	"github.com/catchbox/catchbox/internal/outbound/relaytest"
	"github.com/catchbox/catchbox/internal/store"
	"github.com/catchbox/catchbox/internal/store/storetest"
	"github.com/catchbox/catchbox/internal/testkit"
)

// startRelay starts a test relay requiring AUTH, closed when t ends.
func startRelay(t testing.TB) *relaytest.Server {
	t.Helper()
	r, err := relaytest.Start("catchbox", "relay-secret")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	return r
}

// newDeliveryEnv is newAPIEnv with the relay URL set (none when "") and the
// job queue running, on the test's clock: the queue's, the deliverer's and
// the outbound store's are one.
func newDeliveryEnv(t testing.TB, db *store.DB, relayURL string) *apiEnv {
	t.Helper()
	return newDeliveryEnvWith(t, db, relayURL, nil)
}

// newDeliveryEnvWith is newDeliveryEnv with the service changed by before,
// ahead of the queue's start.
func newDeliveryEnvWith(t testing.TB, db *store.DB, relayURL string, before func(*apiEnv)) *apiEnv {
	t.Helper()
	e := newAPIEnvWith(t, db, func(c *config.Serve) { c.RelayURL = relayURL })
	e.clock.Set(time.Now().UTC().Truncate(time.Millisecond))
	if before != nil {
		before(e)
	}
	e.svc.Jobs.SetClock(e.clock.Now)
	e.svc.Deliverer.Now = e.clock.Now
	if err := e.svc.Jobs.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		e.svc.Jobs.Stop(ctx)
	})
	return e
}

// until polls the email's detail form until cond holds; the bound only keeps
// a broken delivery from hanging the run.
func (e *apiEnv) until(id, what string, cond func(outstore.Detail) bool) outstore.Detail {
	e.t.Helper()
	d := testkit.Await(e.t, what, func() (detailJSON, bool) {
		d := e.detail(id)
		return detailJSON(d), cond(d)
	})
	return outstore.Detail(d)
}

// detailJSON prints a detail form as indented JSON in a wait's failure.
type detailJSON outstore.Detail

func (d detailJSON) String() string {
	js, _ := json.MarshalIndent(outstore.Detail(d), "", "  ")
	return string(js)
}

// settled: every recipient is final, or deferred after n attempts or more.
func settled(n int) func(outstore.Detail) bool {
	return func(d outstore.Detail) bool {
		for _, r := range d.Recipients {
			if !r.Status.Final() && (r.Status != outstore.DeliveryDeferred || r.AttemptCount < n) {
				return false
			}
		}
		return true
	}
}

func recipient(t *testing.T, d outstore.Detail, addr string) outstore.Recipient {
	t.Helper()
	for _, r := range d.Recipients {
		if strings.EqualFold(r.Email, addr) {
			return r
		}
	}
	t.Fatalf("no recipient %s in %+v", addr, d.Recipients)
	return outstore.Recipient{}
}

// TestDeliveryOutcomes sends one message to an address the relay accepts, one
// it defers, one it bounces and one of the sending namespace, and follows it
// through its retries to the expiry of the deferred one: each recipient's
// state and SMTP details, the events, the message's status, what the relay
// received and from which return path, and the internal copy found by
// search. Nothing is handed to the relay twice.
func TestDeliveryOutcomes(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		relay := startRelay(t)
		e := newDeliveryEnv(t, db, relay.URL())
		for _, a := range []string{"ok@example.com", "defer@example.com", "bounce@example.com"} {
			e.verify(e.org.ID, a)
		}
		s := e.send("default", map[string]any{
			"to":      []string{"ok@example.com", "defer@example.com", "inbox@default.localhost"},
			"cc":      []string{"bounce@example.com"},
			"subject": "Delivery outcomes", "text": "Hello from the outbound tests",
		})
		d := e.until(s.ID, "the first attempt", settled(1))

		ok := recipient(t, d, "ok@example.com")
		if ok.Status != outstore.DeliverySent || ok.LastSMTPCode != "250" || ok.LastEnhancedStatusCode != "2.0.0" ||
			ok.AttemptCount != 1 || ok.At[outstore.DeliverySent].IsZero() {
			t.Errorf("accepted recipient %+v", ok)
		}
		bounced := recipient(t, d, "bounce@example.com")
		if bounced.Status != outstore.DeliveryBounced || bounced.LastSMTPCode != "550" ||
			bounced.LastEnhancedStatusCode != "5.1.1" || bounced.LastSMTPResponse != "User unknown" ||
			bounced.BounceType != "hard" || bounced.AttemptCount != 1 {
			t.Errorf("bounced recipient %+v", bounced)
		}
		deferred := recipient(t, d, "defer@example.com")
		if deferred.Status != outstore.DeliveryDeferred || deferred.LastSMTPCode != "451" ||
			deferred.LastEnhancedStatusCode != "4.2.0" || deferred.AttemptCount != 1 {
			t.Errorf("deferred recipient %+v", deferred)
		}
		internal := recipient(t, d, "inbox@default.localhost")
		if internal.Status != outstore.DeliveryDelivered || internal.AttemptCount != 1 || internal.LastEventType != outstore.EventDelivered {
			t.Errorf("internal recipient %+v", internal)
		}
		if d.Status != outstore.StatusSending || d.SendingAt.IsZero() || d.Provider == "" {
			t.Errorf("email after the first attempt: status %s, sending_at %s, provider %q", d.Status, d.SendingAt, d.Provider)
		}

		// The relay got the message once, for the one recipient it took,
		// from the message's return path, byte for byte as built.
		msgs := relay.Received()
		if len(msgs) != 1 || len(msgs[0].To) != 1 || msgs[0].To[0] != "ok@example.com" {
			t.Fatalf("relay received %+v", msgs)
		}
		if id, valid := e.svc.Outbound.Routes.ParseReturnPath(e.svc.Key, msgs[0].From); !valid || id != s.ID {
			t.Errorf("MAIL FROM %q: not the return path of %s", msgs[0].From, s.ID)
		}
		if string(msgs[0].Data) != string(e.source(s.ID)) {
			t.Errorf("the relay received other bytes than the built message")
		}
		if !hasEvent(d, outstore.EventSent, outstore.ProviderSMTP, msgs[0].QueueID) {
			t.Errorf("no sent event with the relay's queue id %s: %+v", msgs[0].QueueID, d.Events)
		}

		// The internal copy is an email of the namespace, found by search,
		// named by the delivered event.
		found := e.do(e.key, "GET", "/api/emails/default/inbox?to_addr_prefix=inbox@default", nil)
		var res struct {
			Data []struct {
				ID      string `json:"id"`
				Subject string `json:"subject"`
			} `json:"data"`
		}
		found.json(t, &res)
		if len(res.Data) != 1 || res.Data[0].Subject != "Delivery outcomes" {
			t.Fatalf("search for the internal recipient: %s", found.body)
		}
		if !hasEvent(d, outstore.EventDelivered, outstore.ProviderInternal, res.Data[0].ID) {
			t.Errorf("no delivered event naming email %s: %+v", res.Data[0].ID, d.Events)
		}

		// The retry, after its backoff: only the deferred recipient is tried.
		e.later(2 * time.Hour)
		e.svc.Jobs.Wake()
		d = e.until(s.ID, "the second attempt", settled(2))
		if r := recipient(t, d, "defer@example.com"); r.Status != outstore.DeliveryDeferred || r.AttemptCount != 2 {
			t.Errorf("deferred recipient after the retry %+v", r)
		}
		if relay.Rcpts("defer@example.com") != 2 || relay.Rcpts("ok@example.com") != 1 || relay.Rcpts("bounce@example.com") != 1 {
			t.Errorf("RCPTs: defer %d, ok %d, bounce %d; want 2, 1, 1", relay.Rcpts("defer@example.com"),
				relay.Rcpts("ok@example.com"), relay.Rcpts("bounce@example.com"))
		}

		// Past CATCHBOX_OUTBOUND_MAX_AGE the deferred recipient expires,
		// without another RCPT, and the message is sent: every recipient is
		// final and two succeeded.
		e.later(24 * time.Hour)
		e.svc.Jobs.Wake()
		d = e.until(s.ID, "the expiry", func(d outstore.Detail) bool { return d.Status == outstore.StatusSent })
		if r := recipient(t, d, "defer@example.com"); r.Status != outstore.DeliveryExpired || r.AttemptCount != 2 ||
			r.At[outstore.DeliveryExpired].IsZero() || r.LastSMTPCode != "451" {
			t.Errorf("expired recipient %+v", r)
		}
		if relay.Rcpts("defer@example.com") != 2 || relay.Delivered("ok@example.com") != 1 {
			t.Errorf("after the expiry: %d RCPTs for the deferred address, %d deliveries to the accepted one",
				relay.Rcpts("defer@example.com"), relay.Delivered("ok@example.com"))
		}
		if d.SentAt.IsZero() || d.FailureReason == "" {
			t.Errorf("sent email: sent_at %s, failure_reason %q", d.SentAt, d.FailureReason)
		}
		sum := d.DeliverySummary()
		if sum[outstore.DeliverySent] != 1 || sum[outstore.DeliveryDelivered] != 1 || sum[outstore.DeliveryBounced] != 1 ||
			sum[outstore.DeliveryExpired] != 1 {
			t.Errorf("delivery_summary %v", sum)
		}
		job := jobOf(t, e, s.ID)
		if job.State != "done" {
			t.Errorf("delivery job %+v: want done", job)
		}
	})
}

// hasEvent reports whether the email has an event of the type from the
// provider naming the provider message id.
func hasEvent(d outstore.Detail, typ outstore.EventType, provider, providerMessageID string) bool {
	for _, ev := range d.Events {
		if ev.Type == typ && ev.Provider == provider && ev.ProviderMessageID == providerMessageID {
			return true
		}
	}
	return false
}

type jobRow struct {
	State    string
	Attempts int
}

// jobOf reads the delivery job of the email.
func jobOf(t *testing.T, e *apiEnv, outboundID string) jobRow {
	t.Helper()
	var j jobRow
	err := e.db.QueryRow(context.Background(), "SELECT state, attempts FROM jobs WHERE kind = ? AND payload = ?",
		outbound.DeliveryKind, []byte(`{"outbound_id":"`+outboundID+`"}`)).Scan(&j.State, &j.Attempts)
	if err != nil {
		t.Fatalf("delivery job of %s: %v", outboundID, err)
	}
	return j
}

// TestDeliveryWithoutRelay: with no relay configured an external recipient
// fails at once, saying why, while an internal one of the same message is
// delivered; a message with only external recipients fails.
func TestDeliveryWithoutRelay(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		e := newDeliveryEnv(t, db, "")
		e.verify(e.org.ID, "partner@example.com")
		mixed := e.send("default", map[string]any{"to": []string{"partner@example.com", "me@default.localhost"},
			"subject": "mixed", "text": "x"})
		external := e.send("default", map[string]any{"to": []string{"partner@example.com"}, "subject": "external", "text": "x"})

		d := e.until(mixed.ID, "the mixed message", settled(1))
		if r := recipient(t, d, "partner@example.com"); r.Status != outstore.DeliveryFailed || r.AttemptCount != 0 {
			t.Errorf("external recipient without a relay %+v", r)
		}
		if r := recipient(t, d, "me@default.localhost"); r.Status != outstore.DeliveryDelivered {
			t.Errorf("internal recipient %+v", r)
		}
		if d.Status != outstore.StatusSent || !strings.Contains(d.FailureReason, "CATCHBOX_RELAY_URL") {
			t.Errorf("mixed message: status %s, failure_reason %q", d.Status, d.FailureReason)
		}
		d = e.until(external.ID, "the external message", settled(1))
		if d.Status != outstore.StatusFailed || d.FailedAt.IsZero() || !strings.Contains(d.FailureReason, "no relay is configured") {
			t.Errorf("external message: status %s, failed_at %s, failure_reason %q", d.Status, d.FailedAt, d.FailureReason)
		}
		if j := jobOf(t, e, external.ID); j.State != "done" || j.Attempts != 1 {
			t.Errorf("job %+v: want done after one attempt", j)
		}
	})
}

// TestDeliveryRelayFailures: a refused AUTH and a relay that cannot be reached
// defer every recipient of the attempt; a refusal of the data applies to every
// recipient the relay had accepted, by its code.
func TestDeliveryRelayFailures(t *testing.T) {
	relay := startRelay(t)
	down, err := relaytest.Start("u", "p")
	if err != nil {
		t.Fatal(err)
	}
	down.Close()
	for _, c := range []struct {
		name, url string
		data      int
		want      outstore.DeliveryStatus
		code      string
		subtype   string
	}{
		{"wrong password", strings.Replace(relay.URL(), "relay-secret", "wrong", 1), 0, outstore.DeliveryDeferred, "535", "relay_connect"},
		{"unreachable", down.URL(), 0, outstore.DeliveryDeferred, "", "connection"},
		{"data refused for now", relay.URL(), 451, outstore.DeliveryDeferred, "451", "transient"},
		{"data refused", relay.URL(), 554, outstore.DeliveryBounced, "554", "permanent"},
	} {
		t.Run(c.name, func(t *testing.T) {
			storetest.Each(t, func(t *testing.T, db *store.DB) {
				e := newDeliveryEnv(t, db, c.url)
				relay.DataReply(c.data, smtp.EnhancedCode{c.data / 100, 0, 0}, "Message refused")
				defer relay.DataReply(0, smtp.EnhancedCode{}, "")
				addrs := []string{"a-" + c.subtype + "@example.com", "b-" + c.subtype + "@example.com"}
				for _, a := range addrs {
					e.verify(e.org.ID, a)
				}
				s := e.send("default", map[string]any{"to": addrs, "subject": c.name, "text": "x"})
				d := e.until(s.ID, c.name, settled(1))
				for _, a := range addrs {
					r := recipient(t, d, a)
					if r.Status != c.want || r.LastSMTPCode != c.code || r.AttemptCount != 1 {
						t.Errorf("%s: %+v; want %s with code %q", a, r, c.want, c.code)
					}
					if relay.Delivered(a) != 0 {
						t.Errorf("the relay took the message for %s", a)
					}
				}
				last := d.Events[len(d.Events)-1]
				if last.Subtype != c.subtype || len(last.Recipients) != 2 || last.Recipients[0].DiagnosticCode == "" {
					t.Errorf("last event %+v: want subtype %s for both recipients, with a diagnostic code", last, c.subtype)
				}
				if strings.Contains(fmt.Sprint(d.Events), "relay-secret") {
					t.Errorf("an event shows the relay's password")
				}
			})
		})
	}
	if relay.AuthFailures() == 0 {
		t.Errorf("the relay saw no failed AUTH")
	}
}

// TestInternalDeliveryWakesWait: a search held with wait=true on the
// namespace is answered by the internal delivery of a message sent to it.
func TestInternalDeliveryWakesWait(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		e := newDeliveryEnv(t, db, "")
		e.svc.Inbox.WaitHold = time.Minute
		hub := e.svc.Inbox.Notifier.(interface{ Waiters() int }) // the job queue's wake-ups count too
		before := hub.Waiters()
		done := make(chan response, 1)
		go func() {
			req, _ := http.NewRequest("GET", e.base+"/api/emails/default/inbox?wait=true&subject_includes=wake-token", nil)
			req.Header.Set("X-Api-Key", e.key)
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				done <- response{}
				return
			}
			defer resp.Body.Close()
			body, _ := io.ReadAll(resp.Body)
			done <- response{status: resp.StatusCode, body: body}
		}()
		testkit.Await(t, "the wait request held", func() (int, bool) { n := hub.Waiters(); return n, n != before })
		e.send("default", map[string]any{"to": []string{"waiter@default.localhost"}, "subject": "your wake-token", "text": "x"})
		r := <-done
		if r.status != http.StatusOK || !strings.Contains(string(r.body), "your wake-token") {
			t.Fatalf("held wait answered %d %s", r.status, r.body)
		}
	})
}

// TestDeliveryOverTLS: with tls=starttls and tls=tls the relay is reached over
// TLS (the test relay refuses AUTH in clear) and its certificate is checked:
// trusted, the message is sent; not trusted, the attempt is deferred.
func TestDeliveryOverTLS(t *testing.T) {
	for _, mode := range []string{"starttls", "tls"} {
		t.Run(mode, func(t *testing.T) {
			relay, err := relaytest.StartTLS("catchbox", "relay-secret", mode)
			if err != nil {
				t.Fatal(err)
			}
			defer relay.Close()
			for _, trusted := range []bool{true, false} {
				t.Run(fmt.Sprintf("trusted=%v", trusted), func(t *testing.T) {
					e := newDeliveryEnvWith(t, storetest.Open(t, store.SQLite), relay.URL(), func(e *apiEnv) {
						if trusted {
							e.svc.Deliverer.Relay.TLSConfig = &tls.Config{RootCAs: relay.RootCAs, ServerName: "127.0.0.1"}
						}
					})
					addr := fmt.Sprintf("partner-%s-%v@example.com", mode, trusted)
					e.verify(e.org.ID, addr)
					s := e.send("default", map[string]any{"to": []string{addr}, "subject": "over " + mode, "text": "x"})
					d := e.until(s.ID, "the attempt", settled(1))
					r := recipient(t, d, addr)
					switch {
					case trusted && (r.Status != outstore.DeliverySent || relay.Delivered(addr) != 1):
						t.Errorf("trusted relay: %+v, %d copies received", r, relay.Delivered(addr))
					case !trusted && (r.Status != outstore.DeliveryDeferred || relay.Delivered(addr) != 0 ||
						!strings.Contains(d.Events[len(d.Events)-1].Recipients[0].DiagnosticCode, "certificate")):
						t.Errorf("untrusted relay: %+v, events %+v", r, d.Events)
					}
				})
			}
		})
	}
}

// TestDeliveryAfterContentExpired: a message whose built content expired
// before its first attempt (the queue was stopped past
// CATCHBOX_OUTBOUND_CONTENT_TTL) cannot be sent; its recipients fail, saying
// why, and the job ends.
func TestDeliveryAfterContentExpired(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		var id string
		e := newDeliveryEnvWith(t, db, "", func(e *apiEnv) {
			id = e.send("default", map[string]any{"to": []string{"late@default.localhost"}, "subject": "late", "text": "x"}).ID
			e.clock.Add(outstore.DefaultContentTTL + time.Minute)
		})
		d := e.until(id, "the attempt", settled(1))
		r := recipient(t, d, "late@default.localhost")
		if r.Status != outstore.DeliveryFailed || d.Status != outstore.StatusFailed || !strings.Contains(d.FailureReason, "content expired") {
			t.Errorf("recipient %+v; email %s, failure_reason %q", r, d.Status, d.FailureReason)
		}
		if j := jobOf(t, e, id); j.State != "done" {
			t.Errorf("job %+v: want done", j)
		}
	})
}

// TestCancelDuringAttempt: a cancel committed while an attempt is in the
// middle of its relay transaction ends the recipients it names. The relay's
// later 250 is recorded as an event and leaves the external recipient
// cancelled; the internal one is not stored into the inbox.
func TestCancelDuringAttempt(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		relay := startRelay(t)
		e := newDeliveryEnv(t, db, relay.URL())
		e.verify(e.org.ID, "held@example.com")
		release := relay.HoldRcpt()
		defer release()
		s := e.send("default", map[string]any{"to": []string{"held@example.com", "kept-out@default.localhost"},
			"subject": "cancelled midway", "text": "x"})
		testkit.WaitFor(t, "the attempt to reach the relay", func() bool { return relay.Rcpts("held@example.com") > 0 })
		if r := e.do(e.key, "POST", "/api/emails/outbound/"+s.ID+"/cancel", nil); r.status != http.StatusOK {
			t.Fatalf("cancel: %d %s", r.status, r.body)
		}
		release()
		d := e.until(s.ID, "the attempt's results", func(d outstore.Detail) bool {
			got := relay.Received()
			return len(got) == 1 && hasEvent(d, outstore.EventSent, outstore.ProviderSMTP, got[0].QueueID)
		})
		for _, r := range d.Recipients {
			if r.Status != outstore.DeliveryCancelled {
				t.Errorf("recipient %s: %s, want cancelled", r.Email, r.Status)
			}
		}
		if d.Status != outstore.StatusFailed {
			t.Errorf("email status %s, want failed", d.Status)
		}
		found := e.do(e.key, "GET", "/api/emails/default/inbox?to_addr_prefix=kept-out@", nil)
		if !strings.Contains(string(found.body), `"total_count":0`) {
			t.Errorf("the cancelled internal recipient's copy was stored: %s", found.body)
		}
	})
}
