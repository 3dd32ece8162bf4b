package message

import (
	"bytes"
	"mime"
	"strconv"
	"strings"
)

// This file reads a message's MIME structure (RFC 2045, RFC 2046) straight from
// its bytes, which are always wholly in memory: header blocks and part bodies are
// slices of the message, multipart bodies are split with bytes.Index on the
// boundary, and a leaf's transfer encoding is undone in one pass (transfer.go).
// Leniency is the rule (docs/inbox.md): what a strict reader would reject is read
// as well as it can be.

// Limits on the MIME tree of one message, so that a hostile message costs memory
// in proportion to what it carries rather than to its number of parts.
const (
	maxParts     = 10000 // parts read per message; later ones are ignored
	maxPartDepth = 100   // multipart nesting; deeper multiparts are not opened
)

// headerField is one header field as read: its name as sent (less a stray space
// before the colon) and its unfolded value.
type headerField struct {
	name, value string
}

// mimeHeader is a header block, its fields in order.
type mimeHeader []headerField

// get returns the first value of the named field. Names compare without regard to
// case (RFC 5322 section 1.2.2); a name sent with a space in it matches nothing.
func (h mimeHeader) get(name string) string {
	for _, f := range h {
		if len(f.name) == len(name) && strings.EqualFold(f.name, name) {
			return f.value
		}
	}
	return ""
}

// readHeader reads the header block at the start of b (RFC 5322 section 2.2) and
// returns its fields and the offset of the body, after the blank line that ends
// the block (len(b) when there is none). It is as lenient as mail requires:
//
//   - a line that starts with white space continues the previous field (folding,
//     section 2.2.3), and so does a line without a colon (a fold that lost its
//     indentation), kept as it is;
//   - a line that starts with a colon, or whose field name has characters other
//     than printable ASCII (section 2.2), is dropped; a space before the colon is
//     dropped;
//   - lines end in CRLF or in LF alone.
//
// ok is false when the block's first line is folded or has no colon: b then does
// not start with a header block at all.
func readHeader(b []byte) (h mimeHeader, bodyOff int, ok bool) {
	// One string holds the block; fields on one line are slices of it.
	end := headerEnd(b)
	block := string(b[:end])
	h = make(mimeHeader, 0, strings.Count(block, "\n")+1)
	var (
		open   bool   // a field has been started
		name   string // its name
		value  string // its value, while it has no folded lines
		folded []byte // its value with folded lines, when it has some
	)
	flush := func() {
		if !open {
			return
		}
		if folded != nil {
			value = strings.TrimLeft(string(bytes.TrimRight(folded, " \t")), " \t")
		}
		h = append(h, headerField{name: name, value: value})
		open, folded = false, nil
	}
	fold := func(line string) {
		if folded == nil {
			folded = append(make([]byte, 0, len(value)+len(line)+1), value...)
		}
		folded = append(append(folded, ' '), line...)
	}
	for pos := 0; pos < len(block); {
		line := block[pos:]
		if i := strings.IndexByte(line, '\n'); i >= 0 {
			line = line[:i]
			pos += i + 1
			if n := len(line); n > 0 && line[n-1] == '\r' {
				line = line[:n-1]
			}
		} else {
			pos = len(block)
		}
		colon := strings.IndexByte(line, ':')
		switch {
		case line[0] == ' ' || line[0] == '\t' || line[0] == '\r':
			if !open {
				return nil, 0, false
			}
			fold(strings.Trim(line, " \t\r\n"))
		case colon == 0:
			// A line without a field name.
		case colon > 0:
			n := line[:colon]
			if n[len(n)-1] == ' ' {
				n = n[:len(n)-1]
			}
			if !validFieldName(n) {
				continue
			}
			flush()
			open, name = true, n
			value = strings.TrimLeft(strings.TrimRight(line[colon+1:], " \t\r\n"), " \t")
		default:
			if !open {
				return nil, 0, false
			}
			fold(line)
		}
	}
	flush()
	return h, bodyStart(b), true
}

// validFieldName reports whether a field name has only printable ASCII other than
// the colon (RFC 5322 section 2.2), or spaces, which are kept and make the name
// match no known field.
func validFieldName(name string) bool {
	for i := 0; i < len(name); i++ {
		if c := name[i]; (c < '!' || c > '~') && c != ' ' {
			return false
		}
	}
	return true
}

// compareFieldNames orders field names by their canonical form, the form in
// which repeated fields are grouped: each word capitalised and the rest in lower
// case (as net/textproto writes them), or the name as sent when it has a space
// in it. It returns 0 for names of the same field.
func compareFieldNames(a, b string) int {
	ca, cb := strings.IndexByte(a, ' ') < 0, strings.IndexByte(b, ' ') < 0
	for i := 0; i < len(a) && i < len(b); i++ {
		x, y := canonicalByte(a, i, ca), canonicalByte(b, i, cb)
		if x != y {
			return int(x) - int(y)
		}
	}
	return len(a) - len(b)
}

// canonicalByte is the byte at i of the canonical form of a field name.
func canonicalByte(name string, i int, canonical bool) byte {
	c := name[i]
	if !canonical {
		return c
	}
	upper := i == 0 || name[i-1] == '-'
	switch {
	case upper && 'a' <= c && c <= 'z':
		return c - 'a' + 'A'
	case !upper && 'A' <= c && c <= 'Z':
		return c - 'A' + 'a'
	}
	return c
}

// lowerFieldName is a field name in lower case, without an allocation for the
// names most messages carry.
func lowerFieldName(name string) string {
	if l, ok := commonFieldNames[name]; ok {
		return l
	}
	return strings.ToLower(name)
}

var commonFieldNames = func() map[string]string {
	m := map[string]string{}
	for _, n := range []string{"Authentication-Results", "Cc", "Content-Disposition", "Content-ID", "Content-Id",
		"Content-Transfer-Encoding", "Content-Type", "Date", "Delivered-To", "DKIM-Signature", "Dkim-Signature",
		"From", "In-Reply-To", "List-Id", "List-ID", "List-Unsubscribe", "List-Unsubscribe-Post", "Message-ID",
		"Message-Id", "MIME-Version", "Mime-Version", "Received", "Received-SPF", "References", "Reply-To",
		"Return-Path", "Sender", "Subject", "Thread-Index", "Thread-Topic", "To", "User-Agent", "X-Mailer",
		"X-Originating-IP", "X-Priority"} {
		m[n] = strings.ToLower(n)
	}
	return m
}()

// mimePart is one node of a message's MIME tree, its fields read from its header.
type mimePart struct {
	header      mimeHeader
	contentType string            // media type, lower case; "" when absent (or unreadable in a part)
	params      map[string]string // Content-Type parameters
	charset     string            // the charset parameter as sent; "" when none was declared
	disposition string            // Content-Disposition type, lower case
	fileName    string            // the disposition's filename, else Content-Type's name or file
	contentID   string            // Content-ID as sent, without its angle brackets
	encoding    string            // Content-Transfer-Encoding, lower case
	body        []byte            // the body as sent, a slice of the message
	multipart   bool              // read as a multipart: children holds its parts
	children    []*mimePart
}

// readMIME reads the MIME tree of a message. ok is false when the message cannot
// be read as MIME: its header block does not start with a field, its Content-Type
// cannot be read, or it is a multipart without a boundary parameter.
func readMIME(msg []byte) (root *mimePart, ok bool) {
	h, off, ok := readHeader(msg)
	if !ok {
		return nil, false
	}
	root = &mimePart{header: h, body: msg[off:]}
	if !root.readFields(true) {
		return nil, false
	}
	if strings.HasPrefix(root.contentType, "multipart/") {
		boundary := root.params["boundary"]
		if boundary == "" {
			return nil, false
		}
		parts := maxParts
		root.readChildren(boundary, 1, &parts)
	}
	return root, true
}

// readFields reads the MIME fields of the part's header. A part without a
// Content-Type is text/plain (RFC 2045 section 5.2); so is one whose Content-Type
// cannot be read, as that section recommends, except at the top of a message,
// where readFields then reports false.
func (p *mimePart) readFields(top bool) bool {
	if ct := p.header.get("Content-Type"); ct != "" {
		mt, params, ok := parseMediaType(ct)
		switch {
		case ok:
			p.contentType, p.params = mt, params
		case top:
			return false
		}
	} else if top {
		p.contentType = "text/plain"
	}
	p.charset = p.params["charset"]
	if d, dparams, ok := parseMediaType(p.header.get("Content-Disposition")); ok {
		p.disposition = d
		p.fileName = decodeWords(dparams["filename"])
	}
	if p.fileName == "" {
		p.fileName = decodeWords(p.params["name"])
	}
	if p.fileName == "" {
		p.fileName = decodeWords(p.params["file"])
	}
	p.contentID = strings.TrimRight(strings.TrimLeft(p.header.get("Content-ID"), "<"), ">")
	p.encoding = strings.ToLower(p.header.get("Content-Transfer-Encoding"))
	return true
}

// readChildren splits the part's body into its parts and reads each, depth first.
// A part with a boundary parameter is a multipart whatever its type, unless it is
// text/plain or text/html; parts stops the reading when no more may be read.
func (p *mimePart) readChildren(boundary string, depth int, parts *int) {
	p.multipart = true
	for _, body := range splitMultipart(p.body, boundary) {
		if *parts <= 0 {
			return
		}
		*parts--
		c := &mimePart{}
		if h, off, ok := readHeader(body); ok {
			c.header, c.body = h, body[off:]
		} else {
			// A part that does not start with a field or a blank line has no
			// header: all of it is body.
			c.body = body
		}
		c.readFields(false)
		p.children = append(p.children, c)
		if b := c.params["boundary"]; b != "" && c.contentType != "text/plain" && c.contentType != "text/html" && depth < maxPartDepth {
			c.readChildren(b, depth+1, parts)
		}
	}
}

// leaves calls f for every part that is not a multipart, in message order. A
// part typed multipart/* that could not be opened (no boundary parameter) carries
// nothing readable and is skipped.
func (p *mimePart) leaves(f func(*mimePart)) {
	for _, c := range p.children {
		switch {
		case len(c.children) > 0:
			c.leaves(f)
		case !strings.HasPrefix(c.contentType, "multipart/"):
			f(c)
		}
	}
}

// splitMultipart returns the bodies of the parts of a multipart body (RFC 2046
// section 5.1.1): what lies between a delimiter line ("--" boundary, then white
// space or the line's end) and the line break before the next delimiter line or
// the close-delimiter line ("--" boundary "--"). The preamble and epilogue are
// dropped. A delimiter counts only at the start of a line. When the
// close-delimiter is missing, the last part runs to the end of body.
//
// Three details keep the parts equal to those the parser Catchbox used before
// found: a CR two bytes before a delimiter's LF ends the part there ("one\r\r\n"
// then a delimiter is the part "one"); a delimiter is seen only with two bytes
// after the boundary (so a message cut off right after "--boundary" ends in
// body); and the close-delimiter needs no line break after it.
func splitMultipart(body []byte, boundary string) [][]byte {
	delim := make([]byte, 0, len(boundary)+2)
	delim = append(append(delim, "--"...), boundary...)
	start := -1
preamble:
	for pos := 0; pos < len(body); {
		line := lineAt(body, pos)
		pos += len(line)
		switch delimiterLine(line, delim) {
		case closeDelimiter:
			return nil
		case partDelimiter:
			if line[len(line)-1] != '\n' {
				return nil // a delimiter at the very end starts no part
			}
			start = pos
			break preamble
		}
	}
	if start < 0 {
		return nil
	}
	var parts [][]byte
	for {
		end, next, kind := nextDelimiter(body, start, delim)
		parts = append(parts, body[start:end])
		if kind != partDelimiter {
			return parts
		}
		start = next
	}
}

// Kinds of boundary line.
const (
	noDelimiter = iota
	partDelimiter
	closeDelimiter
)

// delimiterLine tells whether line (with its line break) is a delimiter or a
// close-delimiter of delim ("--" boundary). Anything may follow the white space
// after a delimiter, as some mailers add a comment there.
func delimiterLine(line, delim []byte) int {
	if !bytes.HasPrefix(line, delim) {
		return noDelimiter
	}
	rest := line[len(delim):]
	if len(rest) >= 2 && rest[0] == '-' && rest[1] == '-' {
		return closeDelimiter
	}
	if len(rest) > 0 && isBoundarySpace(rest[0]) {
		return partDelimiter
	}
	return noDelimiter
}

// isBoundarySpace reports whether c may follow a boundary in a delimiter line:
// white space, including the line break, and the Latin-1 next-line and no-break
// space bytes.
func isBoundarySpace(c byte) bool {
	switch c {
	case ' ', '\t', '\n', '\v', '\f', '\r', 0x85, 0xA0:
		return true
	}
	return false
}

// nextDelimiter finds the first delimiter line at or after start: end is where
// the part before it ends (before the line break that precedes the delimiter),
// next where the following part starts (after the delimiter line), and kind what
// was found; noDelimiter means the part runs to the end of body.
func nextDelimiter(body []byte, start int, delim []byte) (end, next, kind int) {
	for from := start; from < len(body); {
		i := bytes.Index(body[from:], delim)
		if i < 0 {
			break
		}
		k := from + i
		from = k + 1
		if k > start && body[k-1] != '\n' {
			continue // not at the start of a line
		}
		line := lineAt(body, k)
		after := k + len(delim)
		var e int
		switch {
		case k == start:
			e = k
		case k-2 >= start && body[k-2] == '\r':
			e = k - 2
		default:
			e = k - 1
		}
		switch delimiterLine(line, delim) {
		case closeDelimiter:
			return e, len(body), closeDelimiter
		case partDelimiter:
			if k-3 >= start && body[k-3] == '\r' && body[k-2] != '\n' && after+1 <= len(body) {
				e = k - 3
			} else if after+2 > len(body) {
				continue
			}
			if line[len(line)-1] != '\n' {
				// A delimiter line cut off by the end of the message ends the
				// part and starts no other.
				return e, len(body), closeDelimiter
			}
			return e, k + len(line), partDelimiter
		}
	}
	return len(body), len(body), noDelimiter
}

// lineAt returns the line of body that starts at k, with its line break.
func lineAt(body []byte, k int) []byte {
	if i := bytes.IndexByte(body[k:], '\n'); i >= 0 {
		return body[k : k+i+1]
	}
	return body[k:]
}

// parseMediaType reads a Content-Type or Content-Disposition value (RFC 2045
// section 5.1, RFC 2183): the type in lower case and its parameters, RFC 2231
// continuations and charset-encoded values included. An empty value is no type
// and ok. Well-formed values are read by mime.ParseMediaType; others by
// parseBrokenMediaType. ok is false when no type can be made out.
func parseMediaType(v string) (mtype string, params map[string]string, ok bool) {
	if v == "" {
		return "", nil, true
	}
	if mt, p, err := mime.ParseMediaType(v); err == nil {
		return mt, p, true
	}
	return parseBrokenMediaType(v)
}

// parseBrokenMediaType reads a Content-Type or Content-Disposition value that
// mime.ParseMediaType rejects, repairing what mailers get wrong:
//
//   - a parameter whose value is not a token is taken up to the next ';' outside
//     quotes (boundary=----=_Part_1, name=my file.pdf, raw 8-bit names);
//   - a quoted value runs to the last quote of its parameter, so that inner
//     quotes are kept; a quote that is never closed runs to the end;
//   - a repeated parameter keeps its first value; a parameter without a value
//     or without a valid name is dropped;
//   - a missing ';' between the type and the first parameter is assumed
//     ("text/plain charset=utf-8"); a value that starts with a parameter has
//     the type application/octet-stream;
//   - a type without a subtype gets the usual one (text/ is text/plain,
//     multipart/ multipart/mixed, anything else application/octet-stream), and
//     a type with more than one slash keeps the first two parts;
//   - HTML tags at the end of the value are dropped (a "<br>" that webmail
//     software appended), and so is anything after a quoted value's last quote.
//
// ok is false when the type still is not a token or token/token (RFC 2045
// section 5.1).
func parseBrokenMediaType(v string) (mtype string, params map[string]string, ok bool) {
	if strings.ContainsAny(v, "\r\n") {
		v = strings.NewReplacer("\r", "", "\n", " ").Replace(v)
	}
	for v = strings.TrimSpace(v); strings.HasSuffix(v, ">"); v = strings.TrimSpace(v) {
		i := strings.LastIndexByte(v, '<')
		if i < 0 {
			break
		}
		v = v[:i]
	}
	segs := splitUnquoted(v, ';')
	t, rest := strings.TrimSpace(segs[0]), segs[1:]
	if eq := strings.IndexByte(t, '='); eq >= 0 {
		if sp := strings.IndexAny(t, " \t"); sp > 0 && sp < eq {
			rest = append([]string{t[sp:]}, rest...)
			t = t[:sp]
		} else {
			rest = append([]string{t}, rest...)
			t = "application/octet-stream"
		}
	}
	t = strings.ToLower(t)
	if strings.HasSuffix(t, "/") {
		switch t {
		case "text/":
			t = "text/plain"
		case "multipart/":
			t = "multipart/mixed"
		default:
			t = "application/octet-stream"
		}
	}
	if i := strings.IndexByte(t, '/'); i >= 0 {
		if j := strings.IndexByte(t[i+1:], '/'); j >= 0 {
			t = t[:i+1+j]
		}
	}
	if t != "" {
		major, minor, slash := strings.Cut(t, "/")
		if !isToken(major) || slash && !isToken(minor) {
			return "", nil, false
		}
	}
	params = map[string]string{}
	var continued map[string]map[string]string // RFC 2231 pieces by base name
	for _, seg := range rest {
		name, value, found := strings.Cut(seg, "=")
		name = strings.ToLower(strings.TrimSpace(name))
		if !found || !isToken(name) {
			continue
		}
		value = strings.TrimSpace(value)
		if strings.HasPrefix(value, `"`) {
			value = value[1:]
			if j := strings.LastIndexByte(value, '"'); j >= 0 {
				value = value[:j]
			}
			value = unescapeQuoted(value)
		}
		m := params
		if base, _, ok := strings.Cut(name, "*"); ok {
			if continued == nil {
				continued = map[string]map[string]string{}
			}
			if m = continued[base]; m == nil {
				m = map[string]string{}
				continued[base] = m
			}
		}
		if _, dup := m[name]; !dup {
			m[name] = value
		}
	}
	joinContinuations(params, continued)
	return t, params, true
}

// splitUnquoted splits s at every sep outside double quotes.
func splitUnquoted(s string, sep byte) []string {
	var out []string
	quoted, escaped, start := false, false, 0
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case escaped:
			escaped = false
		case quoted && c == '\\':
			escaped = true
		case c == '"':
			quoted = !quoted
		case c == sep && !quoted:
			out = append(out, s[start:i])
			start = i + 1
		}
	}
	return append(out, s[start:])
}

// unescapeQuoted undoes the backslash escapes of a quoted string as
// mime.ParseMediaType does: only before a tspecial, since a backslash before
// anything else is more likely a Windows path than an escape.
func unescapeQuoted(s string) string {
	if strings.IndexByte(s, '\\') < 0 {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+1 < len(s) && isTSpecial(s[i+1]) {
			i++
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// joinContinuations adds to params the parameters sent in RFC 2231 form: a value
// with a charset (name*=utf-8'en'%E2%82%AC) or split into numbered pieces (name*0,
// name*1*...), as mime.ParseMediaType reads them: a value in a charset other
// than UTF-8 or US-ASCII is dropped.
func joinContinuations(params map[string]string, continued map[string]map[string]string) {
	for base, pieces := range continued {
		if v, ok := pieces[base+"*"]; ok {
			if d, ok := decode2231(v); ok {
				params[base] = d
			}
			continue
		}
		var b strings.Builder
		valid := false
		for n := 0; ; n++ {
			key := base + "*" + strconv.Itoa(n)
			if v, ok := pieces[key]; ok {
				valid = true
				b.WriteString(v)
				continue
			}
			v, ok := pieces[key+"*"]
			if !ok {
				break
			}
			valid = true
			if n == 0 {
				if d, ok := decode2231(v); ok {
					b.WriteString(d)
				}
			} else {
				d, _ := percentUnescape(v)
				b.WriteString(d)
			}
		}
		if valid {
			params[base] = b.String()
		}
	}
}

// decode2231 decodes an RFC 2231 section 4 value: charset'language'%XX...
func decode2231(v string) (string, bool) {
	charset, v, ok := strings.Cut(v, "'")
	if !ok {
		return "", false
	}
	if _, v, ok = strings.Cut(v, "'"); !ok {
		return "", false
	}
	switch strings.ToLower(charset) {
	case "utf-8", "us-ascii":
		return percentUnescape(v)
	}
	return "", false
}

func percentUnescape(s string) (string, bool) {
	if strings.IndexByte(s, '%') < 0 {
		return s, true
	}
	b := make([]byte, 0, len(s))
	for i := 0; i < len(s); i++ {
		if s[i] != '%' {
			b = append(b, s[i])
			continue
		}
		if i+2 >= len(s) || unhex(s[i+1]) < 0 || unhex(s[i+2]) < 0 {
			return "", false
		}
		b = append(b, byte(unhex(s[i+1])<<4|unhex(s[i+2])))
		i += 2
	}
	return string(b), true
}

func unhex(c byte) int {
	switch {
	case '0' <= c && c <= '9':
		return int(c - '0')
	case 'a' <= c && c <= 'f':
		return int(c - 'a' + 10)
	case 'A' <= c && c <= 'F':
		return int(c - 'A' + 10)
	}
	return -1
}

// isToken reports whether s is an RFC 2045 token: printable ASCII other than
// space and tspecials.
func isToken(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; c <= ' ' || c >= 0x7f || isTSpecial(c) {
			return false
		}
	}
	return true
}

func isTSpecial(c byte) bool { return strings.IndexByte(`()<>@,;:\"/[]?=`, c) >= 0 }
