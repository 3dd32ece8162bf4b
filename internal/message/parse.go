// Package message reads an email as it arrived (RFC 5322 bytes, MIME per RFC 2045
// and RFC 2046) into what Catchbox shows of it: addresses, subject, headers, text
// and HTML bodies, and attachments with their bytes. It is its own package, and
// depends on no store, because every part of Catchbox that reads mail reads it the
// same way: inbound ingest, and the outbound reply, forward and deliverability
// report that quote or inspect a message.
//
// Parse is the one entry point. Leniency is the rule (docs/inbox.md, "How MIME is
// read"): broken mail is read as well as it can be, never rejected.
package message

import (
	"bufio"
	"bytes"
	"io"
	"net/mail"
	"net/textproto"
	"slices"
	"sort"
	"strings"
	"unicode/utf8"
)

// Limits on what one parsed message may carry, so a hostile message cannot blow
// up the row it is stored in. The raw bytes are kept whole regardless.
const (
	maxHeaderValue   = 64 << 10
	maxHeaders       = 500
	maxAttachments   = 1000
	maxAddresses     = 1000
	maxFilenameRunes = 255
)

// Address is one mailbox of an address header (RFC 5322 section 3.4), its
// display name decoded. Its JSON form is the API's EmailAddress, which the
// inbox returns as it is.
type Address struct {
	Address string `json:"address"`
	Name    string `json:"name,omitempty"`
}

// Attachment is one attachment or inline part with its decoded bytes: a part
// that is not the message's text or HTML body.
type Attachment struct {
	Filename    string // safe to offer as a download name; never empty
	ContentType string // the media type in lower case, without parameters
	ContentID   string // without angle brackets; "" when the part has none
	Inline      bool   // disposition inline, or a Content-ID without disposition
	Data        []byte // the bytes as attached, transfer encoding undone
}

// Parsed is what Parse reads from a message: everything of it that does not
// depend on who received it.
type Parsed struct {
	From        Address
	To, Cc      []Address
	Subject     string
	Text, HTML  string            // the bodies in UTF-8, "" when the message has none
	Headers     map[string]string // lower-case names; repeated fields joined with ", "
	Attachments []Attachment
}

// Parse reads raw RFC 5322 bytes (mime.go reads their MIME structure).
// Broken mail is never rejected: whatever can be read is kept, and a message that
// cannot be read as MIME at all keeps its headers as net/mail reads them and its
// body as text.
//
// Fidelity rules (docs/inbox.md): RFC 2047 encoded words are decoded in every
// header; a header block sent as 8-bit bytes that are not UTF-8 is read in the
// message's declared charset (else Windows-1252, which every Latin-1 mailer
// produces); text parts are converted to UTF-8 from their charset; attachments
// keep the bytes that were attached. The body parts are kept as the sender wrote
// them: no text is invented from HTML when a message has no text part. Parse is
// deterministic: the same bytes give the same value, which lets the inbox find
// an attachment again in a stored raw source.
func Parse(raw []byte) Parsed {
	src := utf8Headers(raw)
	root, ok := readMIME(src)
	if !ok {
		return parseFallback(src)
	}
	h := root.header
	p := Parsed{
		Subject: cleanText(decodeWords(h.get("Subject"))),
		Headers: headerMap(h),
	}
	if from := addressList(h, "From"); len(from) > 0 {
		p.From = from[0]
	} else if s := decodeWords(h.get("From")); s != "" {
		p.From = Address{Address: cleanText(s)}
	}
	p.To = addressList(h, "To")
	p.Cc = addressList(h, "Cc")
	switch {
	case root.multipart && len(root.children) == 0:
		// A multipart message in which no boundary was found: its body is all
		// there is, and is kept as text.
		p.Text = cleanBody(string(root.body))
	case root.multipart:
		p.readParts(root)
	case root.contentType != "text/plain" && root.contentType != "text/html" || root.disposition == "attachment":
		// A single part that is not a body: a PDF sent on its own, or text
		// marked as an attachment.
		p.addPart(root, root.content(), root.disposition == "inline")
	case root.contentType == "text/html":
		p.HTML = cleanBody(root.text(true))
	default:
		p.Text = cleanBody(root.text(false))
	}
	return p
}

// headerMap is the message's header as the API's headers map: names in lower
// case, encoded words decoded, the values of a repeated field joined with ", " in
// the order sent. At most maxHeaders names are kept, the first in sorted order.
func headerMap(h mimeHeader) map[string]string {
	order := make([]int, len(h))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int { return compareFieldNames(h[a].name, h[b].name) })
	m := make(map[string]string, min(len(h), maxHeaders))
	var vals []string
	for i := 0; i < len(order) && len(m) < maxHeaders; {
		first := h[order[i]].name
		vals = vals[:0]
		for ; i < len(order) && compareFieldNames(h[order[i]].name, first) == 0; i++ {
			vals = append(vals, cleanText(decodeWords(h[order[i]].value)))
		}
		v := vals[0]
		if len(vals) > 1 {
			v = strings.Join(vals, ", ")
		}
		name := lowerFieldName(first)
		if prev, ok := m[name]; ok {
			v = prev + ", " + v
		}
		m[name] = truncate(v, maxHeaderValue)
	}
	return m
}

// content is the part's body with its transfer encoding undone; nil for a
// multipart whose parts could not be found.
func (p *mimePart) content() []byte {
	if p.multipart {
		return nil
	}
	data, _ := decodeTransfer(p.encoding, p.body)
	return data
}

// text is the body of a text part in UTF-8 (not yet cleaned). A body in an
// unknown transfer encoding is not converted, since its bytes are not text as
// sent.
func (p *mimePart) text(html bool) string {
	if p.multipart {
		return ""
	}
	data, known := decodeTransfer(p.encoding, p.body)
	if !known {
		return string(data)
	}
	return textToUTF8(data, p.charset, html)
}

// readParts walks a multipart message in document order. The body is made of the
// text/plain and text/html parts that are neither attachments nor named files:
// every one of each kind, joined, as mail clients show them one after the other
// (a mailing list's footer, Apple Mail's HTML split around an image), except in a
// multipart/alternative message, where only the first of each kind is the body.
// Every other leaf part is an attachment or inline part, so nothing that was sent
// is lost (a text/calendar alternative, a delivery report, a forwarded message).
// A part without a Content-Type is text/plain (RFC 2045 section 5.2).
func (p *Parsed) readParts(root *mimePart) {
	alternative := root.contentType == "multipart/alternative"
	var texts, htmls []string
	root.leaves(func(part *mimePart) {
		body := part.disposition != "attachment" && part.fileName == ""
		ct := part.contentType
		if ct == "" {
			ct = "text/plain"
		}
		switch {
		case body && ct == "text/plain" && (!alternative || len(texts) == 0):
			texts = append(texts, part.text(false))
		case body && ct == "text/html" && (!alternative || len(htmls) == 0):
			htmls = append(htmls, part.text(true))
		default:
			data := part.content()
			if len(data) == 0 && part.fileName == "" && part.contentID == "" {
				return // an empty part that names nothing: a broken boundary's leftovers
			}
			inline := part.disposition == "inline" || (part.disposition == "" && part.contentID != "")
			p.addPart(part, data, inline)
		}
	})
	// The separator between text parts, kept so bodies read as before.
	p.Text = cleanBody(strings.Join(texts, "\n--\n"))
	p.HTML = cleanBody(strings.Join(htmls, "\n"))
}

// addPart records one attachment or inline part. A text-typed attachment keeps
// its bytes as attached, not converted to UTF-8 (a Windows-1252 CSV downloads as
// sent).
func (p *Parsed) addPart(part *mimePart, data []byte, inline bool) {
	if len(p.Attachments) >= maxAttachments {
		return
	}
	ct := part.contentType
	if ct == "" {
		ct = "application/octet-stream"
	}
	name := cleanFilename(part.fileName, part.charset)
	if name == "" && ct == "message/rfc822" {
		name = cleanFilename(innerSubject(data), "")
		if name != "" {
			name = truncateRunes(name, maxFilenameRunes-4) + ".eml"
		}
	}
	if name == "" {
		name = defaultFilename(ct)
	}
	p.Attachments = append(p.Attachments, Attachment{
		Filename:    name,
		ContentType: ct,
		ContentID:   cleanText(strings.Trim(part.contentID, "<>")),
		Inline:      inline,
		Data:        data,
	})
}

// innerSubject is the decoded Subject of a message/rfc822 part, which names the
// attachment ("<subject>.eml").
func innerSubject(msg []byte) string {
	end := headerEnd(msg)
	tp := textproto.NewReader(bufio.NewReader(io.MultiReader(bytes.NewReader(msg[:end]), strings.NewReader("\r\n\r\n"))))
	h, _ := tp.ReadMIMEHeader()
	return decodeHeader(h.Get("Subject"), "")
}

// defaultFilename names a part that has no file name, from its content type. The
// table is fixed (not the host's mime.types) so names are the same everywhere.
func defaultFilename(contentType string) string {
	if ext, ok := defaultExtensions[contentType]; ok {
		return "attachment" + ext
	}
	if contentType == "message/rfc822" {
		return "message.eml"
	}
	if strings.HasPrefix(contentType, "text/") {
		return "attachment.txt"
	}
	return "attachment"
}

var defaultExtensions = map[string]string{
	"application/gzip": ".gz", "application/ics": ".ics", "application/json": ".json",
	"application/pdf": ".pdf", "application/pkcs7-signature": ".p7s", "application/xml": ".xml",
	"application/zip": ".zip", "image/bmp": ".bmp", "image/gif": ".gif", "image/jpeg": ".jpg",
	"image/png": ".png", "image/svg+xml": ".svg", "image/tiff": ".tif", "image/webp": ".webp",
	"message/delivery-status": ".txt", "message/disposition-notification": ".txt",
	"text/calendar": ".ics", "text/csv": ".csv", "text/html": ".html", "text/plain": ".txt",
	"text/rfc822-headers": ".txt", "text/vcard": ".vcf", "text/x-vcard": ".vcf", "text/xml": ".xml",
}

// addressList reads an address header (RFC 5322 section 3.4), the first of its
// fields: with net/mail, after adding the commas a list often lacks, else
// leniently (looseAddresses).
func addressList(h mimeHeader, name string) []Address {
	field := h.get(name)
	if field == "" {
		return nil
	}
	list, err := parseAddressList(field)
	if err != nil || len(list) == 0 {
		raw := decodeWords(field)
		if raw == "" {
			return nil
		}
		return looseAddresses(raw)
	}
	out := make([]Address, 0, min(len(list), maxAddresses))
	for _, a := range list {
		if len(out) >= maxAddresses {
			break
		}
		// Words net/mail left encoded (in quoted names) are decoded too.
		out = append(out, Address{Address: cleanText(decodeWords(a.Address)), Name: cleanText(decodeWords(a.Name))})
	}
	return out
}

var addressParser = mail.AddressParser{WordDecoder: wordDecoder}

// parseAddressList parses an address list; one whose addresses are separated by
// spaces or semicolons instead of commas is read again with commas.
func parseAddressList(s string) ([]*mail.Address, error) {
	s = latin1Words(s)
	list, err := addressParser.ParseList(s)
	if err != nil && err.Error() == "mail: expected comma" {
		return addressParser.ParseList(addCommas(s))
	}
	return list, err
}

// addCommas puts commas where an address list lacks them: after an address's
// domain, a semicolon becomes a comma (dropped at the very end) and a space
// outside angle brackets is preceded by one. Runs of white space become one
// space, and spaces inside angle brackets are dropped.
func addCommas(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	var b strings.Builder
	quoted, escaped, angle, domain := false, false, false, false
	for i, r := range s {
		switch {
		case escaped:
			escaped = false
		case r == '"':
			quoted = !quoted
		case r == '<':
			angle = true
		case r == '>':
			angle = false
		case quoted:
			escaped = r == '\\'
		case r == '@':
			domain = true
		case domain && r == ';':
			domain = false
			if i < len(s)-1 {
				b.WriteByte(',')
			}
			continue
		case domain && r == ',':
			domain = false
		case domain && r == ' ' && !angle:
			domain = false
			b.WriteString(", ")
			continue
		case angle && r == ' ':
			continue
		}
		b.WriteRune(r)
	}
	return b.String()
}

// looseAddresses reads an address header that net/mail rejects, keeping each
// comma-separated piece (its <addr> part when there is one).
func looseAddresses(raw string) []Address {
	var out []Address
	for _, piece := range strings.Split(raw, ",") {
		piece = strings.TrimSpace(piece)
		if piece == "" || len(out) >= maxAddresses {
			continue
		}
		if a, err := mail.ParseAddress(piece); err == nil {
			out = append(out, Address{Address: a.Address, Name: a.Name})
			continue
		}
		if i, j := strings.LastIndexByte(piece, '<'), strings.LastIndexByte(piece, '>'); i >= 0 && j > i {
			out = append(out, Address{Address: cleanText(piece[i+1 : j]), Name: cleanText(strings.Trim(piece[:i], ` "`))})
			continue
		}
		out = append(out, Address{Address: cleanText(piece)})
	}
	return out
}

func parseFallback(raw []byte) Parsed {
	p := Parsed{Headers: map[string]string{}}
	msg, err := mail.ReadMessage(bytes.NewReader(raw))
	if err != nil {
		p.Text = cleanBody(string(raw))
		return p
	}
	keys := make([]string, 0, len(msg.Header))
	for k := range msg.Header {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		// net/mail takes any bytes before a colon for a name.
		name := cleanText(strings.ToLower(k))
		if name == "" || len(p.Headers) >= maxHeaders {
			continue
		}
		vals := msg.Header[k]
		for i := range vals {
			vals[i] = decodeHeader(vals[i], "")
		}
		v := strings.Join(vals, ", ")
		if prev, ok := p.Headers[name]; ok {
			v = prev + ", " + v
		}
		p.Headers[name] = truncate(v, maxHeaderValue)
	}
	p.Subject = decodeHeader(msg.Header.Get("Subject"), "")
	if l := looseAddresses(msg.Header.Get("From")); len(l) > 0 {
		p.From = l[0]
	}
	p.To = looseAddresses(msg.Header.Get("To"))
	p.Cc = looseAddresses(msg.Header.Get("Cc"))
	var body bytes.Buffer
	body.ReadFrom(msg.Body)
	p.Text = cleanBody(body.String())
	return p
}

// cleanText makes a header value safe to store and return as JSON: valid UTF-8,
// no NUL bytes, surrounding space trimmed.
func cleanText(s string) string {
	return strings.TrimSpace(cleanBody(s))
}

func cleanBody(s string) string {
	if !utf8.ValidString(s) {
		s = strings.ToValidUTF8(s, "\uFFFD")
	}
	if strings.IndexByte(s, 0) >= 0 {
		s = strings.ReplaceAll(s, "\x00", "")
	}
	return s
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	s = s[:n]
	for len(s) > 0 && !utf8.ValidString(s) {
		s = s[:len(s)-1]
	}
	return s
}

func truncateRunes(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n])
}
