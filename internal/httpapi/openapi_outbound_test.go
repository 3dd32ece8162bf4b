package httpapi_test

import (
	"context"
	"encoding/base64"
	"strings"

	"github.com/catchbox/catchbox/internal/tenant"
)

// checkOutbound covers send, reply, forward, the outbound list, one email, an
// attachment's content (and its 410) and cancel, with every documented error.
func checkOutbound(c *conformance, plainID, invoiceID string) {
	t, e, key, other := c.t, c.e, c.e.key, c.e.otherKey
	ctx := context.Background()
	const (
		send     = "/api/emails/send"
		reply    = "/api/emails/{emailId}/reply"
		forward  = "/api/emails/{emailId}/forward"
		list     = "/api/emails/outbound"
		one      = "/api/emails/outbound/{outboundEmailId}"
		content  = "/api/emails/outbound/{outboundEmailId}/attachments/{attachmentId}"
		cancel   = "/api/emails/outbound/{outboundEmailId}/cancel"
		partner  = "partner@example.com"
		internal = "qa@default.localhost"
	)
	now := int64(1795579364000)
	// Verified destinations: a partner, and the sender of plainMessage, so that
	// a reply to it may go out.
	for _, addr := range []string{partner, "alice@example.com"} {
		if _, err := e.db.Exec(ctx, `INSERT INTO destinations (id, org_id, address, verified_at, created_at, updated_at)
			VALUES (?, ?, ?, ?, ?, ?)`, tenant.NewID(), e.ns.OrgID, addr, now, now, now); err != nil {
			t.Fatal(err)
		}
	}
	// An inbound email without a From: nobody to reply to.
	anonymous := e.deliver("To: john@default.localhost\nSubject: who?\n\nnobody\n", "john@default.localhost")
	big := base64.StdEncoding.EncodeToString(make([]byte, 4<<20))
	full := `{"from": {"email": "reports@default.localhost", "name": "Reports"}, "reply_to": {"email": "help@default.localhost"},
		"to": ["John <john@default.localhost>", "` + partner + `"], "cc": ["audit@default.localhost"], "bcc": ["archive@default.localhost"],
		"subject": "Quarterly report", "html": "<p>See <img src=\"cid:chart\"></p>", "text": "See the chart.",
		"attachments": [{"filename": "report.pdf", "content_type": "application/pdf", "content_base64": "JVBERi0xLjQK"},
			{"filename": "chart.png", "content_type": "image/png", "content_base64": "iVBORw0KGgo=", "content_id": "chart"}]}`

	sent := decode[struct {
		ID string `json:"id"`
	}](t, c.check(call{method: "POST", path: send + "?namespace=default", route: send, key: key, status: 202, body: full}))
	if loc := c.header.Get("Location"); loc != "/api/emails/outbound/"+sent.ID {
		t.Errorf("Location %q", loc)
	}
	replied := decode[struct {
		ID string `json:"id"`
	}](t, c.check(call{method: "POST", path: "/api/emails/" + plainID + "/reply", route: reply, key: key, status: 202,
		body: `{"text": "Thanks", "cc": ["` + internal + `"]}`}))
	c.check(call{method: "POST", path: "/api/emails/" + invoiceID + "/forward", route: forward, key: key, status: 202,
		body: `{"to": ["` + partner + `"], "html": "<p>FYI</p>", "subject": "Invoice"}`})

	for _, k := range []call{
		{method: "POST", path: send + "?namespace=DEFAULT", route: send, key: key, status: 202, body: `{"to": ["` + internal + `"], "subject": "s", "text": "t", "unknown": 1}`},
		{method: "POST", path: send, route: send, key: key, status: 400, code: "invalid_parameter", body: `{"to": ["` + internal + `"], "subject": "s", "text": "t"}`},
		{method: "POST", path: send + "?namespace=default", route: send, key: key, status: 400, code: "invalid_parameter", body: `{"to": ["nobody"], "subject": "s"}`},
		{method: "POST", path: send + "?namespace=default", route: send, key: key, status: 400, code: "invalid_parameter", body: `{"to": "` + internal + `", "subject": "s", "text": "t"}`},
		{method: "POST", path: send + "?namespace=default", route: send, key: key, status: 400, code: "invalid_json", body: `{"to": [`},
		{method: "POST", path: send + "?namespace=default", route: send, status: 401, code: "missing_api_key", body: `{}`},
		{method: "POST", path: send + "?namespace=default", route: send, key: key, status: 403, code: "sender_not_in_namespace",
			body: `{"from": {"email": "me@example.com"}, "to": ["` + internal + `"], "subject": "s", "text": "t"}`},
		{method: "POST", path: send + "?namespace=default", route: send, key: key, status: 403, code: "recipient_not_verified",
			body: `{"to": ["stranger@example.com"], "subject": "s", "text": "t"}`},
		{method: "POST", path: send + "?namespace=default", route: send, key: other, status: 404, code: "not_found", body: `{"to": ["` + internal + `"], "subject": "s", "text": "t"}`},
		{method: "POST", path: send + "?namespace=default", route: send, key: key, status: 413, code: "message_too_large",
			body: `{"to": ["` + internal + `"], "subject": "s", "text": "t", "attachments": [{"filename": "a", "content_type": "application/octet-stream", "content_base64": "` + big + `"}]}`},
		{method: "POST", path: send + "?namespace=default", route: send, key: key, status: 413, code: "body_too_large", contentLength: 9 << 20},

		{method: "POST", path: "/api/emails/" + plainID + "/reply", route: reply, key: key, status: 400, code: "invalid_parameter", body: `{"subject": "no body"}`},
		{method: "POST", path: "/api/emails/" + plainID + "/reply", route: reply, key: key, status: 400, code: "invalid_json", body: `[]`},
		{method: "POST", path: "/api/emails/" + plainID + "/reply", route: reply, key: key, status: 403, code: "sender_not_in_namespace", body: `{"text": "t", "from": {"email": "x@team.localhost"}}`},
		{method: "POST", path: "/api/emails/" + invoiceID + "/reply", route: reply, key: key, status: 403, code: "recipient_not_verified", body: `{"text": "t"}`},
		{method: "POST", path: "/api/emails/" + plainID + "/reply", route: reply, key: other, status: 404, code: "not_found", body: `{"text": "t"}`},
		{method: "POST", path: "/api/emails/" + anonymous + "/reply", route: reply, key: key, status: 409, code: "no_reply_address", body: `{"text": "t"}`},
		{method: "POST", path: "/api/emails/" + plainID + "/reply", route: reply, key: key, status: 413, code: "body_too_large", contentLength: 9 << 20},
		{method: "POST", path: "/api/emails/" + plainID + "/reply", route: reply, status: 401, code: "missing_api_key", body: `{}`},

		{method: "POST", path: "/api/emails/" + plainID + "/forward", route: forward, key: key, status: 400, code: "invalid_parameter", body: `{"text": "no one"}`},
		{method: "POST", path: "/api/emails/" + plainID + "/forward", route: forward, key: key, status: 403, code: "recipient_not_verified", body: `{"to": ["x@example.org"]}`},
		{method: "POST", path: "/api/emails/" + plainID + "/forward", route: forward, key: other, status: 404, code: "not_found", body: `{"to": ["` + internal + `"]}`},
		{method: "POST", path: "/api/emails/" + plainID + "/forward", route: forward, key: key, status: 413, code: "message_too_large",
			body: `{"to": ["` + internal + `"], "attachments": [{"filename": "a", "content_type": "application/octet-stream", "content_base64": "` + big + `"}]}`},
		{method: "POST", path: "/api/emails/" + plainID + "/forward", route: forward, status: 401, code: "missing_api_key", body: `{}`},

		{method: "GET", path: list, route: list, key: key, status: 200},
		{method: "GET", path: list + "?limit=2&offset=1&status=queued&type=new&organisation_id=" + e.ns.OrgID, route: list, key: key, status: 200},
		{method: "GET", path: list + "?status=&type=", route: list, key: key, status: 200},
		{method: "GET", path: list + "?limit=2.0&offset=1.0&status=&type=&organisation_id=", route: list, key: key, status: 200},
		{method: "GET", path: list + "?limit=2.5", route: list, key: key, status: 400, code: "invalid_parameter"},
		{method: "GET", path: list, route: list, key: other, status: 200},
		{method: "GET", path: list + "?limit=101&offset=-1&status=done", route: list, key: key, status: 400, code: "invalid_parameter"},
		{method: "GET", path: list + "?organisation_id=" + tenant.NewID(), route: list, key: key, status: 403, code: "organisation_mismatch"},
		{method: "GET", path: list, route: list, status: 401, code: "missing_api_key"},

		{method: "GET", path: "/api/emails/outbound/" + sent.ID, route: one, key: key, status: 200},
		{method: "GET", path: "/api/emails/outbound/" + replied.ID, route: one, key: key, status: 200},
		{method: "GET", path: "/api/emails/outbound/" + sent.ID, route: one, key: other, status: 404, code: "not_found"},
		{method: "GET", path: "/api/emails/outbound/not-a-uuid", route: one, key: key, status: 404, code: "not_found"},
		{method: "GET", path: "/api/emails/outbound/" + sent.ID, route: one, status: 401, code: "missing_api_key"},
	} {
		c.check(k)
	}

	detail := decode[struct {
		Attachments []struct {
			ID string `json:"id"`
		} `json:"attachments"`
	}](t, c.check(call{method: "GET", path: "/api/emails/outbound/" + sent.ID, route: one, key: key, status: 200}))
	if len(detail.Attachments) != 2 {
		t.Fatalf("sent email has %d attachments, want 2", len(detail.Attachments))
	}
	attPath := "/api/emails/outbound/" + sent.ID + "/attachments/" + detail.Attachments[0].ID
	got := decode[struct {
		ContentBase64 string `json:"content_base64"`
	}](t, c.check(call{method: "GET", path: attPath, route: content, key: key, status: 200}))
	if got.ContentBase64 != "JVBERi0xLjQK" {
		t.Errorf("attachment content %q", got.ContentBase64)
	}
	for _, k := range []call{
		{method: "GET", path: attPath, route: content, key: other, status: 404, code: "not_found"},
		{method: "GET", path: "/api/emails/outbound/" + sent.ID + "/attachments/" + tenant.NewID(), route: content, key: key, status: 404, code: "not_found"},
		{method: "GET", path: attPath, route: content, status: 401, code: "missing_api_key"},

		{method: "POST", path: "/api/emails/outbound/" + sent.ID + "/cancel", route: cancel, key: other, status: 404, code: "not_found"},
		{method: "POST", path: "/api/emails/outbound/" + sent.ID + "/cancel", route: cancel, key: key, status: 200},
		{method: "POST", path: "/api/emails/outbound/" + sent.ID + "/cancel", route: cancel, key: key, status: 409, code: "not_cancellable"},
		{method: "POST", path: "/api/emails/outbound/" + sent.ID + "/cancel", route: cancel, status: 401, code: "missing_api_key"},
	} {
		c.check(k)
	}

	// The bytes expire; the metadata stays, now with content_expired_at.
	if _, err := e.db.Exec(ctx, "UPDATE outbound_attachments SET content_expires_at = 0"); err != nil {
		t.Fatal(err)
	}
	c.check(call{method: "GET", path: attPath, route: content, key: key, status: 410, code: "content_expired"})
	body := c.check(call{method: "GET", path: "/api/emails/outbound/" + sent.ID, route: one, key: key, status: 200})
	if !strings.Contains(string(body), `"content_expired_at":"1970-01-01T00:00:00.000Z"`) {
		t.Errorf("detail after expiry: %s", truncate(body))
	}
}
