package outbound_test

import (
	"bytes"
	"slices"
	"strings"
	"testing"

	mimemsg "github.com/catchbox/catchbox/internal/message"
	"github.com/catchbox/catchbox/internal/store"
	"github.com/catchbox/catchbox/internal/store/storetest"
)

// invoice is an inbound email with both bodies, a PDF and an inline logo
// the HTML shows: what a forward must carry.
const invoice = `From: Shop <orders@default.localhost>
Reply-To: "Billing, Shop" <billing@default.localhost>, accounts@default.localhost
To: Mary <mary@default.localhost>
Cc: audit@default.localhost
Subject: Your invoice 1042
Date: Fri, 20 Nov 2026 09:30:00 +0100
Message-ID: <invoice-1042@shop.example>
In-Reply-To: <order-1042@shop.example>
MIME-Version: 1.0
Content-Type: multipart/mixed; boundary="b1"

--b1
Content-Type: multipart/related; boundary="b3"

--b3
Content-Type: multipart/alternative; boundary="b2"

--b2
Content-Type: text/plain; charset=utf-8

Your invoice is attached.
--b2
Content-Type: text/html; charset=utf-8

<html><head><title>Invoice</title></head><body><p>Your invoice is <b>attached</b>.<img src="cid:logo@shop.example"></p></body></html>
--b2--
--b3
Content-Type: image/png
Content-ID: <logo@shop.example>
Content-Disposition: inline; filename="logo.png"
Content-Transfer-Encoding: base64

iVBORw0KGgpsb2dv
--b3--
--b1
Content-Type: application/pdf
Content-Disposition: attachment; filename="invoice-1042.pdf"
Content-Transfer-Encoding: base64

JVBERi0xLjQgZmFrZSBpbnZvaWNlCg==
--b1--
`

// TestReply replies to an email without Reply-To and to one with it, and
// reads each reply back: its recipient, subject, threading headers and body.
func TestReply(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		e := newAPIEnv(t, db)
		teammate := e.deliver("default", fromTeammate, "john@default.localhost")
		s := e.accepted(e.do(e.key, "POST", "/api/emails/"+teammate+"/reply", map[string]any{
			"text": "Thanks, looks good.", "html": "<p>Thanks, looks <i>good</i>.</p>", "cc": []string{"Boss <boss@default.localhost>"},
		}))
		if s.Type != "reply" || s.Subject != "Re: Quarterly numbers" || s.RecipientCount != 2 || s.Status != "queued" ||
			s.From.Email != "outbound-delivery@default.localhost" || s.From.Name != "" {
			t.Errorf("summary %+v", s)
		}
		d := e.detail(s.ID)
		if d.SourceEmailID != teammate || len(d.Recipients) != 2 || d.Recipients[0].Email != "alice@default.localhost" ||
			d.Recipients[0].Name != "Alice Teammate" || d.Recipients[0].Type != "to" || !d.Recipients[0].Internal ||
			d.Recipients[1].Type != "cc" || d.Recipients[1].Name != "Boss" {
			t.Errorf("detail %+v recipients %+v", d, d.Recipients)
		}

		raw := e.source(s.ID)
		h, root := readMIME(t, raw)
		checkAddresses(t, h, "From", "outbound-delivery@default.localhost")
		checkAddresses(t, h, "To", "Alice Teammate <alice@default.localhost>")
		checkAddresses(t, h, "Cc", "Boss <boss@default.localhost>")
		if h.Has("Reply-To") {
			t.Errorf("a reply without reply_to has Reply-To %q", h.Get("Reply-To"))
		}
		if got, _ := h.Subject(); got != "Re: Quarterly numbers" {
			t.Errorf("Subject %q", got)
		}
		irt, _ := h.MsgIDList("In-Reply-To")
		refs, _ := h.MsgIDList("References")
		if !slices.Equal(irt, []string{"q3-numbers@default.localhost"}) ||
			!slices.Equal(refs, []string{"thread-start@example.org", "q3-draft@default.localhost", "q3-numbers@default.localhost"}) {
			t.Errorf("In-Reply-To %q References %q", irt, refs)
		}
		if root.shape() != "multipart/alternative[text/plain,text/html]" {
			t.Errorf("structure %s", root.shape())
		}
		checkPart(t, root.parts[0], "text/plain", "utf-8", "", "", "", []byte("Thanks, looks good."))
		checkPart(t, root.parts[1], "text/html", "utf-8", "", "", "", []byte("<p>Thanks, looks <i>good</i>.</p>"))
		p := mimemsg.Parse(raw)
		if p.Headers["in-reply-to"] != "<q3-numbers@default.localhost>" || p.Subject != "Re: Quarterly numbers" ||
			len(p.To) != 1 || p.To[0].Address != "alice@default.localhost" {
			t.Errorf("internal/message reads %+v", p)
		}

		// Reply-To wins over From, every address of it; a subject that
		// starts with Re: already is kept; References start from
		// In-Reply-To when the email has no References.
		inv := e.deliver("default", strings.Replace(invoice, "Subject: Your invoice 1042", "Subject: RE: Your invoice 1042", 1), "mary@default.localhost")
		s = e.accepted(e.do(e.key, "POST", "/api/emails/"+inv+"/reply", map[string]any{
			"text": "Paid.", "from": map[string]any{"email": "mary@default.localhost", "name": "Mary"},
		}))
		h, root = readMIME(t, e.source(s.ID))
		checkAddresses(t, h, "To", "Billing, Shop <billing@default.localhost>", "accounts@default.localhost")
		checkAddresses(t, h, "From", "Mary <mary@default.localhost>")
		irt, _ = h.MsgIDList("In-Reply-To")
		refs, _ = h.MsgIDList("References")
		if got, _ := h.Subject(); got != "RE: Your invoice 1042" || s.RecipientCount != 2 ||
			!slices.Equal(irt, []string{"invoice-1042@shop.example"}) ||
			!slices.Equal(refs, []string{"order-1042@shop.example", "invoice-1042@shop.example"}) {
			t.Errorf("Subject %q, %d recipients, In-Reply-To %q, References %q", got, s.RecipientCount, irt, refs)
		}
		if root.shape() != "text/plain" {
			t.Errorf("a text reply is %s", root.shape())
		}

		// A subject given is used as it is.
		s = e.accepted(e.do(e.key, "POST", "/api/emails/"+teammate+"/reply", map[string]any{"html": "<p>x</p>", "subject": "Other"}))
		if h, root = readMIME(t, e.source(s.ID)); root.shape() != "text/html" || s.Subject != "Other" {
			t.Errorf("html reply %s, subject %q", root.shape(), s.Subject)
		}
	})
}

// TestForward forwards an email with both bodies and two attachments, after
// a note, and reads the forward back: the note, the forwarded header block
// and the original body in both alternatives, and the original attachments,
// the inline logo still inline beside the HTML that shows it.
func TestForward(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		e := newAPIEnv(t, db)
		inv := e.deliver("default", invoice, "mary@default.localhost")
		s := e.accepted(e.do(e.key, "POST", "/api/emails/"+inv+"/forward", map[string]any{
			"to":          []string{"john@default.localhost"},
			"text":        "FYI, see below.",
			"attachments": []map[string]any{{"filename": "note.txt", "content_type": "text/plain", "content_base64": b64([]byte("paid"))}},
		}))
		if s.Type != "forward" || s.Subject != "Fwd: Your invoice 1042" || s.AttachmentCount != 3 || s.RecipientCount != 1 {
			t.Errorf("summary %+v", s)
		}
		raw := e.source(s.ID)
		h, root := readMIME(t, raw)
		checkAddresses(t, h, "To", "john@default.localhost")
		if h.Has("In-Reply-To") || h.Has("References") {
			t.Errorf("a forward is threaded: %q %q", h.Get("In-Reply-To"), h.Get("References"))
		}
		want := "multipart/mixed[multipart/related[multipart/alternative[text/plain,text/html],image/png],application/pdf,text/plain]"
		if root.shape() != want {
			t.Fatalf("structure %s\nwant      %s", root.shape(), want)
		}
		leaves := root.leaves()
		text, html := string(leaves[0].body), string(leaves[1].body)
		for _, w := range []string{"FYI, see below.\r\n\r\n---------- Forwarded message ---------\r\n",
			"From: Shop <orders@default.localhost>\r\n", "Date: Fri, 20 Nov 2026 09:30:00 +0100\r\n",
			"Subject: Your invoice 1042\r\n", "To: Mary <mary@default.localhost>\r\n", "Cc: audit@default.localhost\r\n",
			"\r\n\r\nYour invoice is attached."} {
			if !strings.Contains(text, w) {
				t.Errorf("text alternative lacks %q:\n%s", w, text)
			}
		}
		if strings.Index(text, "FYI") > strings.Index(text, "Forwarded message") {
			t.Errorf("the note is not before the forwarded message")
		}
		for _, w := range []string{`<div style="white-space: pre-wrap">FYI, see below.</div>`, "---------- Forwarded message ---------<br>",
			"From: Shop &lt;orders@default.localhost&gt;<br>", "Subject: Your invoice 1042<br>",
			`<p>Your invoice is <b>attached</b>.<img src="cid:logo@shop.example"></p>`} {
			if !strings.Contains(html, w) {
				t.Errorf("html alternative lacks %q:\n%s", w, html)
			}
		}
		if strings.Contains(html, "<title>") || strings.Count(html, "<body>") != 1 {
			t.Errorf("the forwarded document is not unwrapped into the body:\n%s", html)
		}
		checkPart(t, leaves[2], "image/png", "", "inline", "logo.png", "<logo@shop.example>", []byte("\x89PNG\r\n\x1a\nlogo"))
		checkPart(t, leaves[3], "application/pdf", "", "attachment", "invoice-1042.pdf", "", []byte("%PDF-1.4 fake invoice\n"))
		checkPart(t, leaves[4], "text/plain", "", "attachment", "note.txt", "", []byte("paid"))

		p := mimemsg.Parse(raw)
		if p.Subject != "Fwd: Your invoice 1042" || !strings.Contains(p.Text, "Your invoice is attached.") ||
			!strings.Contains(p.HTML, "cid:logo@shop.example") || len(p.Attachments) != 3 ||
			!bytes.Equal(p.Attachments[1].Data, []byte("%PDF-1.4 fake invoice\n")) || p.Attachments[0].ContentID != "logo@shop.example" {
			t.Errorf("internal/message reads %+v", p)
		}
		d := e.detail(s.ID)
		if d.Text != strings.ReplaceAll(text, "\r\n", "\n") || d.HTML != strings.ReplaceAll(html, "\r\n", "\n") {
			t.Errorf("the detail form's bodies are not the forward's:\n%q\n%q", d.Text, text)
		}

		// An HTML-only note before a text-only email: each alternative is
		// made from the other body.
		plain := e.deliver("default", fromTeammate, "john@default.localhost")
		s = e.accepted(e.do(e.key, "POST", "/api/emails/"+plain+"/forward", map[string]any{
			"to": []string{"john@default.localhost"}, "html": "<p>Please <b>check</b> &amp; reply</p>", "subject": "Numbers",
		}))
		h, root = readMIME(t, e.source(s.ID))
		if got, _ := h.Subject(); got != "Numbers" || root.shape() != "multipart/alternative[text/plain,text/html]" {
			t.Fatalf("subject %q structure %s", got, root.shape())
		}
		text, html = string(root.parts[0].body), string(root.parts[1].body)
		if !strings.HasPrefix(text, "Please check & reply\r\n\r\n---------- Forwarded message") || !strings.HasSuffix(text, "The numbers are in.\r\n") {
			t.Errorf("text alternative:\n%s", text)
		}
		if !strings.Contains(html, "<div>"+"<p>Please <b>check</b> &amp; reply</p></div>") ||
			!strings.Contains(html, `<div style="white-space: pre-wrap">The numbers are in.`) {
			t.Errorf("html alternative:\n%s", html)
		}
	})
}
