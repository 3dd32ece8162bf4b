// Package compose writes outbound email: the RFC 5322 message of a send, a
// reply or a forward (Build), and what a reply and a forward take from the
// inbound email they are made from (reply.go): the subject, the threading
// fields, the reply's recipients and the forwarded bodies. It checks nothing:
// the outbound operations hand it values their sending rules accepted.
package compose

import (
	"bytes"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"io"
	"mime/quotedprintable"
	"net/mail"
	"strings"
	"time"
	"unicode/utf8"

	gomail "github.com/emersion/go-message/mail"
	"github.com/emersion/go-message/textproto"
)

// Message is one outbound message as its RFC 5322 form shows it: the header
// fields of RFC 5322 section 3.6 and the MIME bodies and attachments (RFC
// 2045, RFC 2046). Bcc recipients are not in it: they are named only in the
// envelope (RFC 5322 section 3.6.3 allows either; leaving them out keeps them
// from every recipient).
type Message struct {
	// MessageID is the msg-id without angle brackets: <id>@<mail domain>.
	MessageID string
	Date      time.Time
	From      Address
	ReplyTo   *Address
	To, Cc    []Address
	Subject   string
	// InReplyTo and References are msg-ids without angle brackets (RFC 5322
	// section 3.6.4).
	InReplyTo   []string
	References  []string
	HTML, Text  string
	Attachments []Attachment
}

// Address is a mailbox: an address and its display name ("" for none).
type Address struct {
	Email, Name string
}

// Attachment is an attachment or, Inline, a part shown in the HTML body by
// its ContentID (written without angle brackets).
type Attachment struct {
	Filename    string
	ContentType string
	ContentID   string
	Inline      bool
	Data        []byte
}

// entity is one MIME entity to write: its header and either its body or, for
// a multipart, its parts.
type entity struct {
	header   textproto.Header
	body     []byte
	encoding string // of a leaf: "quoted-printable" or "base64"
	boundary string // of a multipart
	parts    []*entity
}

// Build writes m as an RFC 5322 message (CRLF line endings, every line within
// the 78 characters RFC 5322 section 2.1.1 recommends except where a header
// value offers no place to fold, and none over its 998) with go-message's
// header formatting and multipart writer. Its structure is the least that
// holds the content:
//
//	text or html alone              text/plain or text/html
//	text and html                   multipart/alternative (text first: RFC 2046 section 5.1.4)
//	+ inline parts with Content-ID  multipart/related around them (RFC 2387)
//	+ other attachments             multipart/mixed around all (RFC 2046 section 5.1.3)
func Build(m Message) ([]byte, error) {
	root := body(m.HTML, m.Text)
	var related, mixed []*entity
	for _, a := range m.Attachments {
		if a.Inline && a.ContentID != "" {
			related = append(related, attachment(a))
		} else {
			mixed = append(mixed, attachment(a))
		}
	}
	if len(related) > 0 {
		rootType, _, _ := strings.Cut(root.header.Get("Content-Type"), ";")
		root = multipart("related", append([]*entity{root}, related...), param("type", rootType))
	}
	if len(mixed) > 0 {
		root = multipart("mixed", append([]*entity{root}, mixed...))
	}

	fields, err := headerFields(m)
	if err != nil {
		return nil, err
	}
	fields = append(fields, [2]string{"MIME-Version", "1.0"})
	for _, k := range []string{"Content-Type", "Content-Transfer-Encoding"} {
		if v := root.header.Get(k); v != "" {
			fields = append(fields, [2]string{k, v})
		}
	}
	var buf bytes.Buffer
	if err := textproto.WriteHeader(&buf, header(fields)); err != nil {
		return nil, fmt.Errorf("write message header: %w", err)
	}
	if err := writeBody(&buf, root); err != nil {
		return nil, err
	}
	if !bytes.HasSuffix(buf.Bytes(), []byte("\r\n")) {
		// The last line ends too: SMTP's DATA is ended by CRLF.CRLF (RFC 5321
		// section 4.1.1.4), and a single text part need not end with one.
		buf.WriteString("\r\n")
	}
	return buf.Bytes(), nil
}

// header makes a header of fields, each folded (fold).
func header(fields [][2]string) textproto.Header {
	var h textproto.Header
	// textproto writes a header's fields last added first.
	for i := len(fields) - 1; i >= 0; i-- {
		h.AddRaw(fold(fields[i][0], fields[i][1]))
	}
	return h
}

// maxLine is the longest line RFC 5322 section 2.1.1 recommends, CRLF
// excluded.
const maxLine = 78

// fold writes a header field, folded (RFC 5322 section 2.2.3) before white
// space wherever a line would pass maxLine: unfolding, which removes each
// CRLF, gives the value back exactly. A run without white space longer than
// a line stays whole; encodeText keeps the subject's within one, and every
// other value is bounded far below RFC 5322's 998.
func fold(name, value string) []byte {
	var out []byte
	line := []byte(name + ":")
	rest := " " + value // each word starts with the white space before it
	for rest != "" {
		n := strings.IndexAny(rest[1:], " \t") + 1
		if n == 0 {
			n = len(rest)
		}
		word := rest[:n]
		rest = rest[n:]
		if len(line)+len(word) > maxLine && strings.TrimSpace(string(line)) != "" {
			out = append(append(out, line...), '\r', '\n')
			line = line[:0]
		}
		line = append(line, word...)
	}
	return append(append(out, line...), '\r', '\n')
}

// headerFields are the message's own header fields, in the order written,
// formatted by go-message: display names and a subject that are not ASCII
// become RFC 2047 encoded words.
func headerFields(c Message) ([][2]string, error) {
	var h gomail.Header
	h.SetDate(c.Date.UTC())
	h.SetAddressList("From", []*mail.Address{mailAddress(c.From)})
	if c.ReplyTo != nil {
		h.SetAddressList("Reply-To", []*mail.Address{mailAddress(*c.ReplyTo)})
	}
	h.SetAddressList("To", mailAddresses(c.To))
	h.SetAddressList("Cc", mailAddresses(c.Cc))
	h.Set("Subject", encodeText(c.Subject))
	h.SetMessageID(c.MessageID)
	h.SetMsgIDList("In-Reply-To", c.InReplyTo)
	h.SetMsgIDList("References", c.References)
	if len(c.To) == 0 && len(c.Cc) == 0 {
		// Only blind copies: the empty group RFC 5322 section A.1.3 shows, so
		// that no recipient sees the others and the message still has a To.
		h.Set("To", "undisclosed-recipients:;")
	}
	var out [][2]string
	for _, k := range []string{"Date", "From", "Reply-To", "To", "Cc", "Subject", "Message-Id", "In-Reply-To", "References"} {
		if v := h.Get(k); v != "" {
			out = append(out, [2]string{k, v})
		}
	}
	return out, nil
}

func mailAddress(a Address) *mail.Address { return &mail.Address{Name: a.Name, Address: a.Email} }

func mailAddresses(as []Address) []*mail.Address {
	var out []*mail.Address
	for _, a := range as {
		out = append(out, mailAddress(a))
	}
	return out
}

// maxHeaderWord is the longest run without white space that a header value
// may hold as it is: go-message folds a header line at white space, and a
// word longer than this, with the field name before it, could leave no fold
// within RFC 5322's 998 characters.
const maxHeaderWord = 900

// encodeText encodes unstructured header text (the subject) as RFC 2047
// encoded words when it is not printable ASCII, as go-message does, and also
// when it holds a word too long to fold or what looks like an encoded word:
// encoded words are short, and white space between them is no part of the
// text (RFC 2047 section 6.2).
func encodeText(s string) string {
	// Text that reads as an encoded word ("=?utf-8?q?...?=") would be decoded
	// by every reader: it is encoded too (RFC 2047 section 5).
	force := strings.Contains(s, "=?")
	for _, w := range strings.Fields(s) {
		force = force || len(w) > maxHeaderWord
	}
	if !force {
		var h gomail.Header
		h.SetSubject(s)
		return h.Get("Subject")
	}
	var words []string
	for len(s) > 0 {
		n := 0
		for n < len(s) && n < 45 {
			_, size := utf8.DecodeRuneInString(s[n:])
			if n+size > 45 {
				break
			}
			n += size
		}
		words = append(words, "=?utf-8?b?"+base64.StdEncoding.EncodeToString([]byte(s[:n]))+"?=")
		s = s[n:]
	}
	return strings.Join(words, " ")
}

// body is the message's text: one part, or the two alternatives.
func body(html, text string) *entity {
	switch {
	case html != "" && text != "":
		return multipart("alternative", []*entity{textPart("plain", text), textPart("html", html)})
	case html != "":
		return textPart("html", html)
	}
	return textPart("plain", text)
}

// textPart is a text/<subtype> leaf in UTF-8, quoted-printable: every line
// within 76 characters whatever the text's lines (RFC 2045 section 6.7).
func textPart(subtype, s string) *entity {
	e := &entity{body: []byte(s), encoding: "quoted-printable"}
	e.header.Set("Content-Transfer-Encoding", e.encoding)
	e.header.Set("Content-Type", "text/"+subtype+"; charset=utf-8")
	return e
}

// attachment is an attachment or inline part, base64 (RFC 2045 section 6.8),
// named in Content-Disposition (RFC 2183) and, for older readers, in the
// Content-Type's name parameter.
func attachment(a Attachment) *entity {
	e := &entity{body: a.Data, encoding: "base64"}
	if a.ContentID != "" {
		e.header.Set("Content-Id", "<"+a.ContentID+">")
	}
	e.header.Set("Content-Transfer-Encoding", e.encoding)
	disposition := "attachment"
	if a.Inline {
		disposition = "inline"
	}
	e.header.Set("Content-Disposition", disposition+"; "+param("filename", a.Filename))
	e.header.Set("Content-Type", a.ContentType+"; "+param("name", a.Filename))
	return e
}

// multipart is a multipart/<subtype> of the parts, with a fresh boundary.
func multipart(subtype string, parts []*entity, params ...string) *entity {
	var b [15]byte
	rand.Read(b[:])
	e := &entity{boundary: "=_" + hex.EncodeToString(b[:]), parts: parts}
	v := "multipart/" + subtype + "; " + param("boundary", e.boundary)
	for _, p := range params {
		v += "; " + p
	}
	e.header.Set("Content-Type", v)
	return e
}

// writeBody writes an entity's body: its encoded content, or its parts
// between boundaries (RFC 2046 section 5.1.1).
func writeBody(w io.Writer, e *entity) error {
	if e.parts == nil {
		return encode(w, e.encoding, e.body)
	}
	mw := textproto.NewMultipartWriter(w)
	if err := mw.SetBoundary(e.boundary); err != nil {
		return fmt.Errorf("multipart boundary: %w", err)
	}
	for _, p := range e.parts {
		pw, err := mw.CreatePart(p.header)
		if err != nil {
			return fmt.Errorf("write MIME part: %w", err)
		}
		if err := writeBody(pw, p); err != nil {
			return err
		}
	}
	return mw.Close()
}

// encode writes data in the transfer encoding, with CRLF line endings.
func encode(w io.Writer, encoding string, data []byte) error {
	if encoding == "base64" {
		enc := make([]byte, base64.StdEncoding.EncodedLen(len(data)))
		base64.StdEncoding.Encode(enc, data)
		for len(enc) > 0 {
			n := min(76, len(enc))
			if _, err := w.Write(append(enc[:n:n], '\r', '\n')); err != nil {
				return err
			}
			enc = enc[n:]
		}
		return nil
	}
	qp := quotedprintable.NewWriter(w)
	if _, err := qp.Write(data); err != nil {
		return err
	}
	return qp.Close()
}

// param formats a parameter of a header field (RFC 2045 section 5.1): quoted
// when the value is printable ASCII, else in RFC 2231's charset and percent
// encoding (section 4); a long value is split into continuations (section 3)
// short enough that the line can be folded between them.
func param(name, value string) string {
	ascii := true
	for i := 0; i < len(value); i++ {
		ascii = ascii && value[i] >= ' ' && value[i] < 0x7f
	}
	quote := strings.NewReplacer(`\`, `\\`, `"`, `\"`).Replace
	if ascii && len(value) <= 50 {
		return name + `="` + quote(value) + `"`
	}
	if ascii {
		var parts []string
		for i := 0; len(value) > 0; i++ {
			n := min(50, len(value))
			parts = append(parts, fmt.Sprintf(`%s*%d="%s"`, name, i, quote(value[:n])))
			value = value[n:]
		}
		return strings.Join(parts, "; ")
	}
	// Whole characters per segment: every reader concatenates the octets of
	// the segments, but one that decodes each on its own still reads them.
	var parts []string
	seg := name + "*0*=utf-8''"
	for _, r := range value {
		var enc string
		if r > ' ' && r < 0x7f && !strings.ContainsRune(`*'%()<>@,;:\"/[]?=`, r) {
			enc = string(r)
		} else {
			for _, c := range []byte(string(r)) {
				enc += fmt.Sprintf("%%%02X", c)
			}
		}
		if len(seg)+len(enc) > 70 {
			parts = append(parts, seg)
			seg = fmt.Sprintf("%s*%d*=", name, len(parts))
		}
		seg += enc
	}
	parts = append(parts, seg)
	return strings.Join(parts, "; ")
}
