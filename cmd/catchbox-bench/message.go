package main

import (
	"bytes"
	"encoding/base64"
	"fmt"
	"math/rand/v2"
	"mime/quotedprintable"
	"strings"
	"time"
)

// Message sizes the ingest benchmark is specified in. small is a typical
// transactional email (a sign-up or password-reset notice, about 1 KB);
// large is the same with a 30 KiB attachment, whose base64 encoding is 40 KiB,
// bringing the whole message to about 50 KB. html is a sign-in mail as
// services send it, about 8 KB: an HTML body of tables with a code, a button
// and a footer of links, and its text alternative; it is what the link and code
// reader at ingest has most work with.
const (
	sizeSmall = "small"
	sizeLarge = "large"
	sizeHTML  = "html"

	attachmentBytes = 30 * 1024
)

// loremWords feed the generated bodies; text that looks like prose keeps the
// parser and any compression honest, unlike a run of one repeated byte.
var loremWords = strings.Fields(`lorem ipsum dolor sit amet consectetur adipiscing elit sed do eiusmod
tempor incididunt ut labore et dolore magna aliqua ut enim ad minim veniam quis nostrud
exercitation ullamco laboris nisi aliquip ex ea commodo consequat duis aute irure in
reprehenderit voluptate velit esse cillum fugiat nulla pariatur excepteur sint occaecat
cupidatat non proident sunt culpa qui officia deserunt mollit anim id est laborum`)

// messageSpec is everything that varies between two generated messages.
type messageSpec struct {
	From    string
	To      string
	Subject string
	Size    string
	Seq     int // seeds the body text so that messages differ
}

// buildMessage returns an RFC 5322 message with CRLF line endings, ready to be
// written to an SMTP DATA stream.
func buildMessage(m messageSpec) ([]byte, error) {
	rng := rand.New(rand.NewPCG(uint64(m.Seq), 0x6361746368626f78))
	var b bytes.Buffer
	hdr := func(k, v string) { fmt.Fprintf(&b, "%s: %s\r\n", k, v) }
	hdr("From", "Bench Sender <"+m.From+">")
	hdr("To", "<"+m.To+">")
	hdr("Subject", m.Subject)
	hdr("Date", time.Now().UTC().Format(time.RFC1123Z))
	hdr("Message-ID", fmt.Sprintf("<%s.%d@bench.localhost>", strings.ReplaceAll(m.Subject, " ", "."), m.Seq))
	hdr("MIME-Version", "1.0")
	switch m.Size {
	case sizeSmall:
		hdr("Content-Type", "text/plain; charset=utf-8")
		hdr("Content-Transfer-Encoding", "7bit")
		b.WriteString("\r\n")
		writeProse(&b, rng, 850)
	case sizeLarge:
		const boundary = "bench-boundary-7f3a9c"
		hdr("Content-Type", `multipart/mixed; boundary="`+boundary+`"`)
		b.WriteString("\r\nThis is a multi-part message in MIME format.\r\n")
		b.WriteString("--" + boundary + "\r\n")
		b.WriteString("Content-Type: text/plain; charset=utf-8\r\nContent-Transfer-Encoding: 7bit\r\n\r\n")
		writeProse(&b, rng, 8*1024)
		b.WriteString("--" + boundary + "\r\n")
		b.WriteString("Content-Type: application/pdf; name=\"report.pdf\"\r\n")
		b.WriteString("Content-Disposition: attachment; filename=\"report.pdf\"\r\n")
		b.WriteString("Content-Transfer-Encoding: base64\r\n\r\n")
		payload := make([]byte, attachmentBytes)
		for i := range payload {
			payload[i] = byte(rng.Uint32())
		}
		writeBase64Lines(&b, payload)
		b.WriteString("--" + boundary + "--\r\n")
	case sizeHTML:
		writeSignIn(&b, rng)
	default:
		return nil, fmt.Errorf("unknown size %q: want %s, %s or %s", m.Size, sizeSmall, sizeLarge, sizeHTML)
	}
	return b.Bytes(), nil
}

// writeSignIn appends the parts of a sign-in mail with a code and links,
// multipart/alternative, the HTML quoted-printable as mailers send it.
func writeSignIn(b *bytes.Buffer, rng *rand.Rand) {
	const boundary = "bench-alt-5d1e8b"
	code := fmt.Sprintf("%06d", rng.IntN(1000000))
	token := fmt.Sprintf("%016x", rng.Uint64())
	b.WriteString("Content-Type: multipart/alternative; boundary=\"" + boundary + "\"\r\n\r\n")
	b.WriteString("--" + boundary + "\r\nContent-Type: text/plain; charset=utf-8\r\n\r\n")
	fmt.Fprintf(b, "Sign in to Bench\r\n\r\nYour sign-in code is %s. It expires in 10 minutes.\r\n\r\n"+
		"Or follow this link: https://app.bench.example/login/verify?token=%s&utm_source=email\r\n\r\n", code, token)
	writeProse(b, rng, 1400)
	b.WriteString("\r\nBench Inc., 100 Example Street, Springfield, IL 62704\r\nUnsubscribe: https://app.bench.example/u/" + token + "\r\n")
	b.WriteString("--" + boundary + "\r\nContent-Type: text/html; charset=utf-8\r\nContent-Transfer-Encoding: quoted-printable\r\n\r\n")
	var h strings.Builder
	h.WriteString(`<!DOCTYPE html><html><head><meta charset="utf-8"><title>Sign in</title><style>body{margin:0;background:#f4f4f7}` +
		`td{font-family:Helvetica,Arial,sans-serif;color:#333}.code{font-size:32px;letter-spacing:6px;font-weight:bold}` +
		`.btn{background:#2d6cdf;color:#fff;padding:12px 24px;border-radius:4px;text-decoration:none}</style></head><body>`)
	h.WriteString(`<div style="display:none">Your sign-in code is inside&zwnj;&nbsp;&zwnj;&nbsp;&zwnj;&nbsp;</div>`)
	h.WriteString(`<table width="100%" cellpadding="0" cellspacing="0" role="presentation"><tr><td align="center">` +
		`<table width="600" cellpadding="0" cellspacing="0" role="presentation" style="background:#ffffff">`)
	h.WriteString(`<tr><td style="padding:24px"><a href="https://bench.example/?utm_source=email&amp;utm_medium=signin">` +
		`<img src="https://cdn.bench.example/logo.png" width="120" height="32" alt="Bench"></a></td></tr>`)
	fmt.Fprintf(&h, `<tr><td style="padding:0 24px"><h1 style="font-size:22px">Sign in to Bench</h1>`+
		`<p>Enter this code on the sign-in page. It expires in 10 minutes.</p></td></tr>`+
		`<tr><td align="center" style="padding:16px"><div class="code">%s</div></td></tr>`+
		`<tr><td align="center" style="padding:16px"><a class="btn" href="https://app.bench.example/login/verify?token=%s&amp;utm_source=email">Sign in</a></td></tr>`,
		code, token)
	h.WriteString(`<tr><td style="padding:0 24px"><p>`)
	var prose bytes.Buffer
	writeProse(&prose, rng, 3200)
	h.WriteString(prose.String())
	h.WriteString(`</p></td></tr><tr><td style="padding:24px;font-size:12px;color:#999">`)
	for _, l := range []string{"help", "privacy", "terms", "security", "status", "blog", "careers", "contact"} {
		fmt.Fprintf(&h, `<a href="https://bench.example/%s?utm_source=email&amp;utm_medium=footer" style="color:#999">%s</a> &middot; `, l, l)
	}
	fmt.Fprintf(&h, `<br>Bench Inc., 100 Example Street, Springfield, IL 62704 &copy; 2026<br>`+
		`<a href="https://app.bench.example/u/%s" style="color:#999">Unsubscribe</a></td></tr></table></td></tr></table></body></html>`, token)
	writeQuotedPrintable(b, h.String())
	b.WriteString("\r\n--" + boundary + "--\r\n")
}

// writeQuotedPrintable appends s quoted-printable (RFC 2045 section 6.7), in
// lines of at most 76 characters with soft breaks.
func writeQuotedPrintable(b *bytes.Buffer, s string) {
	w := quotedprintable.NewWriter(b)
	w.Write([]byte(s))
	w.Close()
}

// writeProse appends about n bytes of wrapped lorem text.
func writeProse(b *bytes.Buffer, rng *rand.Rand, n int) {
	start := b.Len()
	line := 0
	for b.Len()-start < n {
		w := loremWords[rng.IntN(len(loremWords))]
		if line+len(w)+1 > 72 {
			b.WriteString("\r\n")
			line = 0
		} else if line > 0 {
			b.WriteByte(' ')
			line++
		}
		b.WriteString(w)
		line += len(w)
	}
	b.WriteString("\r\n")
}

// writeBase64Lines writes data in base64 lines of 76 characters, as RFC 2045
// section 6.8 requires.
func writeBase64Lines(b *bytes.Buffer, data []byte) {
	enc := base64.StdEncoding.EncodeToString(data)
	for len(enc) > 76 {
		b.WriteString(enc[:76])
		b.WriteString("\r\n")
		enc = enc[76:]
	}
	b.WriteString(enc)
	b.WriteString("\r\n")
}
