package outstore_test

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"sync"
	"testing"
	"time"

	"github.com/catchbox/catchbox/internal/outbound/outstore"
	"github.com/catchbox/catchbox/internal/store"
	"github.com/catchbox/catchbox/internal/store/storetest"
)

// step is one event of a sequence: its type, when it happened (seconds after
// the email was created) and the recipients (by position) it concerns.
type step struct {
	typ       outstore.EventType
	at        int
	rcpts     []int
	attempted bool
	smtp      string // "code enhanced text..."; "" for none
	bounce    string // bounce_type
	feedback  string // complaint_feedback_type
	reason    string // failure_reason
	provider  string
	providerM string // provider message id
}

// wantRecipient is a recipient's state after a sequence: its status, attempt
// count, last event and its second, the seconds of its <status>_at fields,
// and its last SMTP code.
type wantRecipient struct {
	status   outstore.DeliveryStatus
	attempts int
	last     outstore.EventType
	lastAt   int
	at       map[outstore.DeliveryStatus]int
	smtp     string
	bounce   string
	feedback string
}

// never is a time field that must be absent.
const never = -1

var stateCases = []struct {
	name  string
	rcpts int
	steps []step
	want  []wantRecipient
	// The email's status, the seconds of its sending_at, sent_at and failed_at
	// (never for absent), its failure_reason and provider.
	status                    outstore.Status
	sending, sent, failed     int
	reason, provider, providM string
}{
	{
		name: "created", rcpts: 2,
		want: []wantRecipient{
			{status: "queued", last: "queued", at: map[outstore.DeliveryStatus]int{"queued": 0}},
			{status: "queued", last: "queued", at: map[outstore.DeliveryStatus]int{"queued": 0}},
		},
		status: "queued", sending: never, sent: never, failed: never,
	},
	{
		name: "internal delivery", rcpts: 1,
		steps: []step{{typ: "delivered", at: 1, rcpts: []int{0}, attempted: true, provider: "internal", providerM: "inbound-1"}},
		want: []wantRecipient{{status: "delivered", attempts: 1, last: "delivered", lastAt: 1,
			at: map[outstore.DeliveryStatus]int{"queued": 0, "delivered": 1}}},
		status: "sent", sending: 1, sent: 1, failed: never, provider: "internal", providM: "inbound-1",
	},
	{
		name: "relay 250 to both in one event", rcpts: 2,
		steps: []step{{typ: "sent", at: 2, rcpts: []int{0, 1}, attempted: true, smtp: "250 2.0.0 Ok: queued as ABC", provider: "smtp", providerM: "ABC"}},
		want: []wantRecipient{
			{status: "sent", attempts: 1, last: "sent", lastAt: 2, at: map[outstore.DeliveryStatus]int{"queued": 0, "sent": 2}, smtp: "250"},
			{status: "sent", attempts: 1, last: "sent", lastAt: 2, at: map[outstore.DeliveryStatus]int{"queued": 0, "sent": 2}, smtp: "250"},
		},
		status: "sent", sending: 2, sent: 2, failed: never, provider: "smtp", providM: "ABC",
	},
	{
		name: "deferred then sent", rcpts: 1,
		steps: []step{
			{typ: "deferred", at: 1, rcpts: []int{0}, attempted: true, smtp: "451 4.7.1 Try again later", provider: "smtp"},
			{typ: "sent", at: 60, rcpts: []int{0}, attempted: true, smtp: "250 2.0.0 Ok", provider: "smtp"},
		},
		want: []wantRecipient{{status: "sent", attempts: 2, last: "sent", lastAt: 60,
			at: map[outstore.DeliveryStatus]int{"queued": 0, "deferred": 1, "sent": 60}, smtp: "250"}},
		status: "sent", sending: 1, sent: 60, failed: never, provider: "smtp",
	},
	{
		name: "deferred until expired", rcpts: 1,
		steps: []step{
			{typ: "deferred", at: 1, rcpts: []int{0}, attempted: true, smtp: "451 4.7.1 Try again later"},
			{typ: "deferred", at: 30, rcpts: []int{0}, attempted: true, smtp: "421 4.4.2 Timeout"},
			{typ: "expired", at: 86400, rcpts: []int{0}},
		},
		want: []wantRecipient{{status: "expired", attempts: 2, last: "expired", lastAt: 86400,
			at: map[outstore.DeliveryStatus]int{"queued": 0, "deferred": 30, "expired": 86400}, smtp: "421"}},
		status: "failed", sending: 1, sent: never, failed: 86400, reason: "no recipient was delivered (expired 1)",
	},
	{
		name: "5xx bounce", rcpts: 1,
		steps: []step{{typ: "bounced", at: 1, rcpts: []int{0}, attempted: true, smtp: "550 5.1.1 No such user", bounce: "hard"}},
		want: []wantRecipient{{status: "bounced", attempts: 1, last: "bounced", lastAt: 1,
			at: map[outstore.DeliveryStatus]int{"queued": 0, "bounced": 1}, smtp: "550", bounce: "hard"}},
		status: "failed", sending: 1, sent: never, failed: 1, reason: "no recipient was delivered (bounced 1)",
	},
	{
		name: "one delivered, the other deferred then bounced", rcpts: 2,
		steps: []step{
			{typ: "delivered", at: 1, rcpts: []int{0}, attempted: true},
			{typ: "deferred", at: 1, rcpts: []int{1}, attempted: true, smtp: "450 4.2.0 Busy"},
			{typ: "bounced", at: 5, rcpts: []int{1}, attempted: true, smtp: "550 5.7.1 Rejected", bounce: "hard"},
		},
		want: []wantRecipient{
			{status: "delivered", attempts: 1, last: "delivered", lastAt: 1, at: map[outstore.DeliveryStatus]int{"queued": 0, "delivered": 1}},
			{status: "bounced", attempts: 2, last: "bounced", lastAt: 5, at: map[outstore.DeliveryStatus]int{"queued": 0, "deferred": 1, "bounced": 5}, smtp: "550", bounce: "hard"},
		},
		status: "sent", sending: 1, sent: 5, failed: never,
	},
	{
		name: "a DSN bounces what the relay accepted", rcpts: 1,
		steps: []step{
			{typ: "sent", at: 1, rcpts: []int{0}, attempted: true, smtp: "250 2.0.0 Ok"},
			{typ: "bounced", at: 300, rcpts: []int{0}, smtp: "550 5.1.1 User unknown", bounce: "hard"},
		},
		want: []wantRecipient{{status: "bounced", attempts: 1, last: "bounced", lastAt: 300,
			at: map[outstore.DeliveryStatus]int{"queued": 0, "sent": 1, "bounced": 300}, smtp: "550", bounce: "hard"}},
		status: "failed", sending: 1, sent: 1, failed: 300, reason: "no recipient was delivered (bounced 1)",
	},
	{
		name: "a DSN delays what the relay accepted, then it is delivered", rcpts: 1,
		steps: []step{
			{typ: "sent", at: 1, rcpts: []int{0}, attempted: true, smtp: "250 2.0.0 Ok"},
			{typ: "delayed", at: 3600, rcpts: []int{0}, smtp: "451 4.4.1 No answer"},
			{typ: "delivered", at: 7200, rcpts: []int{0}},
		},
		want: []wantRecipient{{status: "delivered", attempts: 1, last: "delivered", lastAt: 7200,
			at: map[outstore.DeliveryStatus]int{"queued": 0, "sent": 1, "delayed": 3600, "delivered": 7200}, smtp: "451"}},
		status: "sent", sending: 1, sent: 1, failed: never,
	},
	{
		name: "a sent email stays sent while a DSN says delayed", rcpts: 1,
		steps: []step{
			{typ: "sent", at: 1, rcpts: []int{0}, attempted: true},
			{typ: "delayed", at: 3600, rcpts: []int{0}},
		},
		want: []wantRecipient{{status: "delayed", attempts: 1, last: "delayed", lastAt: 3600,
			at: map[outstore.DeliveryStatus]int{"queued": 0, "sent": 1, "delayed": 3600}}},
		status: "sent", sending: 1, sent: 1, failed: never,
	},
	{
		name: "a late delay does not reopen a bounce", rcpts: 1,
		steps: []step{
			{typ: "bounced", at: 1, rcpts: []int{0}, attempted: true, smtp: "550 5.1.1 No such user"},
			{typ: "delayed", at: 9, rcpts: []int{0}, smtp: "451 4.4.1 No answer"},
		},
		want: []wantRecipient{{status: "bounced", attempts: 1, last: "delayed", lastAt: 9,
			at: map[outstore.DeliveryStatus]int{"queued": 0, "bounced": 1, "delayed": 9}, smtp: "451"}},
		status: "failed", sending: 1, sent: never, failed: 1, reason: "no recipient was delivered (bounced 1)",
	},
	{
		name: "an event recorded after a later one is not the last", rcpts: 1,
		steps: []step{
			{typ: "delivered", at: 20, rcpts: []int{0}, attempted: true, smtp: "250 2.0.0 Ok"},
			{typ: "delayed", at: 10, rcpts: []int{0}, smtp: "451 4.4.1 No answer"},
		},
		want: []wantRecipient{{status: "delivered", attempts: 1, last: "delivered", lastAt: 20,
			at: map[outstore.DeliveryStatus]int{"queued": 0, "delivered": 20, "delayed": 10}, smtp: "250"}},
		status: "sent", sending: 20, sent: 20, failed: never,
	},
	{
		name: "an older report of the same type keeps the later time", rcpts: 1,
		steps: []step{
			{typ: "sent", at: 1, rcpts: []int{0}, attempted: true},
			{typ: "delayed", at: 100, rcpts: []int{0}},
			{typ: "delayed", at: 50, rcpts: []int{0}},
		},
		want: []wantRecipient{{status: "delayed", attempts: 1, last: "delayed", lastAt: 100,
			at: map[outstore.DeliveryStatus]int{"queued": 0, "sent": 1, "delayed": 100}}},
		status: "sent", sending: 1, sent: 1, failed: never,
	},
	{
		name: "complaint after delivery", rcpts: 1,
		steps: []step{
			{typ: "delivered", at: 1, rcpts: []int{0}, attempted: true},
			{typ: "complained", at: 50, rcpts: []int{0}, feedback: "abuse"},
			{typ: "bounced", at: 60, rcpts: []int{0}},
		},
		want: []wantRecipient{{status: "complained", attempts: 1, last: "bounced", lastAt: 60,
			at: map[outstore.DeliveryStatus]int{"queued": 0, "delivered": 1, "complained": 50, "bounced": 60}, feedback: "abuse"}},
		status: "sent", sending: 1, sent: 1, failed: never,
	},
	{
		name: "opened moves no status", rcpts: 1,
		steps: []step{
			{typ: "sent", at: 1, rcpts: []int{0}, attempted: true},
			{typ: "opened", at: 2, rcpts: []int{0}},
		},
		want: []wantRecipient{{status: "sent", attempts: 1, last: "opened", lastAt: 2,
			at: map[outstore.DeliveryStatus]int{"queued": 0, "sent": 1}}},
		status: "sent", sending: 1, sent: 1, failed: never,
	},
	{
		name: "cancelled before any attempt", rcpts: 2,
		steps: []step{{typ: "cancelled", at: 3, rcpts: []int{0, 1}}},
		want: []wantRecipient{
			{status: "cancelled", last: "cancelled", lastAt: 3, at: map[outstore.DeliveryStatus]int{"queued": 0, "cancelled": 3}},
			{status: "cancelled", last: "cancelled", lastAt: 3, at: map[outstore.DeliveryStatus]int{"queued": 0, "cancelled": 3}},
		},
		status: "failed", sending: 3, sent: never, failed: 3, reason: "no recipient was delivered (cancelled 2)",
	},
	{
		name: "cancel leaves a recipient under way sending", rcpts: 2,
		steps: []step{
			{typ: "deferred", at: 1, rcpts: []int{0}, attempted: true},
			{typ: "cancelled", at: 2, rcpts: []int{1}},
		},
		want: []wantRecipient{
			{status: "deferred", attempts: 1, last: "deferred", lastAt: 1, at: map[outstore.DeliveryStatus]int{"queued": 0, "deferred": 1}},
			{status: "cancelled", last: "cancelled", lastAt: 2, at: map[outstore.DeliveryStatus]int{"queued": 0, "cancelled": 2}},
		},
		status: "sending", sending: 1, sent: never, failed: never,
	},
	{
		name: "suppressed and sent", rcpts: 2,
		steps: []step{
			{typ: "suppressed", at: 0, rcpts: []int{0}},
			{typ: "sent", at: 1, rcpts: []int{1}, attempted: true},
		},
		want: []wantRecipient{
			{status: "suppressed", last: "suppressed", lastAt: 0, at: map[outstore.DeliveryStatus]int{"queued": 0, "suppressed": 0}},
			{status: "sent", attempts: 1, last: "sent", lastAt: 1, at: map[outstore.DeliveryStatus]int{"queued": 0, "sent": 1}},
		},
		status: "sent", sending: 0, sent: 1, failed: never,
	},
	{
		name: "no relay: failed with the event's reason", rcpts: 1,
		steps: []step{{typ: "failed", at: 1, rcpts: []int{0}, reason: "no relay is configured (CATCHBOX_RELAY_URL)"}},
		want: []wantRecipient{{status: "failed", last: "failed", lastAt: 1,
			at: map[outstore.DeliveryStatus]int{"queued": 0, "failed": 1}}},
		status: "failed", sending: 1, sent: never, failed: 1, reason: "no relay is configured (CATCHBOX_RELAY_URL)",
	},
	{
		name: "the first provider is the email's", rcpts: 2,
		steps: []step{
			{typ: "delivered", at: 1, rcpts: []int{0}, attempted: true, provider: "internal", providerM: "inbound-1"},
			{typ: "sent", at: 2, rcpts: []int{1}, attempted: true, provider: "smtp", providerM: "relay-1"},
		},
		want: []wantRecipient{
			{status: "delivered", attempts: 1, last: "delivered", lastAt: 1, at: map[outstore.DeliveryStatus]int{"queued": 0, "delivered": 1}},
			{status: "sent", attempts: 1, last: "sent", lastAt: 2, at: map[outstore.DeliveryStatus]int{"queued": 0, "sent": 2}},
		},
		status: "sent", sending: 1, sent: 2, failed: never, provider: "internal", providM: "inbound-1",
	},
}

// splitSMTP splits "code enhanced text" into its three parts.
func splitSMTP(s string) (code, enhanced, text string) {
	if s == "" {
		return "", "", ""
	}
	fmt.Sscanf(s, "%s %s", &code, &enhanced)
	return code, enhanced, s[len(code)+len(enhanced)+2:]
}

// TestRecordEventStates plays each sequence of events on a fresh email and
// checks every recipient's state and the email's.
func TestRecordEventStates(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		e := newEnv(t, db)
		for _, c := range stateCases {
			in := message(e.org, c.name, addrs(c.rcpts)...)
			created := e.create(in).CreatedAt
			sec := func(n int) time.Time { return created.Add(time.Duration(n) * time.Second) }
			rids := func() []string {
				var ids []string
				for _, r := range e.get(in.ID).Recipients {
					ids = append(ids, r.ID)
				}
				return ids
			}()
			for i, s := range c.steps {
				e.clock.Add(time.Millisecond) // recorded in order, whenever they happened
				ev := outstore.NewEvent{Type: s.typ, OccurredAt: sec(s.at), FailureReason: s.reason,
					Provider: s.provider, ProviderMessageID: s.providerM}
				code, enhanced, text := splitSMTP(s.smtp)
				for _, r := range s.rcpts {
					ev.Recipients = append(ev.Recipients, outstore.NewEventRecipient{RecipientID: rids[r],
						Attempted: s.attempted, SMTPCode: code, EnhancedStatusCode: enhanced, SMTPResponse: text,
						BounceType: s.bounce, ComplaintFeedbackType: s.feedback})
				}
				if _, err := e.record(in.ID, ev); err != nil {
					t.Fatalf("%s: step %d: %v", c.name, i, err)
				}
			}

			d := e.get(in.ID)
			for i, w := range c.want {
				r := d.Recipients[i]
				at := map[outstore.DeliveryStatus]int{}
				for st, tm := range r.At {
					at[st] = int(tm.Sub(created) / time.Second)
				}
				got := wantRecipient{status: r.Status, attempts: r.AttemptCount, last: r.LastEventType,
					lastAt: int(r.LastEventAt.Sub(created) / time.Second), at: at, smtp: r.LastSMTPCode,
					bounce: r.BounceType, feedback: r.ComplaintFeedbackType}
				if !reflect.DeepEqual(got, w) {
					t.Errorf("%s: recipient %d is\n%+v\nwant\n%+v", c.name, i, got, w)
				}
			}
			secOf := func(tm time.Time) int {
				if tm.IsZero() {
					return never
				}
				return int(tm.Sub(created) / time.Second)
			}
			if d.Status != c.status || secOf(d.SendingAt) != c.sending || secOf(d.SentAt) != c.sent ||
				secOf(d.FailedAt) != c.failed || d.FailureReason != c.reason || d.Provider != c.provider ||
				d.ProviderMessageID != c.providM {
				t.Errorf("%s: email %s sending %d sent %d failed %d reason %q provider %q %q; want %s %d %d %d %q %q %q",
					c.name, d.Status, secOf(d.SendingAt), secOf(d.SentAt), secOf(d.FailedAt), d.FailureReason,
					d.Provider, d.ProviderMessageID, c.status, c.sending, c.sent, c.failed, c.reason, c.provider, c.providM)
			}
			wantSum := outstore.DeliverySummary{}
			for _, w := range c.want {
				wantSum[w.status]++
			}
			if !reflect.DeepEqual(d.DeliverySummary(), wantSum) {
				t.Errorf("%s: delivery summary %v, want %v", c.name, d.DeliverySummary(), wantSum)
			}
			if len(d.Events) != len(c.steps)+1 {
				t.Errorf("%s: %d events, want %d", c.name, len(d.Events), len(c.steps)+1)
			}
			if !d.UpdatedAt.Equal(e.clock.Now()) {
				t.Errorf("%s: updated_at %v, want the last recording's %v", c.name, d.UpdatedAt, e.clock.Now())
			}
		}
	})
}

// TestEventRecipientsRecorded: an event keeps what it said of each recipient,
// and the attempt count each had once it was recorded.
func TestEventRecipientsRecorded(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		e := newEnv(t, db)
		in := message(e.org, "events", addrs(2)...)
		e.create(in)
		rs := e.get(in.ID).Recipients
		e.clock.Add(time.Second)
		deferred, err := e.record(in.ID, outstore.NewEvent{Type: outstore.EventDeferred, Provider: outstore.ProviderSMTP,
			Recipients: []outstore.NewEventRecipient{{RecipientID: rs[1].ID, Attempted: true, SMTPCode: "451",
				EnhancedStatusCode: "4.7.1", SMTPResponse: "Greylisted"}}})
		if err != nil {
			t.Fatal(err)
		}
		e.clock.Add(time.Minute)
		bounced, err := e.record(in.ID, outstore.NewEvent{Type: outstore.EventBounced, Subtype: "permanent",
			Provider: outstore.ProviderSMTP, ProviderMessageID: "relay-9", ProviderEventID: "<dsn-1@relay>",
			Recipients: []outstore.NewEventRecipient{
				{RecipientID: rs[1].ID, SMTPCode: "550", EnhancedStatusCode: "5.1.1", SMTPResponse: "User unknown",
					DiagnosticCode: "smtp; 550 5.1.1 User unknown", Action: "failed", BounceType: "hard",
					BounceSubtype: "general", BounceClassification: "invalid_recipient"},
				{RecipientID: rs[0].ID, Attempted: true, SMTPCode: "550", EnhancedStatusCode: "5.2.2", SMTPResponse: "Mailbox full",
					Action: "failed", BounceType: "soft", BounceClassification: "mailbox_full"},
			}})
		if err != nil {
			t.Fatal(err)
		}
		d := e.get(in.ID)
		if len(d.Events) != 3 || d.Events[1].ID != deferred.ID || d.Events[2].ID != bounced.ID {
			t.Fatalf("events %+v, want queued, deferred, bounced", d.Events)
		}
		if !reflect.DeepEqual(d.Events[2], bounced) {
			t.Errorf("stored event\n%+v\nwant what RecordEvent returned\n%+v", d.Events[2], bounced)
		}
		b := d.Events[2]
		if b.Subtype != "permanent" || b.ProviderEventID != "<dsn-1@relay>" || b.ProviderMessageID != "relay-9" ||
			!b.OccurredAt.Equal(start.Add(time.Second+time.Minute)) || !b.CreatedAt.Equal(b.OccurredAt) {
			t.Errorf("bounced event %+v", b)
		}
		// In the order given, each with the attempt count its recipient had then.
		want := []outstore.EventRecipient{
			{ID: b.Recipients[0].ID, RecipientID: rs[1].ID, Email: rs[1].Email, SMTPCode: "550", EnhancedStatusCode: "5.1.1",
				SMTPResponse: "User unknown", DiagnosticCode: "smtp; 550 5.1.1 User unknown", Action: "failed",
				AttemptCount: 1, BounceClassification: "invalid_recipient"},
			{ID: b.Recipients[1].ID, RecipientID: rs[0].ID, Email: rs[0].Email, SMTPCode: "550", EnhancedStatusCode: "5.2.2",
				SMTPResponse: "Mailbox full", Action: "failed", AttemptCount: 1, BounceClassification: "mailbox_full"},
		}
		if !reflect.DeepEqual(b.Recipients, want) {
			t.Errorf("event recipients\n%+v\nwant\n%+v", b.Recipients, want)
		}
		r := d.Recipients[1]
		if r.BounceType != "hard" || r.BounceSubtype != "general" || r.BounceClassification != "invalid_recipient" ||
			r.LastEnhancedStatusCode != "5.1.1" || r.LastSMTPResponse != "User unknown" || r.AttemptCount != 1 {
			t.Errorf("bounced recipient %+v", r)
		}
	})
}

// TestRecordEventRefuses: an unknown recipient, a repeated one, a provider
// event recorded before, an unknown type or email: nothing is written.
func TestRecordEventRefuses(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		e := newEnv(t, db)
		in := message(e.org, "refused", addrs(1)...)
		e.create(in)
		other := message(e.org, "other", addrs(1)...)
		e.create(other)
		rid := e.get(in.ID).Recipients[0].ID
		sent := func(ids ...string) outstore.NewEvent {
			ev := outstore.NewEvent{Type: outstore.EventSent, ProviderEventID: "ev-1"}
			for _, id := range ids {
				ev.Recipients = append(ev.Recipients, outstore.NewEventRecipient{RecipientID: id, Attempted: true})
			}
			return ev
		}
		if _, err := e.record(in.ID, sent(rid)); err != nil {
			t.Fatal(err)
		}
		for _, c := range []struct {
			name string
			id   string
			ev   outstore.NewEvent
			want error
		}{
			{"another email's recipient", in.ID, outstore.NewEvent{Type: outstore.EventDelivered,
				Recipients: []outstore.NewEventRecipient{{RecipientID: rid}, {RecipientID: e.get(other.ID).Recipients[0].ID}}}, outstore.ErrUnknownRecipient},
			{"a repeated recipient", in.ID, outstore.NewEvent{Type: outstore.EventDelivered,
				Recipients: []outstore.NewEventRecipient{{RecipientID: rid}, {RecipientID: rid}}}, outstore.ErrUnknownRecipient},
			{"the same provider event", in.ID, func() outstore.NewEvent { ev := sent(rid); ev.Type = outstore.EventDelivered; return ev }(), outstore.ErrDuplicateEvent},
			{"an unknown email", outstore.NewID(), outstore.NewEvent{Type: outstore.EventDelivered,
				Recipients: []outstore.NewEventRecipient{{RecipientID: rid}}}, outstore.ErrNotFound},
			{"an unknown type", in.ID, outstore.NewEvent{Type: "pending", Recipients: []outstore.NewEventRecipient{{RecipientID: rid}}}, nil},
			{"no recipients", in.ID, outstore.NewEvent{Type: outstore.EventDelivered}, nil},
		} {
			_, err := e.record(c.id, c.ev)
			if err == nil || c.want != nil && !errors.Is(err, c.want) {
				t.Errorf("%s: %v, want %v", c.name, err, c.want)
			}
		}
		d := e.get(in.ID)
		if len(d.Events) != 2 || d.Recipients[0].Status != outstore.DeliverySent || d.Recipients[0].AttemptCount != 1 {
			t.Errorf("after refused events: %d events, recipient %s with %d attempts; want 2, sent, 1",
				len(d.Events), d.Recipients[0].Status, d.Recipients[0].AttemptCount)
		}
		// Another email may use the same provider event id.
		if _, err := e.record(other.ID, sent(e.get(other.ID).Recipients[0].ID)); err != nil {
			t.Errorf("the same provider event id on another email: %v", err)
		}
	})
}

// TestMarkSending moves a queued email to sending once, and nothing else.
func TestMarkSending(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		e := newEnv(t, db)
		ctx := context.Background()
		in := message(e.org, "mark", addrs(1)...)
		e.create(in)
		mark := func() bool {
			var moved bool
			if err := db.InTx(ctx, func(tx *store.Tx) (err error) {
				moved, err = e.s.MarkSending(ctx, tx, in.ID)
				return err
			}); err != nil {
				t.Fatal(err)
			}
			return moved
		}
		e.clock.Add(time.Second)
		if !mark() {
			t.Fatal("a queued email was not marked sending")
		}
		e.clock.Add(time.Second)
		if mark() {
			t.Error("an email sending already was marked again")
		}
		d := e.get(in.ID)
		if d.Status != outstore.StatusSending || !d.SendingAt.Equal(start.Add(time.Second)) || d.Recipients[0].Status != outstore.DeliveryQueued {
			t.Errorf("marked: %s since %v, recipient %s", d.Status, d.SendingAt, d.Recipients[0].Status)
		}
		if _, err := e.record(in.ID, outstore.NewEvent{Type: outstore.EventSent,
			Recipients: []outstore.NewEventRecipient{{RecipientID: d.Recipients[0].ID, Attempted: true}}}); err != nil {
			t.Fatal(err)
		}
		if mark() {
			t.Error("a sent email was marked sending")
		}
		if d := e.get(in.ID); d.Status != outstore.StatusSent || !d.SendingAt.Equal(start.Add(time.Second)) {
			t.Errorf("after the event: %s since %v; want sent, sending_at kept", d.Status, d.SendingAt)
		}
	})
}

// TestConcurrentEventsOfOneEmail records the results of its two recipients
// in two transactions at once: each sees the other's, so the email ends sent.
// Without the row lock, the later commit would derive the status from what
// it read before the earlier one committed and leave the email sending.
func TestConcurrentEventsOfOneEmail(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		e := newEnv(t, db)
		for round := range 20 {
			in := message(e.org, fmt.Sprint("round ", round), addrs(2)...)
			e.create(in)
			rs := e.get(in.ID).Recipients
			var wg sync.WaitGroup
			errs := make([]error, 2)
			for i := range 2 {
				wg.Go(func() {
					_, errs[i] = e.record(in.ID, outstore.NewEvent{Type: outstore.EventSent,
						Recipients: []outstore.NewEventRecipient{{RecipientID: rs[i].ID, Attempted: true}}})
				})
			}
			wg.Wait()
			if err := errors.Join(errs...); err != nil {
				t.Fatal(err)
			}
			if d := e.get(in.ID); d.Status != outstore.StatusSent || d.DeliverySummary()[outstore.DeliverySent] != 2 {
				t.Fatalf("round %d: email %s with %v, want sent to both", round, d.Status, d.DeliverySummary())
			}
		}
	})
}
