package outbound

import (
	"bytes"
	"io"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	gomessage "github.com/emersion/go-message"
	gomail "github.com/emersion/go-message/mail"

	"github.com/catchbox/catchbox/internal/outbound/compose"
)

// FuzzBuild builds messages (compose.Build) from arbitrary subjects, names,
// filenames, bodies and attachment bytes that the request checks let through, and reads
// each back with go-message: every value must come back as it went in, and
// no line may pass RFC 5322's 998 characters.
func FuzzBuild(f *testing.F) {
	f.Add("Hello", "Zoë", "report.pdf", "text\nbody", "<p>html</p>", []byte("%PDF"))
	f.Add(strings.Repeat("x", 998), strings.Repeat("n", 256), strings.Repeat("f", 255), "", "<b>x</b>", []byte{})
	f.Add("Rapport — données "+strings.Repeat("é", 300), "\"Quoted\", Name", "naïve résumé "+strings.Repeat("ü", 200)+".txt", "line  \nwith trailing spaces  ", "", []byte{0, 1, 255})
	f.Add("=?utf-8?q?not_a_word?=", "a\\b\"c", `a"b\c.txt`, "=41\r\n.\r\n", "", []byte("\r\n.\r\n"))
	f.Add("lone CR", "x", "f.txt", "a\rb", "0\r", []byte{})
	f.Fuzz(func(t *testing.T, subject, name, filename, text, html string, data []byte) {
		subject, name, filename = strings.TrimSpace(subject), strings.TrimSpace(name), strings.TrimSpace(filename)
		var c checker
		c.text("subject", subject, MaxSubject, true)
		c.text("name", name, maxName, true)
		c.text("filename", filename, maxFilename, true)
		c.text("text", text, 0, false)
		c.text("html", html, 0, false)
		valid := true
		for _, s := range []string{subject, name, filename, text, html} {
			valid = valid && utf8.ValidString(s) // JSON decoding makes sure of it
		}
		if len(c.fields) > 0 || filename == "" || text == "" && html == "" || !valid {
			t.Skip()
		}
		raw, err := compose.Build(compose.Message{MessageID: "id@localhost", Date: time.Unix(1795579364, 0),
			From: compose.Address{Email: "a@ns.localhost", Name: name}, To: []compose.Address{{Email: "b@ns.localhost", Name: name}},
			Subject: subject, Text: text, HTML: html,
			Attachments: []compose.Attachment{{Filename: filename, ContentType: "application/octet-stream", Data: data}}})
		if err != nil {
			t.Fatal(err)
		}
		for i, line := range strings.Split(string(raw), "\r\n") {
			if len(line) > 998 {
				t.Fatalf("line %d has %d characters", i+1, len(line))
			}
		}
		e, err := gomessage.Read(bytes.NewReader(raw))
		if err != nil {
			t.Fatalf("go-message cannot read it: %v", err)
		}
		h := gomail.Header{Header: e.Header}
		if got, err := h.Subject(); err != nil || got != subject {
			t.Fatalf("subject %q (%v), want %q", got, err, subject)
		}
		from, err := h.AddressList("From")
		if err != nil || len(from) != 1 || from[0].Name != name {
			t.Fatalf("From %v (%v), name want %q", from, err, name)
		}
		mr := e.MultipartReader()
		if mr == nil {
			t.Fatalf("not multipart: %s", e.Header.Get("Content-Type"))
		}
		var bodies []string
		var att *gomessage.Entity
		var attData []byte
		for {
			p, err := mr.NextPart()
			if err == io.EOF {
				break
			}
			if err != nil {
				t.Fatal(err)
			}
			if inner := p.MultipartReader(); inner != nil {
				for {
					q, err := inner.NextPart()
					if err == io.EOF {
						break
					}
					if err != nil {
						t.Fatal(err)
					}
					b, _ := io.ReadAll(q.Body)
					bodies = append(bodies, string(b))
				}
				continue
			}
			if disp, _, _ := p.Header.ContentDisposition(); disp == "attachment" {
				att = p
				if attData, err = io.ReadAll(p.Body); err != nil {
					t.Fatal(err)
				}
				continue
			}
			b, _ := io.ReadAll(p.Body)
			bodies = append(bodies, string(b))
		}
		// Line breaks are CRLF in the message (RFC 5322 section 2.3): LF and a
		// lone CR each become one.
		lines := strings.NewReplacer("\r\n", "\n", "\r", "\n").Replace
		var want []string
		for _, s := range []string{text, html} {
			if s != "" {
				want = append(want, lines(s))
			}
		}
		for i := range bodies {
			bodies[i] = strings.ReplaceAll(bodies[i], "\r\n", "\n")
		}
		if strings.Join(bodies, "\x00") != strings.Join(want, "\x00") {
			t.Fatalf("bodies %q, want %q", bodies, want)
		}
		if att == nil {
			t.Fatal("no attachment")
		}
		_, params, err := att.Header.ContentDisposition()
		if err != nil || params["filename"] != filename {
			t.Fatalf("filename %q (%v), want %q", params["filename"], err, filename)
		}
		if !bytes.Equal(attData, data) {
			t.Fatalf("attachment bytes differ")
		}
	})
}
