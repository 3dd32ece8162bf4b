package message

import (
	"bytes"
	"encoding/base64"
	"io"
	"mime"
	"mime/quotedprintable"
	"sort"
	"strings"
	"unicode/utf8"

	"github.com/jhillyerd/enmime/v2"
)

// This file keeps the enmime-based parser that Parse replaced, unchanged
// but for its names, as the reference of the differential tests: for every
// message they feed it, Parse must give the same Parsed value, or a
// difference listed, with its reason, in parse_diff_test.go.

var enmimeParser = enmime.NewParser(enmime.DisableTextConversion(true), enmime.SkipMalformedParts(true),
	enmime.DisableCharacterDetection(true))

var enmimeRawParser = enmime.NewParser(enmime.RawContent(true), enmime.SkipMalformedParts(true),
	enmime.DisableTextConversion(true), enmime.DisableCharacterDetection(true))

// enmimeParsed is a Parsed value with the enmime PartID of each attachment.
type enmimeParsed struct {
	Parsed
	partIDs []string
}

func parseMessageEnmime(raw []byte) Parsed {
	src := utf8Headers(raw)
	env, err := enmimeParser.ReadEnvelope(bytes.NewReader(src))
	if err != nil || env == nil || env.Root == nil {
		return parseFallback(src)
	}
	p := &enmimeParsed{Parsed: Parsed{
		Subject: cleanText(env.GetHeader("Subject")),
		Headers: map[string]string{},
	}}
	if from := addressListEnmime(env, "From"); len(from) > 0 {
		p.From = from[0]
	} else if s := env.GetHeader("From"); s != "" {
		p.From = Address{Address: cleanText(s)}
	}
	p.To = addressListEnmime(env, "To")
	p.Cc = addressListEnmime(env, "Cc")
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
	case enmimeIsMultipart(env.Root) && env.Root.FirstChild == nil:
		p.Text = cleanBody(string(src[bodyStart(src):]))
	case enmimeIsMultipart(env.Root):
		p.readPartsEnmime(env.Root)
	default:
		p.Text, p.HTML = cleanBody(env.Text), cleanBody(env.HTML)
		for _, part := range env.Attachments {
			p.addPartEnmime(part, false)
		}
		for _, part := range env.Inlines {
			p.addPartEnmime(part, true)
		}
	}
	p.restoreTextAttachmentsEnmime(src)
	return p.Parsed
}

func enmimeIsMultipart(part *enmime.Part) bool {
	return part.FirstChild != nil || strings.HasPrefix(part.ContentType, "multipart/")
}

func (p *enmimeParsed) readPartsEnmime(root *enmime.Part) {
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
		default:
			inline := part.Disposition == "inline" || (part.Disposition == "" && part.ContentID != "")
			p.addPartEnmime(part, inline)
		}
	}
	p.Text = cleanBody(strings.Join(texts, "\n--\n"))
	p.HTML = cleanBody(strings.Join(htmls, "\n"))
}

func partFilenameEnmime(part *enmime.Part) string {
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

func (p *enmimeParsed) addPartEnmime(part *enmime.Part, inline bool) {
	if len(p.Attachments) >= maxAttachments {
		return
	}
	ct := strings.ToLower(part.ContentType)
	if ct == "" {
		ct = "application/octet-stream"
	}
	name := partFilenameEnmime(part)
	if name == "" && ct == "message/rfc822" {
		name = cleanFilename(innerSubject(part.Content), "")
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
		ContentID:   cleanText(strings.Trim(part.ContentID, "<>")),
		Inline:      inline,
		Data:        part.Content,
	})
	p.partIDs = append(p.partIDs, part.PartID)
}

func (p *enmimeParsed) restoreTextAttachmentsEnmime(src []byte) {
	need := false
	for _, a := range p.Attachments {
		need = need || strings.HasPrefix(a.ContentType, "text/")
	}
	if !need {
		return
	}
	root, err := enmimeRawParser.ReadParts(bytes.NewReader(src))
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
		rp := byID[p.partIDs[i]]
		if rp == nil {
			continue
		}
		if data, ok := transferDecodeEnmime(rp.Header.Get("Content-Transfer-Encoding"), rp.Content); ok {
			a.Data = data
		}
	}
}

func transferDecodeEnmime(cte string, body []byte) ([]byte, bool) {
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

func addressListEnmime(env *enmime.Envelope, header string) []Address {
	list, err := env.AddressList(header)
	if err != nil || len(list) == 0 {
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
