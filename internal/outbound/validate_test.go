package outbound_test

import (
	"crypto/rand"
	"encoding/base64"
	"slices"
	"strings"
	"testing"

	"github.com/catchbox/catchbox/internal/store"
	"github.com/catchbox/catchbox/internal/store/storetest"
)

// Inbound emails the replies and forwards of the tests are made from.
const (
	// fromTeammate comes from an address of namespace default: a reply to it
	// stays in the namespace.
	fromTeammate = `From: Alice Teammate <alice@default.localhost>
To: John <john@default.localhost>
Cc: audit@default.localhost
Subject: Quarterly numbers
Date: Sat, 21 Nov 2026 10:00:00 +0000
Message-ID: <q3-numbers@default.localhost>
References: <thread-start@example.org> <q3-draft@default.localhost>
Content-Type: text/plain; charset=utf-8

The numbers are in.
`
	// fromShop comes from outside: a reply to it goes to an external address.
	fromShop = `From: Shop <orders@shop.example>
To: mary@default.localhost
Subject: Your order
Message-ID: <order-1@shop.example>
Content-Type: text/plain; charset=utf-8

Thanks for your order.
`
	// inElsewhere belongs to the other organisation.
	inElsewhere = `From: bob@elsewhere.localhost
To: carol@elsewhere.localhost
Subject: Not yours
Content-Type: text/plain

Private.
`
)

// TestValidation sends every kind of bad request to send, reply and forward
// and checks the status, the error code and the field the error body names
// first. Each is refused before anything is stored.
func TestValidation(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		e := newAPIEnv(t, db)
		teammate := e.deliver("default", fromTeammate, "john@default.localhost")
		shop := e.deliver("default", fromShop, "mary@default.localhost")
		foreign := e.deliver("elsewhere", inElsewhere, "carol@elsewhere.localhost")
		inv := e.deliver("default", invoice, "mary@default.localhost")
		missing := "0190a1b2-c3d4-7e5f-8a6b-7c8d9e0f1a2b"

		ok := func(change func(m map[string]any)) map[string]any {
			m := map[string]any{"to": []string{"john@default.localhost"}, "subject": "Hello", "text": "Hi"}
			if change != nil {
				change(m)
			}
			return m
		}
		att := func(change func(m map[string]any)) map[string]any {
			m := map[string]any{"filename": "a.txt", "content_type": "text/plain", "content_base64": "aGVsbG8="}
			change(m)
			return m
		}
		many := func(n int) []map[string]any {
			var out []map[string]any
			for range n {
				out = append(out, att(func(map[string]any) {}))
			}
			return out
		}
		big := make([]byte, 4<<20)
		rand.Read(big)
		send := "/api/emails/send?namespace=default"
		reply := "/api/emails/" + teammate + "/reply"
		forward := "/api/emails/" + teammate + "/forward"

		cases := []struct {
			name, key, path string
			body            any
			status          int
			code, field     string
		}{
			{"namespace missing", e.key, "/api/emails/send", ok(nil), 400, "invalid_parameter", "namespace"},
			{"namespace empty", e.key, "/api/emails/send?namespace=", ok(nil), 400, "invalid_parameter", "namespace"},
			{"namespace too long", e.key, "/api/emails/send?namespace=" + strings.Repeat("a", 254), ok(nil), 400, "invalid_parameter", "namespace"},
			{"namespace unknown", e.key, "/api/emails/send?namespace=nope", ok(nil), 404, "not_found", ""},
			{"namespace of another organisation", e.key, "/api/emails/send?namespace=elsewhere", ok(nil), 404, "not_found", ""},
			{"subject missing", e.key, send, ok(func(m map[string]any) { delete(m, "subject") }), 400, "invalid_parameter", "subject"},
			{"subject blank", e.key, send, ok(func(m map[string]any) { m["subject"] = "  " }), 400, "invalid_parameter", "subject"},
			{"subject 999 characters", e.key, send, ok(func(m map[string]any) { m["subject"] = strings.Repeat("é", 999) }), 400, "invalid_parameter", "subject"},
			{"subject with a line break", e.key, send, ok(func(m map[string]any) { m["subject"] = "a\r\nBcc: x@example.com" }), 400, "invalid_parameter", "subject"},
			{"subject not a string", e.key, send, `{"to":["john@default.localhost"],"subject":5,"text":"x"}`, 400, "invalid_parameter", "subject"},
			{"neither html nor text", e.key, send, ok(func(m map[string]any) { delete(m, "text") }), 400, "invalid_parameter", "html"},
			{"empty html and text", e.key, send, ok(func(m map[string]any) { m["text"], m["html"] = "", "" }), 400, "invalid_parameter", "html"},
			{"text with NUL", e.key, send, ok(func(m map[string]any) { m["text"] = "a\x00b" }), 400, "invalid_parameter", "text"},
			{"html with NUL", e.key, send, ok(func(m map[string]any) { m["html"] = "<p>\x00</p>" }), 400, "invalid_parameter", "html"},
			{"no recipient", e.key, send, ok(func(m map[string]any) { delete(m, "to") }), 400, "invalid_parameter", "to"},
			{"five recipients", e.key, send, ok(func(m map[string]any) {
				m["to"] = []string{"a@default.localhost", "b@default.localhost"}
				m["cc"] = []string{"c@default.localhost", "d@default.localhost"}
				m["bcc"] = []string{"e@default.localhost"}
			}), 400, "invalid_parameter", "bcc"},
			{"to not an array", e.key, send, `{"to":"john@default.localhost","subject":"s","text":"t"}`, 400, "invalid_parameter", "to"},
			{"bad address in to", e.key, send, ok(func(m map[string]any) { m["to"] = []string{"john"} }), 400, "invalid_parameter", "to[0]"},
			{"bad domain in cc", e.key, send, ok(func(m map[string]any) { m["cc"] = []string{"a@default.localhost", "b@exa_mple..com"} }), 400, "invalid_parameter", "cc[1]"},
			{"empty address in bcc", e.key, send, ok(func(m map[string]any) { m["bcc"] = []string{" "} }), 400, "invalid_parameter", "bcc[0]"},
			{"recipient named twice", e.key, send, ok(func(m map[string]any) { m["bcc"] = []string{"JOHN@default.localhost"} }), 400, "invalid_parameter", "bcc[0]"},
			{"from without email", e.key, send, ok(func(m map[string]any) { m["from"] = map[string]any{"name": "x"} }), 400, "invalid_parameter", "from.email"},
			{"from with a display name in email", e.key, send, ok(func(m map[string]any) { m["from"] = map[string]any{"email": "Me <me@default.localhost>"} }), 400, "invalid_parameter", "from.email"},
			{"from name with a line break", e.key, send, ok(func(m map[string]any) {
				m["from"] = map[string]any{"email": "me@default.localhost", "name": "Me\nTo: x@example.com"}
			}), 400, "invalid_parameter", "from.name"},
			{"from not an object", e.key, send, `{"to":["a@default.localhost"],"subject":"s","text":"t","from":"me@default.localhost"}`, 400, "invalid_parameter", "from"},
			{"reply_to bad address", e.key, send, ok(func(m map[string]any) { m["reply_to"] = map[string]any{"email": "@@"} }), 400, "invalid_parameter", "reply_to.email"},
			{"21 attachments", e.key, send, ok(func(m map[string]any) { m["attachments"] = many(21) }), 400, "invalid_parameter", "attachments"},
			{"base64 that does not decode", e.key, send, ok(func(m map[string]any) {
				m["attachments"] = []map[string]any{att(func(a map[string]any) { a["content_base64"] = "not base64!" })}
			}), 400, "invalid_parameter", "attachments[0].content_base64"},
			{"base64 with bad padding", e.key, send, ok(func(m map[string]any) {
				m["attachments"] = []map[string]any{att(func(a map[string]any) { a["content_base64"] = "aGVsbG8==" })}
			}), 400, "invalid_parameter", "attachments[0].content_base64"},
			{"attachment without content", e.key, send, ok(func(m map[string]any) {
				m["attachments"] = []map[string]any{att(func(a map[string]any) { delete(a, "content_base64") })}
			}), 400, "invalid_parameter", "attachments[0].content_base64"},
			{"attachment without filename", e.key, send, ok(func(m map[string]any) {
				m["attachments"] = many(1)
				m["attachments"] = append(many(1), att(func(a map[string]any) { a["filename"] = "" }))
			}), 400, "invalid_parameter", "attachments[1].filename"},
			{"attachment filename with a line break", e.key, send, ok(func(m map[string]any) {
				m["attachments"] = []map[string]any{att(func(a map[string]any) { a["filename"] = "a\r\n.txt" })}
			}), 400, "invalid_parameter", "attachments[0].filename"},
			{"attachment without content_type", e.key, send, ok(func(m map[string]any) {
				m["attachments"] = []map[string]any{att(func(a map[string]any) { delete(a, "content_type") })}
			}), 400, "invalid_parameter", "attachments[0].content_type"},
			{"attachment content_type not a media type", e.key, send, ok(func(m map[string]any) {
				m["attachments"] = []map[string]any{att(func(a map[string]any) { a["content_type"] = "pdf" })}
			}), 400, "invalid_parameter", "attachments[0].content_type"},
			{"attachment content_type multipart", e.key, send, ok(func(m map[string]any) {
				m["attachments"] = []map[string]any{att(func(a map[string]any) { a["content_type"] = "multipart/mixed" })}
			}), 400, "invalid_parameter", "attachments[0].content_type"},
			{"attachment disposition unknown", e.key, send, ok(func(m map[string]any) {
				m["attachments"] = []map[string]any{att(func(a map[string]any) { a["disposition"] = "hidden" })}
			}), 400, "invalid_parameter", "attachments[0].disposition"},
			{"attachment content_id with a space", e.key, send, ok(func(m map[string]any) {
				m["attachments"] = []map[string]any{att(func(a map[string]any) { a["content_id"] = "my logo" })}
			}), 400, "invalid_parameter", "attachments[0].content_id"},
			{"two attachments with one content_id", e.key, send, ok(func(m map[string]any) {
				m["attachments"] = []map[string]any{att(func(a map[string]any) { a["content_id"] = "logo" }), att(func(a map[string]any) { a["content_id"] = "<LOGO>" })}
			}), 400, "invalid_parameter", "attachments[1].content_id"},
			{"attachment filename not a string", e.key, send, `{"to":["a@default.localhost"],"subject":"s","text":"t","attachments":[{"filename":1}]}`, 400, "invalid_parameter", "attachments.filename"},
			{"body not JSON", e.key, send, `{"to":`, 400, "invalid_json", ""},
			{"body an array", e.key, send, `[]`, 400, "invalid_json", ""},

			{"from in another namespace", e.key, send, ok(func(m map[string]any) { m["from"] = map[string]any{"email": "me@elsewhere.localhost"} }), 403, "sender_not_in_namespace", "from.email"},
			{"from outside the mail domain", e.key, send, ok(func(m map[string]any) { m["from"] = map[string]any{"email": "me@example.com"} }), 403, "sender_not_in_namespace", "from.email"},
			{"from on the bare mail domain", e.key, send, ok(func(m map[string]any) { m["from"] = map[string]any{"email": "me@localhost"} }), 403, "sender_not_in_namespace", "from.email"},
			{"unverified external recipient", e.key, send, ok(func(m map[string]any) { m["cc"] = []string{"someone@example.com"} }), 403, "recipient_not_verified", "cc[0]"},
			{"recipient in another namespace", e.key, send, ok(func(m map[string]any) { m["to"] = []string{"bob@elsewhere.localhost"} }), 403, "recipient_not_verified", "to[0]"},
			{"encoded message over 5 MiB", e.key, send, ok(func(m map[string]any) {
				m["attachments"] = []map[string]any{att(func(a map[string]any) { a["content_base64"] = base64.StdEncoding.EncodeToString(big) })}
			}), 413, "message_too_large", ""},

			{"reply to no such email", e.key, "/api/emails/" + missing + "/reply", map[string]any{"text": "x"}, 404, "not_found", ""},
			{"reply to a malformed id", e.key, "/api/emails/nope/reply", map[string]any{"text": "x"}, 404, "not_found", ""},
			{"reply to another organisation's email", e.key, "/api/emails/" + foreign + "/reply", map[string]any{"text": "x"}, 404, "not_found", ""},
			{"reply by another organisation", e.otherKey, reply, map[string]any{"text": "x"}, 404, "not_found", ""},
			{"reply without html or text", e.key, reply, map[string]any{"subject": "x"}, 400, "invalid_parameter", "html"},
			{"reply with four more recipients", e.key, reply, map[string]any{"text": "x",
				"cc": []string{"a@default.localhost", "b@default.localhost"}, "bcc": []string{"c@default.localhost", "d@default.localhost"}}, 400, "invalid_parameter", "bcc"},
			{"reply copying its own recipient", e.key, reply, map[string]any{"text": "x", "cc": []string{"Alice@default.localhost"}}, 400, "invalid_parameter", "cc[0]"},
			{"reply subject too long", e.key, reply, map[string]any{"text": "x", "subject": strings.Repeat("s", 999)}, 400, "invalid_parameter", "subject"},
			{"reply to an external sender", e.key, "/api/emails/" + shop + "/reply", map[string]any{"text": "x"}, 403, "recipient_not_verified", "to"},
			{"reply from another namespace", e.key, reply, map[string]any{"text": "x", "from": map[string]any{"email": "x@elsewhere.localhost"}}, 403, "sender_not_in_namespace", "from.email"},
			{"reply body not JSON", e.key, reply, `nope`, 400, "invalid_json", ""},

			{"forward without to", e.key, forward, map[string]any{"text": "x"}, 400, "invalid_parameter", "to"},
			{"forward with empty to", e.key, forward, map[string]any{"to": []string{}, "cc": []string{"a@default.localhost"}}, 400, "invalid_parameter", "to"},
			{"forward to a bad address", e.key, forward, map[string]any{"to": []string{"a@"}}, 400, "invalid_parameter", "to[0]"},
			{"forward to five", e.key, forward, map[string]any{"to": []string{"a@default.localhost", "b@default.localhost", "c@default.localhost", "d@default.localhost", "e@default.localhost"}}, 400, "invalid_parameter", "to"},
			{"forward of no such email", e.key, "/api/emails/" + missing + "/forward", map[string]any{"to": []string{"a@default.localhost"}}, 404, "not_found", ""},
			{"forward of another organisation's email", e.key, "/api/emails/" + foreign + "/forward", map[string]any{"to": []string{"a@default.localhost"}}, 404, "not_found", ""},
			{"forward to an unverified address", e.key, forward, map[string]any{"to": []string{"a@default.localhost", "x@example.net"}}, 403, "recipient_not_verified", "to[1]"},
			{"forward with 21 attachments", e.key, forward, map[string]any{"to": []string{"a@default.localhost"}, "attachments": many(21)}, 400, "invalid_parameter", "attachments"},
			{"forward of 2 attachments with 19", e.key, "/api/emails/" + inv + "/forward", map[string]any{"to": []string{"a@default.localhost"}, "attachments": many(19)}, 400, "invalid_parameter", "attachments"},
			{"forward with the original's Content-ID", e.key, "/api/emails/" + inv + "/forward", map[string]any{"to": []string{"a@default.localhost"},
				"attachments": []map[string]any{att(func(a map[string]any) { a["content_id"] = "<LOGO@shop.example>" })}}, 400, "invalid_parameter", "attachments[0].content_id"},
		}
		for _, c := range cases {
			t.Run(c.name, func(t *testing.T) {
				r := e.do(c.key, "POST", c.path, c.body)
				if r.status != c.status {
					t.Fatalf("status %d, want %d: %.300s", r.status, c.status, r.body)
				}
				var b errorBody
				r.json(t, &b)
				if b.Code != c.code || b.StatusCode != c.status {
					t.Errorf("code %q statusCode %d, want %q %d", b.Code, b.StatusCode, c.code, c.status)
				}
				if got := b.fields(); c.field != "" && (len(got) == 0 || got[0] != c.field) {
					t.Errorf("fields %v, want %s first: %s", got, c.field, b.Message)
				}
				if c.status == 400 && c.code == "invalid_parameter" && len(b.Errors) == 0 {
					t.Errorf("a validation failure without errors: %s", r.body)
				}
			})
		}
		// Nothing of it was stored.
		list := e.do(e.key, "GET", "/api/emails/outbound", nil)
		if !strings.Contains(string(list.body), `"total_count":0`) {
			t.Errorf("refused requests stored emails: %s", list.body)
		}
	})
}

// TestValidationReportsEveryField: one request with several mistakes names
// each of them.
func TestValidationReportsEveryField(t *testing.T) {
	e := newAPIEnv(t, storetest.Open(t, store.SQLite))
	r := e.do(e.key, "POST", "/api/emails/send?namespace=default", map[string]any{
		"to": []string{"bad"}, "cc": []string{"also bad"}, "subject": strings.Repeat("x", 999),
		"from": map[string]any{"email": "nope"}, "attachments": []map[string]any{{"filename": "a"}},
	})
	var b errorBody
	r.json(t, &b)
	want := []string{"from.email", "to[0]", "cc[0]", "subject", "html", "attachments[0].content_type", "attachments[0].content_base64"}
	if r.status != 400 || !slices.Equal(b.fields(), want) {
		t.Fatalf("status %d fields %v, want 400 %v", r.status, b.fields(), want)
	}
	for _, f := range want {
		if !strings.Contains(b.Message, f+" ") {
			t.Errorf("message %q does not name %s", b.Message, f)
		}
	}
}
