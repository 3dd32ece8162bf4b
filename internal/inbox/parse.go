package inbox

import (
	"bufio"
	"bytes"
	"encoding/base64"
	"io"
	"mime"
	"mime/quotedprintable"
	"net/mail"
	"net/textproto"
	"sort"
	"strings"
	"unicode/utf8"

	"github.com/jhillyerd/enmime/v2"
)

// Limits on what one parsed message may carry into the database, so a hostile
// message cannot blow up a row. The raw bytes are kept whole regardless.
const (
	maxHeaderValue   = 64 << 10
	maxHeaders       = 500
	maxAttachments   = 1000
	maxAddresses     = 1000
	maxFilenameRunes = 255
)

// parsedAttachment is one attachment or inline part with its decoded bytes.
type parsedAttachment struct {
	Filename    string
	ContentType string
	ContentID   string
	Inline      bool
	Data        []byte
	partID      string // enmime's position of the part in the MIME tree
}

// parsed is a message turned into the namespace-independent part of an Email.
type parsed struct {
	From        Address
	To, Cc      []Address
	Subject     string
	Text, HTML  string
	Headers     map[string]string
	Attachments []parsedAttachment
}

// parser keeps the body parts as the sender wrote them: no text is invented from
// HTML when a message has no text part. A declared charset is trusted (RFC 2046
// section 4.1.2); statistical detection, which costs more than all the rest of
// parsing, runs only for text parts that declare none.
var parser = enmime.NewParser(enmime.DisableTextConversion(true), enmime.SkipMalformedParts(true),
	enmime.DisableCharacterDetection(true))

// parseMessage parses raw RFC 5322 bytes. Broken mail is never rejected: whatever
// can be read is kept, and a message that enmime cannot read at all is stored with
// its headers as net/mail reads them and its body as text.
//
// Fidelity rules (docs/inbox.md): RFC 2047 encoded words are decoded in every
// header; a header block sent as 8-bit bytes that are not UTF-8 is read in the
// message's declared charset (else Windows-1252, which every Latin-1 mailer
// produces); text parts are converted to UTF-8 from their charset; attachments
// keep the bytes that were attached.
func parseMessage(raw []byte) parsed {
	src := utf8Headers(raw)
	env, err := parser.ReadEnvelope(bytes.NewReader(src))
	if err != nil || env == nil || env.Root == nil {
		return parseFallback(src)
	}
	p := parsed{
		Subject: cleanText(env.GetHeader("Subject")),
		Headers: map[string]string{},
	}
	if from := addressList(env, "From"); len(from) > 0 {
		p.From = from[0]
	} else if s := env.GetHeader("From"); s != "" {
		p.From = Address{Address: cleanText(s)}
	}
	p.To = addressList(env, "To")
	p.Cc = addressList(env, "Cc")
	keys := env.GetHeaderKeys()
	sort.Strings(keys)
	for _, k := range keys {
		if len(p.Headers) >= maxHeaders {
			break
		}
		vals := env.GetHeaderValues(k)
		for i := range vals {
			vals[i] = cleanText(vals[i])
		}
		name := strings.ToLower(k)
		v := strings.Join(vals, ", ")
		if prev, ok := p.Headers[name]; ok {
			v = prev + ", " + v
		}
		p.Headers[name] = truncate(v, maxHeaderValue)
	}
	switch {
	case isMultipart(env.Root) && env.Root.FirstChild == nil:
		// A multipart message in which no boundary was found: its body is all
		// there is, and is kept as text.
		p.Text = cleanBody(string(src[bodyStart(src):]))
	case isMultipart(env.Root):
		p.readParts(env.Root)
	default:
		// A single-part message: enmime has already decided whether it is a body
		// (and found an HTML part's charset in its meta tag when none was declared).
		p.Text, p.HTML = cleanBody(env.Text), cleanBody(env.HTML)
		for _, part := range env.Attachments {
			p.addPart(part, false)
		}
		for _, part := range env.Inlines {
			p.addPart(part, true)
		}
	}
	p.restoreTextAttachments(src)
	return p
}

func isMultipart(part *enmime.Part) bool {
	return part.FirstChild != nil || strings.HasPrefix(part.ContentType, "multipart/")
}

// readParts walks a multipart message in document order. The body is made of the
// text/plain and text/html parts that are neither attachments nor named files:
// every one of each kind, joined, as mail clients show them one after the other
// (a mailing list's footer, Apple Mail's HTML split around an image), except in a
// multipart/alternative message, where only the first of each kind is the body.
// Every other leaf part is an attachment or inline part, so nothing that was sent
// is lost (a text/calendar alternative, a delivery report, a forwarded message).
// A part without a Content-Type is text/plain (RFC 2045 section 5.2).
func (p *parsed) readParts(root *enmime.Part) {
	alternative := root.ContentType == "multipart/alternative"
	var texts, htmls []string
	leaves := root.DepthMatchAll(func(q *enmime.Part) bool {
		return q.FirstChild == nil && !strings.HasPrefix(q.ContentType, "multipart/")
	})
	for _, part := range leaves {
		body := part.Disposition != "attachment" && part.FileName == ""
		ct := part.ContentType
		if ct == "" {
			ct = "text/plain"
		}
		switch {
		case body && ct == "text/plain" && (!alternative || len(texts) == 0):
			texts = append(texts, string(part.Content))
		case body && ct == "text/html" && (!alternative || len(htmls) == 0):
			htmls = append(htmls, string(part.Content))
		case len(part.Content) == 0 && part.FileName == "" && part.ContentID == "":
			// An empty part that names nothing: a broken boundary's leftovers.
		default:
			inline := part.Disposition == "inline" || (part.Disposition == "" && part.ContentID != "")
			p.addPart(part, inline)
		}
	}
	// enmime's separator between text parts, kept so bodies read as before.
	p.Text = cleanBody(strings.Join(texts, "\n--\n"))
	p.HTML = cleanBody(strings.Join(htmls, "\n"))
}

// partFilename is the part's file name. enmime replaces the bytes of a raw 8-bit
// name that is not UTF-8 with U+FFFD; such a name is read again from the header,
// in the part's charset (else Windows-1252).
func partFilename(part *enmime.Part) string {
	name := part.FileName
	if strings.ContainsRune(name, utf8.RuneError) {
		for _, h := range [][2]string{{"Content-Disposition", "filename"}, {"Content-Type", "name"}} {
			if _, params, err := mime.ParseMediaType(part.Header.Get(h[0])); err == nil && !utf8.ValidString(params[h[1]]) {
				name = params[h[1]]
				break
			}
		}
	}
	return cleanFilename(name, part.Charset)
}

// addPart records one attachment or inline part.
func (p *parsed) addPart(part *enmime.Part, inline bool) {
	if len(p.Attachments) >= maxAttachments {
		return
	}
	ct := strings.ToLower(part.ContentType)
	if ct == "" {
		ct = "application/octet-stream"
	}
	name := partFilename(part)
	if name == "" && ct == "message/rfc822" {
		name = cleanFilename(innerSubject(part.Content), "")
		if name != "" {
			name = truncateRunes(name, maxFilenameRunes-4) + ".eml"
		}
	}
	if name == "" {
		name = defaultFilename(ct)
	}
	p.Attachments = append(p.Attachments, parsedAttachment{
		Filename:    name,
		ContentType: ct,
		ContentID:   cleanText(strings.Trim(part.ContentID, "<>")),
		Inline:      inline,
		Data:        part.Content,
		partID:      part.PartID,
	})
}

// rawParser reads the same part tree as parser without decoding anything, so that
// an attachment of a text type can be given back as the bytes that were attached
// rather than enmime's UTF-8 conversion of them.
var rawParser = enmime.NewParser(enmime.RawContent(true), enmime.SkipMalformedParts(true),
	enmime.DisableTextConversion(true), enmime.DisableCharacterDetection(true))

// restoreTextAttachments replaces the bytes of text-typed attachments (a CSV in
// Windows-1252, an iCalendar file), which enmime converted to UTF-8, with their
// transfer-decoded bytes, unconverted. The second parse happens only for messages
// that have such parts.
func (p *parsed) restoreTextAttachments(src []byte) {
	need := false
	for _, a := range p.Attachments {
		need = need || strings.HasPrefix(a.ContentType, "text/")
	}
	if !need {
		return
	}
	root, err := rawParser.ReadParts(bytes.NewReader(src))
	if err != nil || root == nil {
		return
	}
	byID := map[string]*enmime.Part{}
	_ = root.DepthMatchAll(func(q *enmime.Part) bool {
		if q.FirstChild == nil {
			byID[q.PartID] = q
		}
		return false
	})
	for i := range p.Attachments {
		a := &p.Attachments[i]
		if !strings.HasPrefix(a.ContentType, "text/") {
			continue
		}
		rp := byID[a.partID]
		if rp == nil {
			continue
		}
		if data, ok := transferDecode(rp.Header.Get("Content-Transfer-Encoding"), rp.Content); ok {
			a.Data = data
		}
	}
}

// transferDecode undoes a Content-Transfer-Encoding (RFC 2045 section 6) as
// leniently as enmime does: characters outside the base64 alphabet are skipped.
func transferDecode(cte string, body []byte) ([]byte, bool) {
	switch strings.ToLower(strings.TrimSpace(cte)) {
	case "base64":
		clean := make([]byte, 0, len(body))
		for _, c := range body {
			if c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '+' || c == '/' {
				clean = append(clean, c)
			}
		}
		if len(clean)%4 == 1 {
			clean = clean[:len(clean)-1]
		}
		out := make([]byte, base64.RawStdEncoding.DecodedLen(len(clean)))
		n, err := base64.RawStdEncoding.Decode(out, clean)
		return out[:n], err == nil
	case "quoted-printable":
		out, err := io.ReadAll(quotedprintable.NewReader(bytes.NewReader(body)))
		return out, err == nil
	case "", "7bit", "8bit", "binary":
		return body, true
	}
	return nil, false
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

func addressList(env *enmime.Envelope, header string) []Address {
	list, err := env.AddressList(header)
	if err != nil || len(list) == 0 {
		// Lenient fallback: split on commas and keep what looks like an address.
		raw := env.GetHeader(header)
		if raw == "" {
			return nil
		}
		return looseAddresses(raw)
	}
	out := make([]Address, 0, len(list))
	for _, a := range list {
		if len(out) >= maxAddresses {
			break
		}
		out = append(out, Address{Address: cleanText(a.Address), Name: cleanText(a.Name)})
	}
	return out
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

func parseFallback(raw []byte) parsed {
	p := parsed{Headers: map[string]string{}}
	msg, err := mail.ReadMessage(bytes.NewReader(raw))
	if err != nil {
		p.Text = cleanBody(string(raw))
		return p
	}
	for k, vals := range msg.Header {
		for i := range vals {
			vals[i] = decodeHeader(vals[i], "")
		}
		p.Headers[strings.ToLower(k)] = truncate(strings.Join(vals, ", "), maxHeaderValue)
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
