package main

import (
	"bytes"
	"encoding/base64"
	"fmt"
	"math/rand/v2"
	"strings"
	"time"
)

// Message sizes the ingest benchmark is specified in. small is a typical
// transactional email (a sign-up or password-reset notice, about 1 KB);
// large is the same with a 30 KiB attachment, whose base64 encoding is 40 KiB,
// bringing the whole message to about 50 KB.
const (
	sizeSmall = "small"
	sizeLarge = "large"

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
	default:
		return nil, fmt.Errorf("unknown size %q: want %s or %s", m.Size, sizeSmall, sizeLarge)
	}
	return b.Bytes(), nil
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
