package htmlcheck

import (
	"bytes"
	"strings"
)

// cssScan reads one style sheet (a <style> element's text) or one style
// attribute's declarations and reports the features it uses. It is a
// tolerant reader, not a validator: like a browser it skips what it cannot
// read and goes on, so that broken CSS costs at most its own findings.
type cssScan struct {
	src   []byte // the CSS, with comments and <!-- --> blanked
	base  int    // offset of src in the HTML
	fixed bool   // a style attribute: every place is base, the element's
	hit   func(slug string, off int)
	alive func() bool // false once the check's time is up
	depth int         // of the blocks being read
}

// maxDepth is how deep blocks are read: deeper ones (no real style sheet
// nests so far) are skipped, so that a flood of { costs neither stack nor
// time.
const maxDepth = 16

// scanStyleSheet reads the text of a <style> element found at offset base.
func scanStyleSheet(css string, base int, hit func(string, int), alive func() bool) {
	c := &cssScan{base: base, hit: hit, alive: alive}
	c.src = c.blank(css)
	c.rules(0, len(c.src), false)
}

// scanStyleAttr reads a style attribute of the element at offset off.
func scanStyleAttr(css string, off int, hit func(string, int), alive func() bool) {
	c := &cssScan{base: off, fixed: true, hit: hit, alive: alive}
	c.src = c.blank(css)
	c.decls(0, len(c.src))
}

func (c *cssScan) at(i int) int {
	if c.fixed {
		return c.base
	}
	return c.base + i
}

// blank copies css with its comments, and the <!-- and --> that old mail
// wraps style sheets in, replaced by spaces (offsets stay those of the
// HTML); each comment is reported.
func (c *cssScan) blank(css string) []byte {
	b := []byte(css)
	for i := 0; i < len(b); {
		switch {
		case b[i] == '"' || b[i] == '\'':
			i = skipString(b, i, len(b))
		case b[i] == '/' && i+1 < len(b) && b[i+1] == '*':
			c.hit(slugCSSComments, c.at(i))
			end := bytes.Index(b[i+2:], []byte("*/"))
			stop := len(b)
			if end >= 0 {
				stop = i + 2 + end + 2
			}
			fill(b[i:stop])
			i = stop
		case b[i] == '<' && bytes.HasPrefix(b[i:], []byte("<!--")):
			fill(b[i : i+4])
			i += 4
		case b[i] == '-' && bytes.HasPrefix(b[i:], []byte("-->")):
			fill(b[i : i+3])
			i += 3
		default:
			i++
		}
	}
	return b
}

func fill(b []byte) {
	for i := range b {
		if b[i] != '\n' {
			b[i] = ' '
		}
	}
}

// rules reads a list of rules (a style sheet, an @media block) in
// src[from:to]. nested tells that it is inside a style rule (CSS nesting).
func (c *cssScan) rules(from, to int, nested bool) {
	if c.depth >= maxDepth {
		return
	}
	c.depth++
	defer func() { c.depth-- }()
	s := c.src
	for i := from; i < to; {
		if !c.alive() {
			return
		}
		i = skipSpace(s, i, to)
		if i >= to {
			return
		}
		switch s[i] {
		case '@':
			i = c.atRule(i, to)
		case '}', ';':
			i++
		default:
			k := findAny(s, i, to, "{;}")
			if k >= to {
				return
			}
			if s[k] != '{' {
				i = k + 1
				continue
			}
			if nested {
				c.hit(slugNesting, c.at(i))
			}
			c.selector(i, k)
			end := matchBrace(s, k, to)
			c.decls(k+1, end)
			i = end + 1
		}
	}
}

// atRule reads the at-rule at src[i] and returns where reading goes on.
func (c *cssScan) atRule(i, to int) int {
	s := c.src
	j := i + 1
	for j < to && isIdentByte(s[j]) {
		j++
	}
	name := stripVendor(strings.ToLower(string(s[i+1 : j])))
	k := findAny(s, j, to, "{;")
	if slug := atRules[name]; slug != "" {
		c.hit(slug, c.at(i))
	}
	if name == "media" {
		c.mediaFeatures(s[j:min(k, to)], c.at(i))
	}
	if k >= to || s[k] == ';' {
		return k + 1
	}
	end := matchBrace(s, k, to)
	switch name {
	case "font-face":
		// Its descriptors (src, font-weight) are not properties of the mail's
		// elements.
	case "keyframes":
		for p := k + 1; p < end; {
			p = skipSpace(s, p, end)
			q := findAny(s, p, end, "{;}")
			if q >= end || s[q] != '{' {
				p = q + 1
				continue
			}
			e := matchBrace(s, q, end)
			c.decls(q+1, e)
			p = e + 1
		}
	case "page", "font-feature-values", "counter-style", "property":
		c.decls(k+1, end)
	default: // media, supports, layer, container, document and the unknown
		c.rules(k+1, end, false)
	}
	return end + 1
}

// mediaFeatures reports the media features a media query names.
func (c *cssScan) mediaFeatures(prelude []byte, off int) {
	p := strings.ToLower(string(prelude))
	for {
		i := strings.IndexByte(p, '(')
		if i < 0 {
			return
		}
		p = strings.TrimLeft(p[i+1:], " \t\r\n")
		n := 0
		for n < len(p) && isIdentByte(p[n]) {
			n++
		}
		name := p[:n]
		for _, r := range mediaFeatureRules {
			if name == r.suffix || strings.HasSuffix(name, "-"+r.suffix) {
				c.hit(r.slug, off)
			}
		}
	}
}

// decls reads a declaration block in src[from:to]: declarations, and rules
// nested in it.
func (c *cssScan) decls(from, to int) {
	if c.depth >= maxDepth {
		return
	}
	c.depth++
	defer func() { c.depth-- }()
	s := c.src
	for i := from; i < to; {
		if !c.alive() {
			return
		}
		i = skipSpace(s, i, to)
		if i >= to {
			return
		}
		k := findAny(s, i, to, ";{}")
		if k < to && s[k] == '}' { // a stray brace: skip it
			i = k + 1
			continue
		}
		if k < to && s[k] == '{' {
			c.hit(slugNesting, c.at(i))
			if s[i] == '@' {
				i = c.atRule(i, to)
				continue
			}
			c.selector(i, k)
			end := matchBrace(s, k, to)
			c.decls(k+1, end)
			i = end + 1
			continue
		}
		c.declaration(i, min(k, to))
		i = k + 1
	}
}

// declaration reads "property: value" in src[from:to].
func (c *cssScan) declaration(from, to int) {
	d := c.src[from:to]
	colon := bytes.IndexByte(d, ':')
	if colon < 0 {
		return
	}
	prop := strings.ToLower(strings.TrimSpace(string(d[:colon])))
	if prop == "" {
		return
	}
	off := c.at(from)
	value := strings.ToLower(string(d[colon+1:]))
	if v, ok := cutImportant(value); ok {
		c.hit(slugImportant, off)
		value = v
	}
	if strings.HasPrefix(prop, "--") {
		c.hit(slugVariables, off)
		c.value(value, off)
		return
	}
	p := stripVendor(prop)
	for _, slug := range propertyRules[p] {
		c.hit(slug, off)
	}
	words := strings.Fields(value)
	first := ""
	if len(words) > 0 {
		first = stripVendor(words[0])
	}
	switch p {
	case "display":
		switch first {
		case "flex", "inline-flex", "box", "inline-box", "flexbox", "inline-flexbox":
			c.hit(slugDisplayFlex, off)
		case "grid", "inline-grid":
			c.hit(slugDisplayGrid, off)
		case "none":
			c.hit(slugDisplayNone, off)
		default:
			c.hit(slugDisplay, off)
		}
	case "flex-direction":
		if strings.HasPrefix(first, "column") {
			c.hit(slugFlexDirection, off)
		}
	case "flex-wrap":
		if strings.HasPrefix(first, "wrap") {
			c.hit(slugFlexWrap, off)
		}
	case "flex-flow":
		for _, w := range words {
			switch {
			case strings.HasPrefix(w, "column"):
				c.hit(slugFlexDirection, off)
			case strings.HasPrefix(w, "wrap"):
				c.hit(slugFlexWrap, off)
			}
		}
	}
	c.value(value, off)
}

// cutImportant removes a trailing !important.
func cutImportant(v string) (string, bool) {
	t := strings.TrimRight(v, " \t\r\n")
	if !strings.HasSuffix(t, "important") {
		return v, false
	}
	t = strings.TrimRight(strings.TrimSuffix(t, "important"), " \t\r\n")
	if !strings.HasSuffix(t, "!") {
		return v, false
	}
	return strings.TrimSuffix(t, "!"), true
}

// value reports the functions, keywords and units of a lower-case value.
func (c *cssScan) value(v string, off int) {
	for i := 0; i < len(v); {
		ch := v[i]
		switch {
		case ch == '"' || ch == '\'':
			i = skipStringS(v, i)
		case ch == '#':
			i++
			for i < len(v) && isIdentByte(v[i]) {
				i++
			}
		case startsNumber(v, i):
			if ch == '+' || ch == '-' {
				i++
			}
			for i < len(v) && (isDigit(v[i]) || v[i] == '.') {
				i++
			}
			if i+1 < len(v) && v[i] == 'e' && (isDigit(v[i+1]) || ((v[i+1] == '+' || v[i+1] == '-') && i+2 < len(v) && isDigit(v[i+2]))) {
				i += 2
				for i < len(v) && isDigit(v[i]) {
					i++
				}
			}
			u := i
			if u < len(v) && v[u] == '%' {
				i++
			} else {
				for i < len(v) && isLetter(v[i]) {
					i++
				}
			}
			if slug := unitRules[v[u:i]]; slug != "" {
				c.hit(slug, off)
			}
		case startsIdent(v, i):
			j := i
			for j < len(v) && isIdentByte(v[j]) {
				j++
			}
			name := v[i:j]
			if j < len(v) && v[j] == '(' {
				if name == "url" {
					i = matchParen(v, j)
					continue
				}
				if slug := functionRules[stripVendor(name)]; slug != "" {
					c.hit(slug, off)
				}
				i = j + 1
				continue
			}
			if slug := keywordRules[name]; slug != "" {
				c.hit(slug, off)
			}
			i = j
		default:
			i++
		}
	}
}

// selector reads the selector list in src[from:to].
func (c *cssScan) selector(from, to int) {
	s := c.src
	start := from
	groups := 0
	for i := from; i <= to; {
		if i == to || s[i] == ',' {
			c.complex(start, i)
			groups++
			i++
			start = i
			continue
		}
		switch s[i] {
		case '(':
			i = matchClose(s, i, to, '(', ')') + 1
		case '[':
			i = matchClose(s, i, to, '[', ']') + 1
		case '"', '\'':
			i = skipString(s, i, to)
		default:
			i++
		}
		i = min(i, to)
	}
	if groups > 1 {
		c.hit(slugSelectorGrouping, c.at(from))
	}
}

// complex reads one complex selector: compound selectors and combinators.
func (c *cssScan) complex(from, to int) {
	s := c.src
	compounds := 0
	space, combinator := false, false
	for i := from; i < to; {
		switch s[i] {
		case ' ', '\t', '\r', '\n', '\f':
			space = true
			i++
		case '>':
			c.hit(slugSelectorChild, c.at(i))
			combinator, space = true, false
			i++
		case '+':
			c.hit(slugSelectorAdjacent, c.at(i))
			combinator, space = true, false
			i++
		case '~':
			c.hit(slugSelectorSibling, c.at(i))
			combinator, space = true, false
			i++
		default:
			if compounds > 0 && space && !combinator {
				c.hit(slugSelectorDesc, c.at(i))
			}
			space, combinator = false, false
			i = c.compound(i, to)
			compounds++
		}
	}
}

// compound reads one compound selector (a.b:hover) from src[i] and returns
// where it ends.
func (c *cssScan) compound(i, to int) int {
	s := c.src
	start, simple := i, 0
	for i < to {
		ch := s[i]
		switch {
		case ch == ' ' || ch == '\t' || ch == '\r' || ch == '\n' || ch == '\f' || ch == '>' || ch == '+' || ch == '~':
			if simple >= 2 {
				c.hit(slugSelectorChaining, c.at(start))
			}
			return i
		case ch == '*':
			c.hit(slugSelectorUniversal, c.at(i))
			simple++
			i++
		case ch == '.' || ch == '#':
			slug := slugSelectorClass
			if ch == '#' {
				slug = slugSelectorID
			}
			c.hit(slug, c.at(i))
			simple++
			i++
			for i < to && isIdentByte(s[i]) {
				i++
			}
		case ch == '[':
			c.hit(slugSelectorAttribute, c.at(i))
			simple++
			i = min(matchClose(s, i, to, '[', ']')+1, to)
		case ch == '&':
			c.hit(slugNesting, c.at(i))
			i++
		case ch == ':':
			at := i
			i++
			if i < to && s[i] == ':' {
				i++
			}
			j := i
			for j < to && isIdentByte(s[j]) {
				j++
			}
			name := strings.ToLower(string(s[i:j]))
			if slug := pseudoRules[stripVendor(name)]; slug != "" {
				c.hit(slug, c.at(at))
			}
			i = j
			if i < to && s[i] == '(' {
				i = min(matchClose(s, i, to, '(', ')')+1, to)
			}
		case isIdentByte(ch) && ch != '-' || ch == '-' && i+1 < to && (isLetter(s[i+1]) || s[i+1] == '-'):
			c.hit(slugSelectorType, c.at(i))
			simple++
			for i < to && isIdentByte(s[i]) {
				i++
			}
		default:
			i++
		}
	}
	if simple >= 2 {
		c.hit(slugSelectorChaining, c.at(start))
	}
	return i
}

// stripVendor removes a vendor prefix: -webkit-box-shadow is box-shadow.
func stripVendor(name string) string {
	for _, p := range []string{"-webkit-", "-moz-", "-ms-", "-o-"} {
		if strings.HasPrefix(name, p) {
			return name[len(p):]
		}
	}
	return name
}

func isDigit(b byte) bool     { return b >= '0' && b <= '9' }
func isLetter(b byte) bool    { return b|0x20 >= 'a' && b|0x20 <= 'z' }
func isIdentByte(b byte) bool { return isLetter(b) || isDigit(b) || b == '-' || b == '_' || b >= 0x80 }

func startsIdent(v string, i int) bool {
	b := v[i]
	if isLetter(b) || b == '_' || b >= 0x80 {
		return true
	}
	return b == '-' && i+1 < len(v) && (isLetter(v[i+1]) || v[i+1] == '-' || v[i+1] == '_')
}

func startsNumber(v string, i int) bool {
	b := v[i]
	if isDigit(b) {
		return true
	}
	if b == '.' {
		return i+1 < len(v) && isDigit(v[i+1])
	}
	if b == '+' || b == '-' {
		return i+1 < len(v) && (isDigit(v[i+1]) || v[i+1] == '.' && i+2 < len(v) && isDigit(v[i+2]))
	}
	return false
}

func skipSpace(s []byte, i, to int) int {
	for i < to && (s[i] == ' ' || s[i] == '\t' || s[i] == '\r' || s[i] == '\n' || s[i] == '\f') {
		i++
	}
	return i
}

// skipString returns the index after the string that starts at s[i].
func skipString(s []byte, i, to int) int {
	q := s[i]
	for i++; i < to; i++ {
		switch s[i] {
		case '\\':
			i++
		case q, '\n':
			return i + 1
		}
	}
	return to
}

func skipStringS(s string, i int) int {
	q := s[i]
	for i++; i < len(s); i++ {
		switch s[i] {
		case '\\':
			i++
		case q, '\n':
			return i + 1
		}
	}
	return len(s)
}

// findAny returns the index of the first byte of set in s[i:to] outside
// strings, parentheses and brackets, or to.
func findAny(s []byte, i, to int, set string) int {
	for i < to {
		switch b := s[i]; {
		case strings.IndexByte(set, b) >= 0:
			return i
		case b == '"' || b == '\'':
			i = skipString(s, i, to)
		case b == '(':
			i = matchClose(s, i, to, '(', ')') + 1
		case b == '[':
			i = matchClose(s, i, to, '[', ']') + 1
		default:
			i++
		}
	}
	return to
}

// matchBrace returns the index of the } that closes the { at s[i], or to.
func matchBrace(s []byte, i, to int) int { return matchClose(s, i, to, '{', '}') }

// matchClose returns the index of the closing byte that matches the opening
// one at s[i], skipping strings, or to when there is none.
func matchClose(s []byte, i, to int, open, closing byte) int {
	depth := 0
	for i < to {
		switch s[i] {
		case open:
			depth++
		case closing:
			depth--
			if depth == 0 {
				return i
			}
		case '"', '\'':
			i = skipString(s, i, to)
			continue
		}
		i++
	}
	return to
}

// matchParen returns the index after the ) that closes the ( at v[i].
func matchParen(v string, i int) int {
	depth := 0
	for ; i < len(v); i++ {
		switch v[i] {
		case '(':
			depth++
		case ')':
			depth--
			if depth == 0 {
				return i + 1
			}
		}
	}
	return len(v)
}
