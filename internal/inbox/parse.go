package inbox

import (
	"bytes"
	"mime"
	"net/mail"
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
func parseMessage(raw []byte) parsed {
	env, err := parser.ReadEnvelope(bytes.NewReader(raw))
	if err != nil || env == nil || env.Root == nil {
		return parseFallback(raw)
	}
	p := parsed{
		Subject: cleanText(env.GetHeader("Subject")),
		Text:    cleanBody(env.Text),
		HTML:    cleanBody(env.HTML),
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
	for _, part := range env.Attachments {
		p.addPart(part, false)
	}
	for _, part := range env.Inlines {
		p.addPart(part, true)
	}
	for _, part := range env.OtherParts {
		if part.FileName != "" || part.ContentID != "" {
			p.addPart(part, part.Disposition != "attachment")
		}
	}
	return p
}

func (p *parsed) addPart(part *enmime.Part, inline bool) {
	if len(p.Attachments) >= maxAttachments {
		return
	}
	name := cleanText(part.FileName)
	if name == "" {
		name = defaultFilename(part.ContentType)
	}
	ct := strings.ToLower(part.ContentType)
	if ct == "" {
		ct = "application/octet-stream"
	}
	p.Attachments = append(p.Attachments, parsedAttachment{
		Filename:    truncateRunes(name, maxFilenameRunes),
		ContentType: ct,
		ContentID:   strings.Trim(part.ContentID, "<>"),
		Inline:      inline,
		Data:        part.Content,
	})
}

func defaultFilename(contentType string) string {
	if exts, _ := mime.ExtensionsByType(contentType); len(exts) > 0 {
		return "attachment" + exts[0]
	}
	if strings.EqualFold(contentType, "message/rfc822") {
		return "message.eml"
	}
	return "attachment"
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
		p.Headers[strings.ToLower(k)] = truncate(cleanText(strings.Join(vals, ", ")), maxHeaderValue)
	}
	dec := new(mime.WordDecoder)
	if s, err := dec.DecodeHeader(msg.Header.Get("Subject")); err == nil {
		p.Subject = cleanText(s)
	}
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
