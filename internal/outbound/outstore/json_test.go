package outstore_test

import (
	"encoding/json"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/catchbox/catchbox/internal/outbound/outstore"
	"github.com/catchbox/catchbox/internal/store"
	"github.com/catchbox/catchbox/internal/store/storetest"
)

// The seed's field names (Resources: OutboundEmail and its forms,
// OutboundRecipient, OutboundEvent, the detail form's attachments).
var (
	seedSummary = fields("id organisation_id type status from reply_to subject recipient_count attachment_count " +
		"message_id provider provider_message_id failure_reason queued_at sending_at sent_at failed_at created_at updated_at")
	seedDetailExtra = fields("html text attachments delivery_summary recipients events")
	seedRecipient   = fields("id type email name delivery_status last_event_type last_event_at accepted_at queued_at " +
		"sent_at delayed_at deferred_at delivered_at bounced_at expired_at complained_at unsubscribed_at suppressed_at " +
		"rejected_at failed_at cancelled_at last_smtp_code last_enhanced_status_code last_smtp_response attempt_count " +
		"bounce_type bounce_subtype bounce_classification complaint_feedback_type")
	seedEvent = fields("id provider provider_message_id provider_event_id event_type event_subtype occurred_at " +
		"created_at recipients")
	seedEventRecipient = fields("id outbound_email_recipient_id email smtp_code enhanced_status_code smtp_response " +
		"diagnostic_code action attempt_count bounce_classification")
	seedAttachment = fields("id filename content_type size content_id disposition content_expired_at")
	seedStatuses   = fields("pending accepted queued sent delayed deferred delivered bounced expired complained " +
		"unsubscribed suppressed rejected failed cancelled")
)

func fields(s string) []string { return strings.Fields(s) }

// contractTime is the contract's time format: RFC 3339, UTC, milliseconds.
var contractTime = regexp.MustCompile(`^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$`)

// object decodes JSON into a map, failing the test otherwise.
func object(t *testing.T, v any) map[string]any {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatalf("marshal %T: %v", v, err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatalf("unmarshal %s: %v", b, err)
	}
	return m
}

// keys are the object's keys, sorted.
func keys(m map[string]any) []string {
	var ks []string
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}

// except returns the names of all that are not in drop, sorted.
func except(all []string, drop ...string) []string {
	var out []string
	for _, f := range all {
		if !slices.Contains(drop, f) {
			out = append(out, f)
		}
	}
	sort.Strings(out)
	return out
}

// checkKeys checks that the object has exactly the keys want, that every key is a seed field
// of its kind, that "…_at" values are the contract's times and that every value but
// the numeric ones is a string (the seed: "All are strings except attempt_count").
func checkKeys(t *testing.T, what string, m map[string]any, seed, want []string, numbers ...string) {
	t.Helper()
	sort.Strings(want)
	if got := keys(m); !slices.Equal(got, want) {
		t.Errorf("%s has fields %v, want %v", what, got, want)
	}
	for k, v := range m {
		if !slices.Contains(seed, k) {
			t.Errorf("%s has %q, not a seed field", what, k)
		}
		if strings.HasSuffix(k, "_at") {
			if s, ok := v.(string); !ok || !contractTime.MatchString(s) {
				t.Errorf("%s.%s = %v, not a contract time", what, k, v)
			}
		}
		if slices.Contains(numbers, k) {
			if _, ok := v.(float64); !ok {
				t.Errorf("%s.%s = %v (%T), want a number", what, k, v, v)
			}
		}
	}
}

// TestJSONForms writes an email in its three forms, fresh and after a bounce,
// and checks their fields against the seed's names: optional fields without a
// value are left out.
func TestJSONForms(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		e := newEnv(t, db)
		in := message(e.org, "forms", addrs(1)...)
		in.Attachments = []outstore.NewAttachment{{Filename: "a.txt", ContentType: "text/plain",
			Disposition: outstore.DispositionAttachment, Data: []byte("abc")}}
		created := e.create(in)

		// Fresh: the summary form, as send answers.
		summary := object(t, created)
		fresh := except(seedSummary, "reply_to", "provider", "provider_message_id", "failure_reason", "sending_at",
			"sent_at", "failed_at")
		checkKeys(t, "summary", summary, seedSummary, fresh, "recipient_count", "attachment_count")
		if summary["status"] != "queued" || summary["type"] != "new" || summary["organisation_id"] != e.org ||
			summary["queued_at"] != "2026-11-22T03:23:50.123Z" {
			t.Errorf("summary %v", summary)
		}
		if from := summary["from"].(map[string]any); len(from) != 1 || from["email"] != in.From.Email {
			t.Errorf("from %v, want the email alone", from)
		}
		if summary["recipient_count"] != 1.0 || summary["attachment_count"] != 1.0 {
			t.Errorf("counts %v %v", summary["recipient_count"], summary["attachment_count"])
		}

		// The list form adds the recipients alone.
		list := object(t, outstore.ListItem{Email: created, Recipients: e.get(in.ID).Recipients})
		checkKeys(t, "list item", list, append(seedSummary, "recipients"), append(fresh, "recipients"),
			"recipient_count", "attachment_count")
		r := list["recipients"].([]any)[0].(map[string]any)
		checkKeys(t, "fresh recipient", r, seedRecipient,
			fields("id type email delivery_status last_event_type last_event_at queued_at attempt_count"), "attempt_count")

		// A bounce reported with every detail, and a reply-to and names.
		e.clock.Add(time.Second)
		rid := r["id"].(string)
		if _, err := e.record(in.ID, outstore.NewEvent{Type: outstore.EventBounced, Subtype: "permanent",
			Provider: outstore.ProviderSMTP, ProviderMessageID: "q1", ProviderEventID: "<dsn@relay>",
			Recipients: []outstore.NewEventRecipient{{RecipientID: rid, Attempted: true, SMTPCode: "550",
				EnhancedStatusCode: "5.1.1", SMTPResponse: "No such user", DiagnosticCode: "smtp; 550 5.1.1 No such user",
				Action: "failed", BounceType: "hard", BounceSubtype: "general", BounceClassification: "invalid"}}}); err != nil {
			t.Fatal(err)
		}
		d := e.get(in.ID)
		d.ReplyTo = &outstore.Address{Email: "r@team.localhost", Name: "R"}
		d.Recipients[0].Name = "Someone"
		detail := object(t, d)
		checkKeys(t, "detail", detail, append(seedSummary, seedDetailExtra...),
			except(append(seedSummary, seedDetailExtra...), "sent_at", "html"), "recipient_count", "attachment_count")
		if rt := detail["reply_to"].(map[string]any); rt["email"] != "r@team.localhost" || rt["name"] != "R" {
			t.Errorf("reply_to %v", rt)
		}
		r = detail["recipients"].([]any)[0].(map[string]any)
		checkKeys(t, "bounced recipient", r, seedRecipient,
			fields("id type email name delivery_status last_event_type last_event_at queued_at bounced_at last_smtp_code "+
				"last_enhanced_status_code last_smtp_response attempt_count bounce_type bounce_subtype bounce_classification"),
			"attempt_count")
		for k, v := range r {
			if _, ok := v.(string); !ok && k != "attempt_count" {
				t.Errorf("recipient.%s = %v (%T), want a string", k, v, v)
			}
		}
		if r["last_smtp_code"] != "550" || r["attempt_count"] != 1.0 || r["delivery_status"] != "bounced" {
			t.Errorf("bounced recipient %v", r)
		}

		events := detail["events"].([]any)
		queued, bounced := events[0].(map[string]any), events[1].(map[string]any)
		checkKeys(t, "queued event", queued, seedEvent, fields("id event_type occurred_at created_at recipients"))
		checkKeys(t, "bounced event", bounced, seedEvent, seedEvent)
		checkKeys(t, "queued event recipient", queued["recipients"].([]any)[0].(map[string]any), seedEventRecipient,
			fields("id outbound_email_recipient_id email attempt_count"), "attempt_count")
		er := bounced["recipients"].([]any)[0].(map[string]any)
		checkKeys(t, "bounced event recipient", er, seedEventRecipient, seedEventRecipient, "attempt_count")
		if er["outbound_email_recipient_id"] != rid || er["smtp_code"] != "550" {
			t.Errorf("event recipient %v", er)
		}

		sum := detail["delivery_summary"].(map[string]any)
		checkKeys(t, "delivery_summary", sum, seedStatuses, seedStatuses, seedStatuses...)
		for k, v := range sum {
			if want := map[bool]float64{true: 1, false: 0}[k == "bounced"]; v != want {
				t.Errorf("delivery_summary.%s = %v, want %v", k, v, want)
			}
		}
		raw, _ := json.Marshal(d.DeliverySummary())
		if want := `{"pending":0,"accepted":0,"queued":0,"sent":0,"delayed":0,"deferred":0,"delivered":0,"bounced":1,` +
			`"expired":0,"complained":0,"unsubscribed":0,"suppressed":0,"rejected":0,"failed":0,"cancelled":0}`; string(raw) != want {
			t.Errorf("delivery_summary %s, want the seed's order %s", raw, want)
		}

		a := detail["attachments"].([]any)[0].(map[string]any)
		checkKeys(t, "attachment", a, seedAttachment, fields("id filename content_type size disposition"), "size")
		e.clock.Add(outstore.DefaultContentTTL)
		a = object(t, e.get(in.ID))["attachments"].([]any)[0].(map[string]any)
		checkKeys(t, "expired attachment", a, seedAttachment,
			fields("id filename content_type size disposition content_expired_at"), "size")

		// A detail with no attachments and no events still has the arrays.
		empty := object(t, outstore.Detail{Email: created})
		for _, k := range []string{"attachments", "recipients", "events"} {
			if v, ok := empty[k].([]any); !ok || len(v) != 0 {
				t.Errorf("empty detail: %s = %v, want []", k, empty[k])
			}
		}
	})
}
