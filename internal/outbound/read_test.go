package outbound_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/catchbox/catchbox/internal/config"
	"github.com/catchbox/catchbox/internal/outbound/outstore"
	"github.com/catchbox/catchbox/internal/store"
	"github.com/catchbox/catchbox/internal/store/storetest"
)

// listPage is the answer of GET /api/emails/outbound.
type listPage struct {
	TotalCount int `json:"total_count"`
	Options    struct {
		Limit  int    `json:"limit"`
		Offset int    `json:"offset"`
		Status string `json:"status"`
		Type   string `json:"type"`
	} `json:"options"`
	Data []struct {
		sent
		Recipients []struct {
			Email          string `json:"email"`
			DeliveryStatus string `json:"delivery_status"`
		} `json:"recipients"`
	} `json:"data"`
}

func (p listPage) subjects() []string {
	var out []string
	for _, d := range p.Data {
		out = append(out, d.Subject)
	}
	return out
}

// TestListEndpoint fills the list with emails of every type and status, a second
// apart, and pages and filters it.
func TestListEndpoint(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		e := newAPIEnv(t, db)
		teammate := e.deliver("default", fromTeammate, "john@default.localhost")
		ids := map[string]string{}
		for i := range 7 {
			var s sent
			switch i % 3 {
			case 0:
				s = e.send("default", map[string]any{"to": []string{"a@default.localhost"}, "subject": fmt.Sprintf("n%d", i), "text": "x"})
			case 1:
				s = e.accepted(e.do(e.key, "POST", "/api/emails/"+teammate+"/reply", map[string]any{"subject": fmt.Sprintf("r%d", i), "text": "x"}))
			case 2:
				s = e.accepted(e.do(e.key, "POST", "/api/emails/"+teammate+"/forward", map[string]any{"subject": fmt.Sprintf("f%d", i), "to": []string{"a@default.localhost"}}))
			}
			ids[s.Subject] = s.ID
			e.later(time.Second)
		}
		// n3 is cancelled, so failed; f5 sending.
		if r := e.do(e.key, "POST", "/api/emails/outbound/"+ids["n3"]+"/cancel", nil); r.status != 200 {
			t.Fatalf("cancel: %d %s", r.status, r.body)
		}
		err := db.InTx(context.Background(), func(tx *store.Tx) error {
			_, err := e.svc.Outbound.Store.MarkSending(context.Background(), tx, ids["f5"])
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		e.send("default", map[string]any{"to": []string{"a@default.localhost"}, "subject": "theirs", "text": "x"}) // not in other's list
		other := e.do(e.otherKey, "GET", "/api/emails/outbound", nil)
		if !strings.Contains(string(other.body), `"total_count":0`) {
			t.Errorf("another organisation lists %s", other.body)
		}

		list := func(query string) listPage {
			t.Helper()
			r := e.do(e.key, "GET", "/api/emails/outbound"+query, nil)
			if r.status != 200 {
				t.Fatalf("list %s: %d %s", query, r.status, r.body)
			}
			var p listPage
			r.json(t, &p)
			return p
		}
		p := list("")
		if p.TotalCount != 8 || p.Options.Limit != 20 || p.Options.Offset != 0 || p.Options.Status != "" ||
			!slices.Equal(p.subjects(), []string{"theirs", "n6", "f5", "r4", "n3", "f2", "r1", "n0"}) {
			t.Errorf("default page: total %d options %+v subjects %v", p.TotalCount, p.Options, p.subjects())
		}
		if len(p.Data[0].Recipients) != 1 || p.Data[0].Recipients[0].DeliveryStatus != "queued" {
			t.Errorf("list form recipients %+v", p.Data[0].Recipients)
		}
		for _, c := range []struct {
			query string
			total int
			want  []string
		}{
			{"?limit=2&offset=1", 8, []string{"n6", "f5"}},
			{"?limit=100&offset=7", 8, []string{"n0"}},
			{"?offset=8", 8, nil},
			{"?type=new", 4, []string{"theirs", "n6", "n3", "n0"}},
			{"?type=reply&limit=1", 2, []string{"r4"}},
			{"?type=forward&status=sending", 1, []string{"f5"}},
			{"?status=failed", 1, []string{"n3"}},
			{"?status=queued&type=new", 3, []string{"theirs", "n6", "n0"}},
			{"?status=sent", 0, nil},
			{"?organisation_id=" + e.org.ID + "&limit=1", 8, []string{"theirs"}},
			{"?organisation_id=" + strings.ToUpper(e.org.ID) + "&limit=1", 8, []string{"theirs"}},
			{"?status=&type=", 8, []string{"theirs", "n6", "f5", "r4", "n3", "f2", "r1", "n0"}},
		} {
			p := list(c.query)
			if p.TotalCount != c.total || !slices.Equal(p.subjects(), c.want) {
				t.Errorf("%s: total %d %v, want %d %v", c.query, p.TotalCount, p.subjects(), c.total, c.want)
			}
		}
		p = list("?limit=5&offset=2&status=queued&type=reply")
		if p.Options.Limit != 5 || p.Options.Offset != 2 || p.Options.Status != "queued" || p.Options.Type != "reply" {
			t.Errorf("options %+v", p.Options)
		}
		// options always carries status and type, null when not given (or
		// given empty); limit and offset may be written with a zero fraction.
		for query, want := range map[string]string{
			"":                         `{"limit":20,"offset":0,"status":null,"type":null}`,
			"?status=&type=&limit=":    `{"limit":20,"offset":0,"status":null,"type":null}`,
			"?type=new":                `{"limit":20,"offset":0,"status":null,"type":"new"}`,
			"?status=failed&limit=5.0": `{"limit":5,"offset":0,"status":"failed","type":null}`,
			"?offset=2.00&limit=100.0": `{"limit":100,"offset":2,"status":null,"type":null}`,
		} {
			r := e.do(e.key, "GET", "/api/emails/outbound"+query, nil)
			var b struct {
				Options json.RawMessage `json:"options"`
			}
			r.json(t, &b)
			if r.status != 200 || string(b.Options) != want {
				t.Errorf("%q: %d options %s, want %s", query, r.status, b.Options, want)
			}
		}

		for _, c := range []struct {
			query, code string
			status      int
			fields      []string
		}{
			{"?limit=0", "invalid_parameter", 400, []string{"limit"}},
			{"?limit=101&offset=-1", "invalid_parameter", 400, []string{"limit", "offset"}},
			{"?limit=ten", "invalid_parameter", 400, []string{"limit"}},
			{"?limit=5.5&offset=0.5", "invalid_parameter", 400, []string{"limit", "offset"}},
			{"?status=delivered&type=old", "invalid_parameter", 400, []string{"status", "type"}},
			{"?organisation_id=acme", "invalid_parameter", 400, []string{"organisation_id"}},
			{"?organisation_id=" + e.other.ID, "organisation_mismatch", 403, nil},
			{"?organisation_id=" + e.other.ID + "&limit=0", "invalid_parameter", 400, []string{"limit"}},
		} {
			r := e.do(e.key, "GET", "/api/emails/outbound"+c.query, nil)
			var b errorBody
			r.json(t, &b)
			if r.status != c.status || b.Code != c.code || !slices.Equal(b.fields(), c.fields) {
				t.Errorf("%s: %d %s %v, want %d %s %v", c.query, r.status, b.Code, b.fields(), c.status, c.code, c.fields)
			}
		}
	})
}

// TestIsolation: another organisation's outbound email, its attachments and
// its cancel are 404, as if they did not exist; so are malformed ids.
func TestIsolation(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		e := newAPIEnv(t, db)
		s := e.send("default", map[string]any{"to": []string{"a@default.localhost"}, "subject": "mine", "text": "x",
			"attachments": []map[string]any{{"filename": "a.txt", "content_type": "text/plain", "content_base64": b64([]byte("a"))}}})
		att := e.detail(s.ID).Attachments[0].ID
		missing := outstore.NewID()
		for _, c := range []struct{ key, method, path string }{
			{e.otherKey, "GET", "/api/emails/outbound/" + s.ID},
			{e.otherKey, "GET", "/api/emails/outbound/" + s.ID + "/attachments/" + att},
			{e.otherKey, "POST", "/api/emails/outbound/" + s.ID + "/cancel"},
			{e.key, "GET", "/api/emails/outbound/" + missing},
			{e.key, "GET", "/api/emails/outbound/not-a-uuid"},
			{e.key, "GET", "/api/emails/outbound/" + s.ID + "/attachments/" + missing},
			{e.key, "GET", "/api/emails/outbound/" + s.ID + "/attachments/nope"},
			{e.key, "GET", "/api/emails/outbound/" + missing + "/attachments/" + att},
			{e.key, "POST", "/api/emails/outbound/" + missing + "/cancel"},
		} {
			r := e.do(c.key, c.method, c.path, nil)
			var b errorBody
			r.json(t, &b)
			if r.status != 404 || b.Code != "not_found" {
				t.Errorf("%s %s: %d %s", c.method, c.path, r.status, r.body)
			}
		}
		// The owner reads it; the id in upper case is the same email.
		if r := e.do(e.key, "GET", "/api/emails/outbound/"+strings.ToUpper(s.ID), nil); r.status != 200 {
			t.Errorf("get: %d %s", r.status, r.body)
		}

		// An organisation a namespace is shared with may send from it; the
		// email is its own, not the owner's.
		if _, err := e.svc.Tenants.ShareNamespace(context.Background(), "default", e.other.ID); err != nil {
			t.Fatal(err)
		}
		shared := e.accepted(e.do(e.otherKey, "POST", "/api/emails/send?namespace=default",
			map[string]any{"to": []string{"a@default.localhost"}, "subject": "from a share", "text": "x"}))
		if shared.OrganisationID != e.other.ID {
			t.Errorf("sent through a share for organisation %s", shared.OrganisationID)
		}
		if r := e.do(e.key, "GET", "/api/emails/outbound/"+shared.ID, nil); r.status != 404 {
			t.Errorf("the owner of the namespace reads the other's email: %d", r.status)
		}
	})
}

// TestAttachmentExpiry: an attachment's content is served until the content
// TTL has passed, then 410 while its metadata stays; the periodic expiry
// then deletes the bytes. The TTL is the setting's.
func TestAttachmentExpiry(t *testing.T) {
	for _, ttl := range []time.Duration{0, time.Hour} {
		t.Run(fmt.Sprintf("ttl %v", ttl), func(t *testing.T) {
			storetest.Each(t, func(t *testing.T, db *store.DB) {
				e := newAPIEnvWith(t, db, func(c *config.Serve) {
					if ttl > 0 {
						c.OutboundContentTTL = ttl
					}
				})
				if ttl == 0 {
					ttl = 7 * 24 * time.Hour // the default
				}
				s := e.send("default", map[string]any{"to": []string{"a@default.localhost"}, "subject": "expiring", "text": "x",
					"attachments": []map[string]any{{"filename": "a.bin", "content_type": "application/octet-stream", "content_base64": b64(pdfBytes)}}})
				att := e.detail(s.ID).Attachments[0]
				path := "/api/emails/outbound/" + s.ID + "/attachments/" + att.ID
				e.later(ttl - time.Millisecond)
				if r := e.do(e.key, "GET", path, nil); r.status != 200 {
					t.Fatalf("ttl %v: a millisecond before expiry: %d %s", ttl, r.status, r.body)
				}
				e.later(time.Millisecond)
				check410 := func() {
					t.Helper()
					r := e.do(e.key, "GET", path, nil)
					var b errorBody
					r.json(t, &b)
					if r.status != 410 || b.Code != "content_expired" {
						t.Errorf("ttl %v: at expiry %d %s", ttl, r.status, r.body)
					}
					d := e.detail(s.ID)
					if len(d.Attachments) != 1 || d.Attachments[0].ContentExpiredAt.IsZero() || d.Attachments[0].Size != int64(len(pdfBytes)) ||
						d.Attachments[0].Filename != "a.bin" {
						t.Errorf("ttl %v: metadata after expiry %+v", ttl, d.Attachments)
					}
				}
				check410()
				// The periodic sweep deletes the bytes and the built message.
				if err := e.svc.Outbound.Store.ExpireJob(context.Background()); err != nil {
					t.Fatal(err)
				}
				check410()
				if _, err := e.svc.Outbound.Store.Source(context.Background(), s.ID); err == nil {
					t.Errorf("ttl %v: the built message outlived its TTL", ttl)
				}
				// The detail form says when.
				r := e.do(e.key, "GET", "/api/emails/outbound/"+s.ID, nil)
				if want := `"content_expired_at":"` + start.Add(ttl).Format("2006-01-02T15:04:05.000Z") + `"`; !strings.Contains(string(r.body), want) {
					t.Errorf("ttl %v: detail lacks %s: %s", ttl, want, r.body)
				}
			})
		})
	}
}

// TestCancel cancels the recipients no attempt has reached: a recipient
// already sent and one deferred after an attempt keep their status; a second
// cancel, with nothing left, is 409.
func TestCancel(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		e := newAPIEnv(t, db)
		e.verify(e.org.ID, "partner@example.com")
		s := e.send("default", map[string]any{"to": []string{"a@default.localhost", "partner@example.com"},
			"cc": []string{"b@default.localhost"}, "subject": "three", "text": "x"})
		d := e.detail(s.ID)
		ctx := context.Background()
		record := func(ev outstore.NewEvent) {
			t.Helper()
			err := db.InTx(ctx, func(tx *store.Tx) error {
				_, err := e.svc.Outbound.Store.RecordEvent(ctx, tx, s.ID, ev)
				return err
			})
			if err != nil {
				t.Fatal(err)
			}
		}
		record(outstore.NewEvent{Type: outstore.EventDelivered, Provider: outstore.ProviderInternal,
			Recipients: []outstore.NewEventRecipient{{RecipientID: d.Recipients[0].ID, Attempted: true}}})
		record(outstore.NewEvent{Type: outstore.EventDeferred, Provider: outstore.ProviderSMTP,
			Recipients: []outstore.NewEventRecipient{{RecipientID: d.Recipients[1].ID, Attempted: true, SMTPCode: "451"}}})
		e.later(time.Minute)

		r := e.do(e.key, "POST", "/api/emails/outbound/"+s.ID+"/cancel", nil)
		if r.status != 200 {
			t.Fatalf("cancel: %d %s", r.status, r.body)
		}
		var got struct {
			Status     string `json:"status"`
			Recipients []struct {
				Email          string `json:"email"`
				DeliveryStatus string `json:"delivery_status"`
				CancelledAt    string `json:"cancelled_at"`
			} `json:"recipients"`
			Events []struct {
				EventType  string `json:"event_type"`
				Recipients []struct {
					Email string `json:"email"`
				} `json:"recipients"`
			} `json:"events"`
			DeliverySummary map[string]int `json:"delivery_summary"`
		}
		r.json(t, &got)
		var statuses []string
		for _, rc := range got.Recipients {
			statuses = append(statuses, rc.Email+" "+rc.DeliveryStatus)
		}
		want := []string{"a@default.localhost delivered", "partner@example.com deferred", "b@default.localhost cancelled"}
		last := got.Events[len(got.Events)-1]
		if !slices.Equal(statuses, want) || got.Status != "sending" || got.Recipients[2].CancelledAt != "2026-11-22T03:24:50.123Z" ||
			last.EventType != "cancelled" || len(last.Recipients) != 1 || last.Recipients[0].Email != "b@default.localhost" ||
			got.DeliverySummary["cancelled"] != 1 || got.DeliverySummary["deferred"] != 1 {
			t.Errorf("after cancel: %s", r.body)
		}

		r = e.do(e.key, "POST", "/api/emails/outbound/"+s.ID+"/cancel", nil)
		var b errorBody
		r.json(t, &b)
		if r.status != 409 || b.Code != "not_cancellable" {
			t.Errorf("second cancel: %d %s", r.status, r.body)
		}

		// Cancelling every recipient of a queued email fails it.
		s = e.send("default", map[string]any{"to": []string{"a@default.localhost"}, "subject": "one", "text": "x"})
		r = e.do(e.key, "POST", "/api/emails/outbound/"+s.ID+"/cancel", nil)
		if r.status != 200 || !strings.Contains(string(r.body), `"status":"failed"`) || !strings.Contains(string(r.body), `"failure_reason":"no recipient was delivered (cancelled 1)"`) {
			t.Errorf("cancel of a queued email: %d %s", r.status, r.body)
		}
	})
}

// TestUsageOfSends: a message with an external recipient counts as outbound usage
// of the sending organisation in its month; one to the namespace only does
// not, whatever its kind.
func TestUsageOfSends(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		e := newAPIEnv(t, db)
		e.verify(e.org.ID, "partner@example.com")
		teammate := e.deliver("default", fromTeammate, "john@default.localhost")
		usage := func(at time.Time) int64 {
			t.Helper()
			u, err := e.svc.Outbound.Store.MonthlyUsage(context.Background(), e.org.ID, at)
			if err != nil {
				t.Fatal(err)
			}
			return u.Messages
		}
		e.send("default", map[string]any{"to": []string{"a@default.localhost"}, "bcc": []string{"b@default.localhost"}, "subject": "s", "text": "x"})
		e.accepted(e.do(e.key, "POST", "/api/emails/"+teammate+"/reply", map[string]any{"text": "x"}))
		e.accepted(e.do(e.key, "POST", "/api/emails/"+teammate+"/forward", map[string]any{"to": []string{"c@default.localhost"}}))
		if n := usage(start); n != 0 {
			t.Errorf("internal sends counted %d", n)
		}
		e.send("default", map[string]any{"to": []string{"a@default.localhost"}, "bcc": []string{"partner@example.com"}, "subject": "s", "text": "x"})
		e.accepted(e.do(e.key, "POST", "/api/emails/"+teammate+"/forward", map[string]any{"to": []string{"Partner@Example.com"}}))
		e.later(10 * 24 * time.Hour) // December
		e.send("default", map[string]any{"to": []string{"partner@example.com"}, "subject": "s", "text": "x"})
		if n, m := usage(start), usage(start.Add(10*24*time.Hour)); n != 2 || m != 1 {
			t.Errorf("usage November %d, December %d; want 2, 1", n, m)
		}
		if u, _ := e.svc.Outbound.Store.MonthlyUsage(context.Background(), e.other.ID, start); u.Messages != 0 {
			t.Errorf("another organisation's usage %d", u.Messages)
		}
		if _, err := outstore.ParseMonth("2026-13", start); err == nil {
			t.Errorf("month 13 parsed")
		}
		if m, _ := outstore.ParseMonth("", start); m.Format("2006-01") != "2026-11" {
			t.Errorf("default month %v", m)
		}
	})
}

// TestLocation: the Location of a 202 is the detail form's path, relative to
// the API's base, and reads the email just created.
func TestLocation(t *testing.T) {
	e := newAPIEnv(t, storetest.Open(t, store.SQLite))
	r := e.do(e.key, "POST", "/api/emails/send?namespace=DEFAULT", map[string]any{"to": []string{"a@default.localhost"}, "subject": "s", "text": "x"})
	s := e.accepted(r)
	loc, err := url.Parse(r.header.Get("Location"))
	if err != nil || loc.IsAbs() {
		t.Fatalf("Location %q", r.header.Get("Location"))
	}
	got := e.do(e.key, "GET", loc.Path, nil)
	if got.status != 200 || !strings.Contains(string(got.body), `"id":"`+s.ID+`"`) || !strings.Contains(string(got.body), `"delivery_summary"`) {
		t.Errorf("GET %s: %d %s", loc, got.status, got.body)
	}
}
