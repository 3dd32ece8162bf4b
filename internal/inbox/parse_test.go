package inbox

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/catchbox/catchbox/internal/store"
)

func TestParseMessage(t *testing.T) {
	raw := "From: =?UTF-8?B?SsO8cmdlbg==?= <jurgen@example.com>\r\n" +
		"To: A <a@x.localhost>, b@x.localhost\r\n" +
		"Cc: c@x.localhost\r\n" +
		"Subject: =?UTF-8?Q?Gr=C3=BC=C3=9Fe?= und mehr\r\n" +
		"Received: from one\r\nReceived: from two\r\n" +
		"X-Custom: value\r\n" +
		"MIME-Version: 1.0\r\nContent-Type: multipart/alternative; boundary=alt\r\n\r\n" +
		"--alt\r\nContent-Type: text/plain; charset=iso-8859-1\r\nContent-Transfer-Encoding: quoted-printable\r\n\r\nS=FC=DF\r\n" +
		"--alt\r\nContent-Type: text/html; charset=utf-8\r\n\r\n<p>hi</p>\r\n--alt--\r\n"
	p := parseMessage([]byte(raw))
	if p.From != (Address{Address: "jurgen@example.com", Name: "Jürgen"}) {
		t.Errorf("from = %+v", p.From)
	}
	if len(p.To) != 2 || p.To[0] != (Address{"a@x.localhost", "A"}) || p.To[1].Address != "b@x.localhost" {
		t.Errorf("to = %+v", p.To)
	}
	if len(p.Cc) != 1 || p.Cc[0].Address != "c@x.localhost" {
		t.Errorf("cc = %+v", p.Cc)
	}
	if p.Subject != "Grüße und mehr" {
		t.Errorf("subject = %q", p.Subject)
	}
	if strings.TrimSpace(p.Text) != "Süß" {
		t.Errorf("text = %q (charset not converted)", p.Text)
	}
	if strings.TrimSpace(p.HTML) != "<p>hi</p>" {
		t.Errorf("html = %q", p.HTML)
	}
	if p.Headers["received"] != "from one, from two" || p.Headers["x-custom"] != "value" {
		t.Errorf("headers = %v", p.Headers)
	}
	for k := range p.Headers {
		if k != strings.ToLower(k) {
			t.Errorf("header name %q not lower case", k)
		}
	}
}

func TestParseHTMLOnlyHasNoText(t *testing.T) {
	p := parseMessage([]byte("From: a@b.c\r\nContent-Type: text/html\r\n\r\n<b>only html</b>\r\n"))
	if p.Text != "" || !strings.Contains(p.HTML, "only html") {
		t.Errorf("text %q html %q", p.Text, p.HTML)
	}
}

func TestParseInlineAndAttachments(t *testing.T) {
	raw := "From: a@b.c\r\nTo: x@y.z\r\nMIME-Version: 1.0\r\nContent-Type: multipart/related; boundary=r\r\n\r\n" +
		"--r\r\nContent-Type: text/html\r\n\r\n<img src=\"cid:logo@x\">\r\n" +
		"--r\r\nContent-Type: image/png\r\nContent-ID: <logo@x>\r\nContent-Disposition: inline; filename=logo.png\r\nContent-Transfer-Encoding: base64\r\n\r\niVBORw0KGgo=\r\n" +
		"--r\r\nContent-Type: application/octet-stream\r\nContent-Disposition: attachment\r\n\r\nbytes\r\n--r--\r\n"
	p := parseMessage([]byte(raw))
	if len(p.Attachments) != 2 {
		t.Fatalf("attachments = %+v", p.Attachments)
	}
	var inline, att *parsedAttachment
	for i := range p.Attachments {
		if p.Attachments[i].Inline {
			inline = &p.Attachments[i]
		} else {
			att = &p.Attachments[i]
		}
	}
	if inline == nil || inline.ContentID != "logo@x" || inline.Filename != "logo.png" || !bytes.Equal(inline.Data, []byte("\x89PNG\r\n\x1a\n")) {
		t.Errorf("inline = %+v", inline)
	}
	if att == nil || att.Filename == "" || att.ContentType != "application/octet-stream" || string(att.Data) != "bytes" {
		t.Errorf("attachment = %+v", att)
	}
}

// Broken mail is stored as well as it can be read, never rejected.
func TestParseBrokenMail(t *testing.T) {
	for name, raw := range map[string]string{
		"no headers":        "just some text without any header\r\n",
		"bad address":       "From: not an address <<<\r\nTo: ,,, @@\r\nSubject: broken\r\n\r\nbody\r\n",
		"missing boundary":  "From: a@b.c\r\nContent-Type: multipart/mixed\r\n\r\n--x\r\nbody\r\n",
		"invalid utf8":      "From: a@b.c\r\nSubject: \xff\xfe bad\r\n\r\n\xff\xfe body \x00 nul\r\n",
		"bad base64":        "From: a@b.c\r\nContent-Type: text/plain\r\nContent-Transfer-Encoding: base64\r\n\r\n!!!not base64!!!\r\n",
		"unknown charset":   "From: a@b.c\r\nContent-Type: text/plain; charset=x-unknown-42\r\n\r\nhello\r\n",
		"empty":             "",
		"header only no nl": "Subject: x",
	} {
		p := parseMessage([]byte(raw))
		doc, err := json.Marshal(p)
		if err != nil {
			t.Errorf("%s: %v", name, err)
		}
		if !utf8.Valid(doc) || bytes.Contains(doc, []byte(`\u0000`)) {
			t.Errorf("%s: stored document not clean UTF-8: %s", name, doc)
		}
	}
	// A multipart message in which no boundary appears keeps its body as text; a
	// part without headers is text/plain (RFC 2045 section 5.2).
	for raw, want := range map[string]string{
		"Content-Type: multipart/mixed; boundary=xyz\r\n\r\nno boundary at all\r\n":                      "no boundary at all\r\n",
		"Content-Type: multipart/mixed; boundary=xyz\n\nlf only\n":                                       "lf only\n",
		"Content-Type: multipart/mixed; boundary=xyz\r\n\r\n--xyz\r\n\r\nno part headers\r\n--xyz--\r\n": "no part headers",
	} {
		if p := parseMessage([]byte(raw)); p.Text != want || len(p.Attachments) != 0 {
			t.Errorf("%q: text %q, %d attachments; want %q", raw, p.Text, len(p.Attachments), want)
		}
	}
	p := parseMessage([]byte("From: not an address <<<\r\nSubject: broken\r\n\r\nbody\r\n"))
	if p.Subject != "broken" || !strings.Contains(p.Text, "body") {
		t.Errorf("broken address lost the rest: %+v", p)
	}
}

// parseMessageSeeds are the seed corpus of FuzzParseMessage, which the
// differential test also reads.
var parseMessageSeeds = []string{
	"From: a@b.c\r\nTo: x@y.z\r\nSubject: hi\r\n\r\nbody\r\n",
	"From: =?utf-8?q?=C3=A9?= <a@b.c>\r\nSubject: =?iso-8859-1?b?4Q==?=\r\n\r\n",
	"Content-Type: multipart/mixed; boundary=b\r\n\r\n--b\r\nContent-Type: text/plain\r\n\r\nx\r\n--b\r\nContent-Disposition: attachment; filename*=UTF-8''%C3%A9.txt\r\n\r\ny\r\n--b--\r\n",
	"Content-Type: message/rfc822\r\n\r\nFrom: inner@x\r\nSubject: inner\r\n\r\ninner body\r\n",
	"\x00\xff\r\n\r\n",
}

// A multipart nested deep and cut off before its end parses in time linear in
// its size. (enmime needed time exponential in the depth: days for this one.)
func TestParseDeepCutOffMultipart(t *testing.T) {
	var b strings.Builder
	b.WriteString("Subject: deep\r\n")
	for i := 1; i <= 60; i++ {
		fmt.Fprintf(&b, "Content-Type: multipart/mixed; boundary=n%d\r\n\r\n--n%d\r\n", i, i)
	}
	b.WriteString("Content-Type: text/plain\r\n\r\ninnermost\r\n--n")
	p := parseMessage([]byte(b.String()))
	if p.Subject != "deep" || p.Text != "innermost\r\n--n" {
		t.Errorf("subject %q, text %q", p.Subject, p.Text)
	}
}

func FuzzParseMessage(f *testing.F) {
	for _, s := range parseMessageSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		p := parseMessage(raw)
		doc, err := json.Marshal(p)
		if err != nil {
			t.Fatalf("parsed message does not encode: %v", err)
		}
		if !utf8.Valid(doc) {
			t.Fatalf("invalid UTF-8 in stored document")
		}
		for k := range p.Headers {
			if k != strings.ToLower(k) {
				t.Fatalf("header %q not lower case", k)
			}
		}
		// Attachments are read back from the raw source on download: parsing
		// must find the same bytes again.
		for i, a := range p.Attachments {
			got, err := attachmentFromRaw(raw, i, contentHash(a.Data))
			if err != nil || !bytes.Equal(got, a.Data) {
				t.Fatalf("attachment %d not found again in the raw source: %v", i, err)
			}
		}
	})
}

func FuzzParseSearch(f *testing.F) {
	for _, s := range []string{
		"limit=5&offset=2", "from_timestamp=0&to_timestamp=99", "subject_includes=%25_%22&wait=1",
		"to_addr_prefix=%FF%FE", "limit=-1&offset=abc&wait=maybe", "limit=99999999999999999999",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, query string) {
		r := httptest.NewRequest("GET", "/api/emails/ns/inbox", nil)
		r.URL.RawQuery = query
		q, opt, _, err := ParseSearch(r)
		if err != nil {
			return
		}
		if q.Limit < 1 || q.Limit > MaxLimit || q.Offset < 0 {
			t.Fatalf("accepted out-of-range page %d/%d", q.Limit, q.Offset)
		}
		if (q.FromTimestamp != nil && *q.FromTimestamp < 0) || (q.ToTimestamp != nil && *q.ToTimestamp < 0) {
			t.Fatal("accepted a negative timestamp")
		}
		if int64(q.Limit) != opt.Limit || int64(q.Offset) != opt.Offset {
			t.Fatal("options do not echo the applied page")
		}
		for _, s := range []string{q.SubjectIncludes, q.FromAddrIncludes, q.ToAddrPrefix} {
			if utf8.RuneCountInString(s) > MaxFilterRunes {
				t.Fatal("accepted an over-long filter")
			}
		}
		// The SQL built from any accepted query has one argument per placeholder.
		for _, d := range []store.Dialect{store.SQLite, store.Postgres} {
			s := &Searcher{db: &store.DB{Dialect: d}, now: time.Now}
			for _, p := range []searchPlan{{}, {drive: true}} {
				where, args := s.where(q, p)
				if n := strings.Count(where, "?"); n != len(args) {
					t.Fatalf("%s %+v: %d placeholders, %d arguments: %s", d, p, n, len(args), where)
				}
			}
		}
		if hi, ok := prefixUpperBound(strings.ToLower(q.ToAddrPrefix)); ok && hi <= strings.ToLower(q.ToAddrPrefix) {
			t.Fatalf("prefix upper bound %q not above %q", hi, q.ToAddrPrefix)
		}
	})
}
