package message

import (
	"html"
	"strings"
	"unicode"
	"unicode/utf8"
)

// maxScan bounds how much of one body the link and code finders read: a code is
// near the top of the message it is in, and a hostile message must not make
// ingest slow. Links past it are not listed.
const maxScan = 2 << 20

// htmlView is what the link and code finders read from an HTML body: the text a
// reader sees, one line per block, and the links in the order a reader meets
// them.
type htmlView struct {
	text  string // visible text; block elements end lines ("" when only anchors were read)
	links []Link // anchors, and bare URLs outside anchors, in document order
}

// kind is what an element means to the reader of visible text.
type kind uint8

const (
	kindOther  kind = iota
	kindHidden      // its content is never seen: head, template, object
	kindRaw         // its content is raw text, never seen: script, style, title (HTML Standard 13.1.2)
	kindBlock       // starts a new line
	kindCell        // a table cell: apart from its neighbours, on the same line
)

// kindOf classifies an element by its lower-case name. A table row is a block
// and its cells are not: a row reads as one line, as it looks, so a label and the
// value in the next cell are side by side, and a number in a row of numbers is
// not set apart.
func kindOf(name string) kind {
	switch name {
	case "head", "template", "object":
		return kindHidden
	case "script", "style", "title", "textarea", "xmp", "iframe", "noembed", "noframes", "noscript":
		return kindRaw
	case "address", "article", "aside", "blockquote", "br", "center", "dd", "div", "dl", "dt", "footer",
		"form", "h1", "h2", "h3", "h4", "h5", "h6", "header", "hr", "li", "main", "nav", "ol", "p", "pre",
		"section", "table", "tbody", "tfoot", "thead", "tr", "ul", "body", "button":
		return kindBlock
	case "td", "th":
		return kindCell
	}
	return kindOther
}

// htmlReader builds an htmlView from an HTML body.
//
// It reads markup the way the HTML Standard's tokenizer does (section 13.2.5)
// for what matters here, and no further: comments, including Outlook's
// conditional ones, and doctypes are skipped; the content of raw-text elements
// (script, style, title) is skipped up to their end tag; attribute values may
// be quoted or not, and a '>' inside quotes does not end a tag; character
// references are decoded with html.UnescapeString; a '<' that starts no markup
// is text. It does not build a tree: a reader's text only needs where blocks
// start and end. It reads a mail, text and links included, in about the time
// golang.org/x/net/html's general tokenizer takes to split it into tokens
// (docs/benchmarks.md).
type htmlReader struct {
	src     string
	all     bool // read all the visible text, not only the anchors'
	urls    bool // and list the URLs written out in it
	text    strings.Builder
	space   bool // text ends in white space (or is empty)
	hidden  int  // depth inside hidden elements
	links   linkList
	anchor  *Link  // the open anchor, if any
	anchorT []byte // its text so far
	alt     string // the alt text of the first image inside it
	// targets, when set, also collects every URL the body links to or
	// loads, in document order (Targets); ingest leaves it nil.
	targets *targetList
}

// readHTML reads an HTML body into its anchors and, with all, its visible
// text, and with urls too the URLs written out in that text. Without all, only
// the anchors' own text is read, which skips most of the work.
func readHTML(src string, all, urls bool) htmlView {
	if len(src) > maxScan {
		src = src[:maxScan]
	}
	r := &htmlReader{src: src, all: all || urls, urls: urls, space: true}
	if all {
		r.text.Grow(len(src) / 2)
	}
	return r.read()
}

// read reads the whole body.
func (r *htmlReader) read() htmlView {
	src := r.src
	for i := 0; i < len(src); {
		lt := strings.IndexByte(src[i:], '<')
		if lt < 0 {
			r.readText(src[i:])
			break
		}
		if lt > 0 {
			r.readText(src[i : i+lt])
		}
		i = r.markup(i + lt)
	}
	r.closeAnchor()
	return htmlView{text: r.text.String(), links: r.links.links}
}

// markup reads the markup starting with the '<' at src[i] and returns where
// the text after it starts.
func (r *htmlReader) markup(i int) int {
	rest := r.src[i:]
	switch {
	case strings.HasPrefix(rest, "<!--"):
		if strings.HasPrefix(rest, "<!-->") {
			return i + 5
		}
		if strings.HasPrefix(rest, "<!--->") {
			return i + 6
		}
		return afterIndex(r.src, i+4, "-->")
	case strings.HasPrefix(rest, "<!"), strings.HasPrefix(rest, "<?"):
		return afterIndex(r.src, i+2, ">") // doctype, CDATA, processing instruction
	case strings.HasPrefix(rest, "</") && len(rest) > 2 && isASCIILetter(rest[2]):
		name, j := r.tagName(i + 2)
		r.endTag(name)
		return afterIndex(r.src, j, ">")
	case strings.HasPrefix(rest, "</"):
		return afterIndex(r.src, i+2, ">")
	case len(rest) > 1 && isASCIILetter(rest[1]):
		return r.startTag(i + 1)
	}
	r.readText("<")
	return i + 1
}

// startTag reads the start tag whose name starts at src[i].
func (r *htmlReader) startTag(i int) int {
	name, j := r.tagName(i)
	if r.targets != nil {
		return r.targetTag(name, j)
	}
	if name != "a" && name != "img" {
		return r.otherTag(name, r.tagEnd(j))
	}
	var href, alt string
	var hasHref bool
	for {
		for j < len(r.src) && (isHTMLSpace(r.src[j]) || r.src[j] == '/') {
			j++
		}
		if j >= len(r.src) || r.src[j] == '>' {
			j++
			break
		}
		key, value, next := r.attribute(j)
		j = next
		switch {
		case name == "a" && key == "href" && !hasHref:
			href, hasHref = value, true
		case name == "img" && key == "alt" && alt == "":
			alt = value
		}
	}
	if name == "img" {
		if r.anchor != nil && r.alt == "" {
			r.alt = collapseSpace(unescape(alt))
		}
		return j
	}
	r.closeAnchor() // anchors do not nest
	if u, ok := cleanHref(unescape(href)); ok && hasHref {
		r.anchor = &Link{Href: u}
	}
	return j
}

// tagEnd returns the index after the '>' that ends the tag whose attributes
// start at src[i]: a '>' inside a quoted attribute value does not end it.
func (r *htmlReader) tagEnd(i int) int {
	s := r.src
	for i < len(s) {
		for i < len(s) && s[i] != '>' && s[i] != '"' && s[i] != '\'' {
			i++
		}
		if i >= len(s) {
			return len(s)
		}
		if s[i] == '>' {
			return i + 1
		}
		if v := strings.TrimRight(s[:i], " \t\n\r\f"); strings.HasSuffix(v, "=") {
			end := strings.IndexByte(s[i+1:], s[i]) // a quoted value
			if end < 0 {
				return len(s)
			}
			i += end + 2
			continue
		}
		i++
	}
	return len(s)
}

// otherTag acts on the start tag of name, other than a and img, that ends
// before src[j].
func (r *htmlReader) otherTag(name string, j int) int {
	if name == "body" {
		r.hidden = 0 // a head that was never closed ends here
	}
	switch kindOf(name) {
	case kindHidden:
		if !strings.HasSuffix(r.src[:min(j, len(r.src))], "/>") {
			r.hidden++
		}
	case kindRaw:
		if name == "style" && r.targets != nil {
			end, after := r.rawEnd(name, j)
			r.targets.addCSS(r.src[min(j, end):end])
			return after
		}
		return r.skipRaw(name, j)
	case kindBlock:
		r.newline()
	case kindCell:
		r.cell()
	}
	return j
}

// endTag acts on the end tag of name.
func (r *htmlReader) endTag(name string) {
	if name == "a" {
		r.closeAnchor()
		return
	}
	switch kindOf(name) {
	case kindHidden:
		if r.hidden > 0 {
			r.hidden--
		}
	case kindBlock:
		r.newline()
	case kindCell:
		r.cell()
	}
}

// tagName reads the tag name starting at src[i], lower-cased, and returns it
// with the index after it.
func (r *htmlReader) tagName(i int) (string, int) {
	j := i
	upper := false
	for j < len(r.src) && !isHTMLSpace(r.src[j]) && r.src[j] != '/' && r.src[j] != '>' {
		upper = upper || r.src[j] >= 'A' && r.src[j] <= 'Z'
		j++
	}
	if upper {
		return strings.ToLower(r.src[i:j]), j
	}
	return r.src[i:j], j
}

// attribute reads the attribute starting at src[i]: its lower-case name, its
// value (not yet unescaped) and the index after it.
func (r *htmlReader) attribute(i int) (key, value string, next int) {
	s := r.src
	j := i + 1 // an attribute name may start with '='
	for j < len(s) && !isHTMLSpace(s[j]) && s[j] != '/' && s[j] != '>' && s[j] != '=' {
		j++
	}
	key = strings.ToLower(s[i:j])
	k := j
	for k < len(s) && isHTMLSpace(s[k]) {
		k++
	}
	if k >= len(s) || s[k] != '=' {
		return key, "", j
	}
	k++
	for k < len(s) && isHTMLSpace(s[k]) {
		k++
	}
	if k < len(s) && (s[k] == '"' || s[k] == '\'') {
		end := strings.IndexByte(s[k+1:], s[k])
		if end < 0 {
			return key, s[k+1:], len(s)
		}
		return key, s[k+1 : k+1+end], k + end + 2
	}
	start := k
	for k < len(s) && !isHTMLSpace(s[k]) && s[k] != '>' {
		k++
	}
	return key, s[start:k], k
}

// skipRaw skips the content of the raw-text element name, which starts at
// src[i], and its end tag.
func (r *htmlReader) skipRaw(name string, i int) int {
	_, after := r.rawEnd(name, i)
	return after
}

// rawEnd finds the end of the content of the raw-text element name, which
// starts at src[i]: where its end tag starts, and the index after that tag.
func (r *htmlReader) rawEnd(name string, i int) (end, after int) {
	for j := i; j < len(r.src); {
		k := strings.Index(r.src[j:], "</")
		if k < 0 {
			break
		}
		start := j + k
		j = start + 2
		if e := j + len(name); e <= len(r.src) && strings.EqualFold(r.src[j:e], name) &&
			(e == len(r.src) || isHTMLSpace(r.src[e]) || r.src[e] == '/' || r.src[e] == '>') {
			return start, afterIndex(r.src, e, ">")
		}
	}
	return len(r.src), len(r.src)
}

// readText adds text, its character references decoded, to the view.
func (r *htmlReader) readText(raw string) {
	if r.hidden > 0 || !r.all && r.anchor == nil {
		return
	}
	raw = unescape(raw)
	if r.anchor != nil {
		r.anchorT = append(r.anchorT, raw...)
	}
	if !r.all {
		return
	}
	start := r.text.Len()
	r.space = appendCollapsed(&r.text, raw, r.space)
	if r.urls && r.anchor == nil && strings.Contains(raw, "://") {
		for _, u := range bareURLs(r.text.String()[start:]) {
			r.links.add(Link{Href: u})
			if r.targets != nil {
				r.targets.add(u, false)
			}
		}
	}
}

// closeAnchor lists the open anchor with its text, or its image's alt text.
func (r *htmlReader) closeAnchor() {
	if r.anchor == nil {
		return
	}
	r.anchor.Text = collapseSpace(string(r.anchorT))
	if r.anchor.Text == "" {
		r.anchor.Text = r.alt
	}
	r.links.add(*r.anchor)
	r.anchor, r.anchorT, r.alt = nil, r.anchorT[:0], ""
}

// newline ends the line of text, once.
func (r *htmlReader) newline() {
	if r.all && r.text.Len() > 0 && !strings.HasSuffix(r.text.String(), "\n") {
		r.text.WriteByte('\n')
	}
	r.space = true
}

// cell keeps the text of two table cells apart.
func (r *htmlReader) cell() {
	if r.all && !r.space {
		r.text.WriteByte(' ')
		r.space = true
	}
}

// unescape decodes the character references of s (HTML Standard 13.2.5.72).
func unescape(s string) string {
	if strings.IndexByte(s, '&') < 0 {
		return s
	}
	return html.UnescapeString(s)
}

// afterIndex returns the index just after the first sep in s at or after i, or
// len(s) when there is none.
func afterIndex(s string, i int, sep string) int {
	if i >= len(s) {
		return len(s)
	}
	k := strings.Index(s[i:], sep)
	if k < 0 {
		return len(s)
	}
	return i + k + len(sep)
}

// isHTMLSpace reports ASCII white space as HTML defines it.
func isHTMLSpace(c byte) bool {
	return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f'
}

func isASCIILetter(c byte) bool { return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' }

// appendCollapsed writes raw to b with every run of white space made one space,
// as a renderer shows it (HTML Standard, white-space: normal); space says whether
// b already ends in white space, and the result whether it does now. Zero-width
// characters that mailers put between letters are dropped. Runs that need no
// change are written at once.
func appendCollapsed(b *strings.Builder, raw string, space bool) bool {
	from := 0 // start of the run not yet written
	for i := 0; i < len(raw); {
		switch textClass[raw[i]] {
		case textPlain:
			for i++; i < len(raw) && textClass[raw[i]] == textPlain; i++ {
			}
			space = false
		case textSpace:
			if !space { // one space between words stays as it is
				space = true
				i++
				continue
			}
			b.WriteString(raw[from:i])
			i++
			from = i
		case textBreak:
			b.WriteString(raw[from:i])
			if !space {
				b.WriteByte(' ')
				space = true
			}
			i++
			from = i
		default:
			r, n := utf8.DecodeRuneInString(raw[i:])
			if r == '\u00a0' || unicode.IsSpace(r) || isInvisible(r) {
				b.WriteString(raw[from:i])
				if !space && !isInvisible(r) {
					b.WriteByte(' ')
					space = true
				}
				from = i + n
			} else {
				space = false
			}
			i += n
		}
	}
	b.WriteString(raw[from:])
	return space
}

// Classes of text bytes for appendCollapsed.
const (
	textPlain = iota // written as it is
	textSpace        // ' ': kept after a word, dropped after white space
	textBreak        // the other ASCII white space: one space at most
	textOther        // the first byte of a character outside ASCII
)

var textClass = func() (t [256]uint8) {
	for c := range t {
		switch {
		case c == ' ':
			t[c] = textSpace
		case c == '\t' || c == '\n' || c == '\r' || c == '\f':
			t[c] = textBreak
		case c >= utf8.RuneSelf:
			t[c] = textOther
		}
	}
	return t
}()

// isInvisible reports characters that render as nothing: zero-width spaces and
// joiners, the byte-order mark, and the soft hyphen and combining grapheme
// joiner that newsletters pad their preview text with.
func isInvisible(r rune) bool {
	switch r {
	case '\u200b', '\u200c', '\u200d', '\u2060', '\ufeff', '\u00ad', '\u034f':
		return true
	}
	return false
}

// collapseSpace trims s and makes every run of white space in it one space.
func collapseSpace(s string) string {
	var b strings.Builder
	appendCollapsed(&b, s, true)
	return strings.TrimSuffix(b.String(), " ")
}
