package message

import (
	"sort"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Limits of the code finder: how many codes it keeps, how much of each body it
// reads (a code is near the top of its message), how many candidates of one
// message it looks at (a price list has hundreds of numbers, a sign-in mail a
// few), and how much of each body it reads for a keyword when a code set apart
// on its own line has none beside it.
const (
	maxCodes        = 10
	maxCodeScan     = 16 << 10
	maxCandidates   = 64
	keywordScanSize = 4 << 10
)

// How far from a code its keyword may be, in bytes of the line: before it
// ("Your verification code is 482913") or after it ("482913 is your code").
// A label such as "Order" must be closer to count against it.
const (
	keywordBefore  = 60
	keywordAfter   = 40
	negativeBefore = 30
	negativeAfter  = 20
	keywordWindow  = 24 // most of the longest keyword, and the rest of its word
)

// The scores that order the codes: best first.
const (
	scoreSetApart        = 2 // alone on its line
	scoreSetApartKeyword = 3 // alone on its line, a keyword elsewhere in the message
	scoreNear            = 4 // a keyword on its line or the line above
	scoreRightAfter      = 5 // right after its keyword: "code: 482913", "Code lautet 482913"
)

// Codes returns the one-time codes a reader of the message would type, best
// first: runs of 4 to 10 digits, or of capital letters and digits, near a word
// such as code, verification, OTP, PIN or passcode in one of the main languages
// (before the code or after it, on its line or the line above), or set apart on
// a line of their own. Codes with lower-case letters count only beside such a
// word. The subject is read first, then the text body, then, when those have
// no code and the text body has no digit, the text the HTML body shows (the two
// bodies of a message say the same, and the HTML is the slower to read).
//
// What a person would not type is left out: numbers labelled as something else
// (order, invoice, reference, tracking, phone, ZIP, promo; "#1042", "No. 1042"),
// prices, dates and times, phone and card numbers (more than two groups of
// digits), numbers in URLs, addresses and file names, and years unless right
// after a keyword or set apart. Digits shown in two equal groups ("482 913",
// "4829-1350") are one code, given without the separator; a code of capitals
// shown in groups keeps its hyphen ("3GF-XQ7"); the digits after a sender's
// prefix ("G-482913", "FB-48291") are the code. Codes returns an empty slice,
// not nil, when it finds none.
func Codes(subject, text, html string) []string {
	var shown string
	if html != "" && needsHTMLText(text) {
		shown = readHTML(html, true, false).text
	}
	return findCodes(subject, text, shown)
}

// Extract returns what Links(html, text) and Codes(subject, text, html) return,
// reading the HTML body once for both: ingest calls it for every message. A
// message with a text body that has digits, which says what its HTML body says
// and would have the code, has only its HTML's anchors read, which saves most
// of the time (docs/benchmarks.md).
func Extract(subject, text, html string) ([]Link, []string) {
	var v htmlView
	if html != "" {
		v = readHTML(html, needsHTMLText(text), text == "")
	}
	return addTextLinks(v.links, text), findCodes(subject, text, v.text)
}

// needsHTMLText reports whether the text the HTML body shows must be read for
// codes: when the text body has no digit it can have no code (a stub such as
// "View this email in your browser", or no text body at all).
func needsHTMLText(text string) bool {
	return !hasDigit(text[:min(len(text), maxCodeScan)])
}

// codeFinder holds one message's search for codes.
type codeFinder struct {
	sources    []string // the subject, the text body, the HTML body's visible text
	found      []foundCode
	candidates int
	keyword    int // whether the message has a keyword anywhere: 0 unknown, 1 yes, -1 no
}

// foundCode is one code and how good it is; pos orders codes of one score.
type foundCode struct {
	code  string
	score int
	pos   int
}

func findCodes(subject, text, shown string) []string {
	f := &codeFinder{sources: []string{subject, text, shown}}
	for i, src := range f.sources {
		if i == 2 && len(f.found) > 0 {
			break // the HTML body shows what the text body says
		}
		if len(src) > maxCodeScan {
			src = src[:maxCodeScan]
		}
		f.readSource(src, i*(maxCodeScan+1))
	}
	sort.SliceStable(f.found, func(i, j int) bool {
		if f.found[i].score != f.found[j].score {
			return f.found[i].score > f.found[j].score
		}
		return f.found[i].pos < f.found[j].pos
	})
	out := []string{}
	for _, c := range f.found {
		if len(out) == maxCodes {
			break
		}
		out = append(out, c.code)
	}
	return out
}

// readSource reads one source line by line; base orders its codes after those
// of the sources before it.
func (f *codeFinder) readSource(src string, base int) {
	var above [2]string // the last two lines with text, nearest first
	for off := 0; off < len(src); {
		end := strings.IndexByte(src[off:], '\n')
		if end < 0 {
			end = len(src)
		} else {
			end += off
		}
		line := strings.TrimRight(src[off:end], "\r")
		if hasDigit(line) && f.candidates < maxCandidates {
			f.readLine(line, above, base+off)
		}
		if strings.TrimSpace(line) != "" {
			above[1], above[0] = above[0], line
		}
		off = end + 1
	}
}

// readLine finds the codes of one line; above are the lines with text before it.
func (f *codeFinder) readLine(line string, above [2]string, pos int) {
	for _, c := range candidates(maskURLsAndAddresses(line)) {
		if f.candidates++; f.candidates > maxCandidates {
			return
		}
		if score := f.score(c, line, above); score > 0 {
			f.add(c.code, score, pos+c.start)
		}
	}
}

// add records code, keeping the better score of a code found twice.
func (f *codeFinder) add(code string, score, pos int) {
	for i := range f.found {
		if f.found[i].code == code {
			if score > f.found[i].score {
				f.found[i].score = score
			}
			return
		}
	}
	f.found = append(f.found, foundCode{code: code, score: score, pos: pos})
}

// score returns how good a candidate is as a code, 0 if it is none.
func (f *codeFinder) score(c candidate, line string, above [2]string) int {
	k := keywordsAround(line, c.start, c.end)
	switch {
	case k.before.found && !k.before.positive && k.beforeDist <= negativeBefore:
		return 0 // "Order 10423", "Invoice: 1042", "promo code SAVE20"
	case k.after.found && k.after.qualifies && k.afterDist <= negativeAfter:
		return 0 // "code THANKS10 for 10 % off"
	case k.before.found && k.before.positive && k.beforeDist <= keywordBefore:
		if rightAfter(k.gap) {
			return scoreRightAfter
		}
		if c.year || k.after.found && !k.after.positive && k.afterDist <= negativeAfter {
			return 0 // a year near a keyword is a date; "code 4829 order 1042"
		}
		return scoreNear
	case k.after.found && k.after.positive && k.afterDist <= keywordAfter:
		if c.year {
			return 0
		}
		return scoreNear
	case k.after.found && !k.after.positive && k.afterDist <= negativeAfter:
		return 0
	}
	// Not beside a keyword on its line: the line above may be its label.
	first := strings.TrimFunc(line[:c.start], isFiller) == ""
	for i, l := range above {
		if l == "" || !first {
			break
		}
		m := lastMatch(keywordMatches(lowerSameLength(tail(l, keywordBefore))))
		if m.found && !m.positive && i == 0 {
			return 0 // "Order number" above "10423"
		}
		if m.found && m.positive {
			if c.year {
				return 0
			}
			return scoreNear
		}
	}
	if c.class == classMixed || strings.TrimFunc(line[:c.start]+line[c.end:], isFiller) != "" {
		return 0
	}
	if f.hasKeyword() {
		return scoreSetApartKeyword
	}
	return scoreSetApart
}

// context is what surrounds a candidate on its line: the nearest keyword before
// it and the nearest after it in the same sentence, their distances in bytes,
// and the text between the keyword before and the candidate, lower-cased.
type context struct {
	before, after         match
	beforeDist, afterDist int
	gap                   string
}

// keywordsAround reads the keywords around line[start:end], within a window
// wide enough for the farthest one that counts.
func keywordsAround(line string, start, end int) context {
	from := runeStart(line, max(start-keywordBefore-keywordWindow, 0))
	to := runeStart(line, min(end+keywordAfter+keywordWindow, len(line)))
	lower := lowerSameLength(line[from:to])
	start, end = start-from, end-from
	var k context
	for _, m := range keywordMatches(lower) {
		if m.end <= start {
			k.before, k.beforeDist, k.gap = m, start-m.end, lower[m.end:start]
		}
		if m.start >= end && !k.after.found && !strings.ContainsAny(lower[end:m.start], ".!?;。！？") {
			k.after, k.afterDist = m, m.start-end
		}
	}
	return k
}

// hasKeyword reports whether the message has a code keyword near its start: in
// the subject or the first bytes of a body.
func (f *codeFinder) hasKeyword() bool {
	if f.keyword == 0 {
		f.keyword = -1
		for _, src := range f.sources {
			if len(src) > keywordScanSize {
				src = src[:keywordScanSize]
			}
			for _, m := range keywordMatches(lowerSameLength(src)) {
				if m.positive {
					f.keyword = 1
					break
				}
			}
		}
	}
	return f.keyword > 0
}

// isFiller reports the characters that may surround a code set apart on its
// line: white space, punctuation and symbols ("[ 482913 ]", "**482913**", "→").
func isFiller(r rune) bool {
	return unicode.IsSpace(r) || unicode.IsPunct(r) || unicode.IsSymbol(r)
}

// rightAfter reports whether the text between a keyword and a code is only
// punctuation and a linking word, as in "code: 482913", "code is 482913",
// "Code lautet 482913", "code est 482913", "验证码是：482913", "コードは482913".
func rightAfter(gap string) bool {
	gap = strings.TrimFunc(gap, isFiller)
	if gap == "" {
		return true
	}
	switch gap {
	case "is", "ist", "lautet", "est", "es", "é", "è", "är", "er", "to", "jest", "on", "是", "为", "為", "は", "는", "은":
		return true
	}
	return false
}

// tail returns about the last n bytes of s, cut at a character boundary.
func tail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[runeStart(s, len(s)-n):]
}

// runeStart moves i forward to the start of a character of s.
func runeStart(s string, i int) int {
	for i < len(s) && !utf8.RuneStart(s[i]) {
		i++
	}
	return i
}

// lowerSameLength lower-cases s character by character, keeping a character
// whose lower case has another length in UTF-8 as it is, so that byte offsets
// into s and into the result are the same.
func lowerSameLength(s string) string {
	b := make([]byte, 0, len(s))
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c >= 'A' && c <= 'Z' {
				c += 'a' - 'A'
			}
			b = append(b, c)
			i++
			continue
		}
		r, n := utf8.DecodeRuneInString(s[i:])
		if l := unicode.ToLower(r); utf8.RuneLen(l) == n && r != utf8.RuneError {
			b = utf8.AppendRune(b, l)
		} else {
			b = append(b, s[i:i+n]...)
		}
		i += n
	}
	return string(b)
}

// maskURLsAndAddresses blanks the URLs and email addresses of line, keeping its
// length: the digits of a link's token or of "user1042@example.com" are no code.
func maskURLsAndAddresses(line string) string {
	spans := urlSpans(line)
	at := strings.IndexByte(line, '@')
	if len(spans) == 0 && at < 0 {
		return line
	}
	b := []byte(line)
	for _, sp := range spans {
		blank(b, sp.start, sp.end)
	}
	for at >= 0 {
		start, end := at, at+1
		for start > 0 && !isSpaceByte(b[start-1]) {
			start--
		}
		for end < len(b) && !isSpaceByte(b[end]) {
			end++
		}
		blank(b, start, end)
		next := strings.IndexByte(line[end:], '@')
		if next < 0 {
			break
		}
		at = end + next
	}
	return string(b)
}

func blank(b []byte, start, end int) {
	for i := start; i < end; i++ {
		b[i] = ' '
	}
}

func isSpaceByte(c byte) bool { return c == ' ' || c == '\t' || c == '\r' || c == '\n' }
