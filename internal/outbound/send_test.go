package outbound_test

import (
	"bytes"
	"encoding/base64"
	"slices"
	"strings"
	"testing"
	"time"

	gomail "github.com/emersion/go-message/mail"

	mimemsg "github.com/catchbox/catchbox/internal/message"
	"github.com/catchbox/catchbox/internal/outbound/outstore"
	"github.com/catchbox/catchbox/internal/store"
	"github.com/catchbox/catchbox/internal/store/storetest"
)

var (
	pdfBytes  = []byte("%PDF-1.4 an invoice\n\x00\x01\x02\xff binary tail")
	logoBytes = append([]byte("\x89PNG\r\n\x1a\n"), bytes.Repeat([]byte{0, 1, 2, 3, 250}, 100)...)
)

func b64(b []byte) string { return base64.StdEncoding.EncodeToString(b) }

// TestSend sends a message with everything the seed allows and checks the
// 202, the summary, the detail form and the built message, header by header
// and part by part, as go-message and internal/message read it back.
func TestSend(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		e := newAPIEnv(t, db)
		e.verify(e.org.ID, "Partner@Example.com")
		subject := "Rapport trimestriel — données de Zoë" + strings.Repeat(" très long", 12)
		longName := "Relevé de compte détaillé pour l'année fiscale " + strings.Repeat("é", 60) + ".pdf"
		html := `<p>Hello <b>John</b>, see <img src="cid:logo@catchbox"></p>` + strings.Repeat("<p>filler paragraph</p>", 20)
		text := "Hello John,\nsee the logo.\n" + strings.Repeat("a very long line without breaks ", 10) + "\nBye"
		s := e.send("default", map[string]any{
			"from":     map[string]any{"email": "Reports@Default.localhost", "name": "Zoë Reports"},
			"reply_to": map[string]any{"email": "support@default.localhost", "name": "Support, Team"},
			"to":       []string{"Jöhn Doe <john@default.localhost>", "partner@example.com"},
			"cc":       []string{"audit@default.localhost"},
			"bcc":      []string{"hidden@default.localhost"},
			"subject":  subject,
			"html":     html,
			"text":     text,
			"attachments": []map[string]any{
				{"filename": longName, "content_type": "application/pdf", "content_base64": b64(pdfBytes)},
				{"filename": "logo.png", "content_type": "image/png", "content_base64": b64(logoBytes), "content_id": "<logo@catchbox>"},
				{"filename": "notes.txt", "content_type": "text/plain; charset=iso-8859-1", "content_base64": b64([]byte("caf\xe9")), "disposition": "inline"},
			},
			"unknown_field": true,
		})

		// The summary form.
		if s.Type != "new" || s.Status != "queued" || s.RecipientCount != 4 || s.AttachmentCount != 3 ||
			s.From.Email != "Reports@Default.localhost" || s.From.Name != "Zoë Reports" || s.Subject != subject ||
			s.OrganisationID != e.org.ID || s.MessageID != "<"+s.ID+"@localhost>" {
			t.Errorf("summary %+v", s)
		}

		// The detail form.
		d := e.detail(s.ID)
		if d.Status != outstore.StatusQueued || d.HTML != html || d.Text != text || d.ReplyTo == nil ||
			d.ReplyTo.Name != "Support, Team" || len(d.Events) != 1 || d.Events[0].Type != outstore.EventQueued {
			t.Errorf("detail %+v", d)
		}
		var rcpts []string
		for _, r := range d.Recipients {
			rcpts = append(rcpts, string(r.Type)+" "+r.Email+" "+r.Name+" "+string(r.Status))
			if r.Internal != strings.HasSuffix(r.Email, "@default.localhost") {
				t.Errorf("recipient %s internal %v", r.Email, r.Internal)
			}
		}
		want := []string{"to john@default.localhost Jöhn Doe queued", "to partner@example.com  queued",
			"cc audit@default.localhost  queued", "bcc hidden@default.localhost  queued"}
		if !slices.Equal(rcpts, want) {
			t.Errorf("recipients\n%q\nwant\n%q", rcpts, want)
		}
		var atts []string
		for _, a := range d.Attachments {
			atts = append(atts, a.Filename+" "+a.ContentType+" "+a.Disposition+" "+a.ContentID)
		}
		want = []string{longName + " application/pdf attachment ", "logo.png image/png inline logo@catchbox",
			"notes.txt text/plain; charset=iso-8859-1 inline "}
		if !slices.Equal(atts, want) {
			t.Errorf("attachments\n%q\nwant\n%q", atts, want)
		}

		// The message, as go-message reads it.
		raw := e.source(s.ID)
		h, root := readMIME(t, raw)
		if date, err := h.Date(); err != nil || !date.Equal(start.Truncate(time.Second)) {
			t.Errorf("Date %v (%v), want %v", date, err, start)
		}
		checkAddresses(t, h, "From", "Zoë Reports <Reports@Default.localhost>")
		checkAddresses(t, h, "Reply-To", "Support, Team <support@default.localhost>")
		checkAddresses(t, h, "To", "Jöhn Doe <john@default.localhost>", "partner@example.com")
		checkAddresses(t, h, "Cc", "audit@default.localhost")
		if h.Has("Bcc") || bytes.Contains(raw, []byte("hidden@")) {
			t.Errorf("the blind copy shows in the message")
		}
		if got, err := h.Subject(); err != nil || got != subject {
			t.Errorf("Subject %q (%v)", got, err)
		}
		if !strings.Contains(h.Get("Subject"), "=?utf-8?") {
			t.Errorf("non-ASCII subject not in encoded words: %q", h.Get("Subject"))
		}
		if id, _ := h.MessageID(); "<"+id+">" != s.MessageID {
			t.Errorf("Message-ID %q, want %s", id, s.MessageID)
		}
		if h.Get("Mime-Version") != "1.0" || h.Has("In-Reply-To") || h.Has("References") {
			t.Errorf("MIME-Version %q, In-Reply-To %q, References %q", h.Get("Mime-Version"), h.Get("In-Reply-To"), h.Get("References"))
		}
		wantShape := "multipart/mixed[multipart/related[multipart/alternative[text/plain,text/html],image/png],application/pdf,text/plain]"
		if root.shape() != wantShape {
			t.Fatalf("structure %s\nwant      %s", root.shape(), wantShape)
		}
		if root.parts[0].params["type"] != "multipart/alternative" {
			t.Errorf("multipart/related type %q", root.parts[0].params["type"])
		}
		leaves := root.leaves()
		checkPart(t, leaves[0], "text/plain", "utf-8", "", "", "", []byte(strings.ReplaceAll(text, "\n", "\r\n")))
		checkPart(t, leaves[1], "text/html", "utf-8", "", "", "", []byte(html))
		checkPart(t, leaves[2], "image/png", "", "inline", "logo.png", "<logo@catchbox>", logoBytes)
		checkPart(t, leaves[3], "application/pdf", "", "attachment", longName, "", pdfBytes)
		checkPart(t, leaves[4], "text/plain", "iso-8859-1", "inline", "notes.txt", "", []byte("café")) // go-message converts text to UTF-8

		// The same message as Catchbox's own reader reads it.
		p := mimemsg.Parse(raw)
		if p.From != (mimemsg.Address{Address: "Reports@Default.localhost", Name: "Zoë Reports"}) || p.Subject != subject ||
			len(p.To) != 2 || p.To[0].Name != "Jöhn Doe" || len(p.Cc) != 1 || p.HTML != html ||
			p.Text != strings.ReplaceAll(text, "\n", "\r\n") {
			t.Errorf("internal/message reads %+v", p)
		}
		// In the order of the tree: the inline logo sits in the first part.
		if len(p.Attachments) != 3 || p.Attachments[1].Filename != longName || !bytes.Equal(p.Attachments[1].Data, pdfBytes) ||
			p.Attachments[0].ContentID != "logo@catchbox" || !p.Attachments[0].Inline || !bytes.Equal(p.Attachments[0].Data, logoBytes) ||
			p.Attachments[2].Filename != "notes.txt" || !bytes.Equal(p.Attachments[2].Data, []byte("caf\xe9")) {
			t.Errorf("internal/message reads attachments %+v", p.Attachments)
		}

		// The attachment endpoint returns the bytes as sent.
		var content struct {
			ID, Filename, ContentType string
			Size                      int64
			ContentBase64             string `json:"content_base64"`
		}
		r := e.do(e.key, "GET", "/api/emails/outbound/"+s.ID+"/attachments/"+d.Attachments[0].ID, nil)
		r.json(t, &content)
		if r.status != 200 || content.ContentBase64 != b64(pdfBytes) || content.Size != int64(len(pdfBytes)) || content.Filename != longName {
			t.Errorf("attachment content %d %+v", r.status, content)
		}
	})
}

// checkAddresses checks an address header as go-message decodes it.
func checkAddresses(t *testing.T, h gomail.Header, field string, want ...string) {
	t.Helper()
	list, err := h.AddressList(field)
	if err != nil {
		t.Errorf("%s: %v", field, err)
		return
	}
	var got []string
	for _, a := range list {
		if a.Name == "" {
			got = append(got, a.Address)
		} else {
			got = append(got, a.Name+" <"+a.Address+">")
		}
	}
	if !slices.Equal(got, want) {
		t.Errorf("%s %q, want %q", field, got, want)
	}
}

// checkPart checks a leaf: its media type and charset, its disposition and
// filename, its Content-ID and its decoded bytes.
func checkPart(t *testing.T, p *part, mediaType, charset, disposition, filename, cid string, body []byte) {
	t.Helper()
	if p.mediaType != mediaType || p.params["charset"] != charset {
		t.Errorf("part %s charset %q, want %s %q", p.mediaType, p.params["charset"], mediaType, charset)
	}
	if p.disposition != disposition || p.dispParams["filename"] != filename {
		t.Errorf("part %s disposition %q filename %q, want %q %q", p.mediaType, p.disposition, p.dispParams["filename"], disposition, filename)
	}
	if filename != "" && p.params["name"] != filename {
		t.Errorf("part %s name %q, want %q", p.mediaType, p.params["name"], filename)
	}
	if got := p.header.Get("Content-Id"); got != cid {
		t.Errorf("part %s Content-ID %q, want %q", p.mediaType, got, cid)
	}
	if !bytes.Equal(p.body, body) {
		t.Errorf("part %s body %q, want %q", p.mediaType, truncateBytes(p.body), truncateBytes(body))
	}
}

func truncateBytes(b []byte) []byte {
	if len(b) > 200 {
		return b[:200]
	}
	return b
}
