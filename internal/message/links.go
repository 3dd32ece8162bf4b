package message

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// Limits on the links kept of one message, so a hostile message cannot blow up
// the row it is stored in: at most maxLinks links, none longer than maxHref
// bytes (longer ones are left out: cut short, they would lead nowhere), anchor
// texts cut to maxLinkText characters.
const (
	maxLinks    = 500
	maxHref     = 8 << 10
	maxLinkText = 300
)

// Link is one link a reader of a message can follow: where it leads, and the
// text shown for it. Tests that wait for a password-reset or sign-in mail follow
// it rather than each writing the same regular expression.
type Link struct {
	Href string `json:"href"`
	// Text is the anchor's visible text (an image's alt text when the anchor
	// holds only an image); empty for a bare URL.
	Text string `json:"text,omitempty"`
}

// Links returns the http and https links of a message in the order a reader
// meets them: the HTML body's anchors, with their text, then the URLs written
// out in the text body that the anchors did not have; in a message without a
// text body, the URLs written out in the HTML's text take their place.
// Entities are decoded; each URL is listed once, with the first text it was
// shown with. Links of other schemes (mailto:, tel:, cid:, javascript:) and
// relative ones are left out: a test cannot follow them. Links returns an empty
// slice, not nil, for a message without links.
func Links(html, text string) []Link {
	var v htmlView
	if html != "" {
		v = readHTML(html, text == "", text == "")
	}
	return addTextLinks(v.links, text)
}

// addTextLinks adds the bare URLs of a text body to the links of the HTML body.
func addTextLinks(links []Link, text string) []Link {
	if len(text) > maxScan {
		text = text[:maxScan]
	}
	l := linkList{links: links}
	for _, u := range bareURLs(text) {
		l.add(Link{Href: u})
	}
	if l.links == nil {
		return []Link{}
	}
	return l.links
}

// linkList is a list of links without repeats.
type linkList struct {
	links []Link
	index map[string]int // position of each URL, once the list is long
}

// add appends l unless its URL is listed already; a listed link without text
// takes l's.
func (ll *linkList) add(l Link) {
	if utf8.RuneCountInString(l.Text) > maxLinkText {
		l.Text = strings.TrimSpace(string([]rune(l.Text)[:maxLinkText]))
	}
	if i, ok := ll.find(l.Href); ok {
		if ll.links[i].Text == "" {
			ll.links[i].Text = l.Text
		}
		return
	}
	if len(ll.links) >= maxLinks {
		return
	}
	ll.links = append(ll.links, l)
	if ll.index != nil {
		ll.index[l.Href] = len(ll.links) - 1
	}
}

// find returns the position of href: by a scan while the list is short, then
// by an index.
func (ll *linkList) find(href string) (int, bool) {
	if ll.index == nil && len(ll.links) > 16 {
		ll.index = make(map[string]int, 2*len(ll.links))
		for i, l := range ll.links {
			ll.index[l.Href] = i
		}
	}
	if ll.index != nil {
		i, ok := ll.index[href]
		return i, ok
	}
	for i := range ll.links {
		if ll.links[i].Href == href {
			return i, true
		}
	}
	return 0, false
}

// cleanHref reads an anchor's href as a browser does (the URL Standard's basic
// URL parser, which the HTML Standard applies to href): leading and trailing
// C0 controls and spaces are trimmed and tabs and newlines removed, which undoes
// the line breaks mailers fold long attributes with. It reports whether the
// result is an absolute http or https URL with a host.
func cleanHref(href string) (string, bool) {
	href = strings.TrimFunc(href, func(r rune) bool { return r <= ' ' })
	if strings.ContainsAny(href, "\t\n\r") {
		href = strings.Map(func(r rune) rune {
			if r == '\t' || r == '\n' || r == '\r' {
				return -1
			}
			return r
		}, href)
	}
	return href, len(href) <= maxHref && schemeLen(href) > 0
}

// schemeLen returns the length of s's "http://" or "https://" prefix (any
// case) when a host follows it, else 0.
func schemeLen(s string) int {
	n := 0
	switch {
	case len(s) >= 8 && strings.EqualFold(s[:8], "https://"):
		n = 8
	case len(s) >= 7 && strings.EqualFold(s[:7], "http://"):
		n = 7
	default:
		return 0
	}
	if len(s) == n || s[n] == '/' || s[n] == '?' || s[n] == '#' {
		return 0
	}
	return n
}

// bareURLs returns the http and https URLs written out in text, in order.
func bareURLs(text string) []string {
	var out []string
	for _, sp := range urlSpans(text) {
		out = append(out, sp.url)
	}
	return out
}

// urlSpan is one URL found in text: the bytes text[start:end] it was read from
// and the URL they give.
type urlSpan struct {
	start, end int
	url        string
}

// urlSpans finds the URLs written out in text. A URL starts with http:// or
// https:// at the start of a word and ends before white space, a character that
// cannot be in a URL (RFC 3986 section 2), or punctuation of another script;
// trailing sentence punctuation and unbalanced closing brackets are not part of
// it. A URL in angle brackets, as RFC 3986 appendix C recommends for URLs in
// text, ends at the '>', and white space inside the brackets (where a mailer
// wrapped a long line) is removed.
func urlSpans(text string) []urlSpan {
	var out []urlSpan
	from := 0
	for len(out) < maxLinks {
		i := strings.Index(text[from:], "://")
		if i < 0 {
			return out
		}
		i += from
		from = i + 3
		start := -1
		switch {
		case i >= 5 && strings.EqualFold(text[i-5:i], "https"):
			start = i - 5
		case i >= 4 && strings.EqualFold(text[i-4:i], "http"):
			start = i - 4
		default:
			continue
		}
		if start > 0 {
			if r, _ := utf8.DecodeLastRuneInString(text[:start]); unicode.IsLetter(r) || unicode.IsDigit(r) {
				continue // "xhttp://" is not the start of a URL
			}
		}
		var sp urlSpan
		if start > 0 && text[start-1] == '<' {
			sp = bracketedURL(text, start)
		}
		if sp.url == "" {
			sp = plainURL(text, start)
		}
		if sp.url == "" || len(sp.url) > maxHref || schemeLen(sp.url) == 0 {
			continue
		}
		out = append(out, sp)
		from = sp.end
	}
	return out
}

// bracketedURL reads the URL starting at text[start] up to the '>' that closes
// the '<' before it, white space removed; "" when no '>' closes it soon.
func bracketedURL(text string, start int) urlSpan {
	rest := text[start:]
	if len(rest) > maxHref {
		rest = rest[:maxHref]
	}
	end := strings.IndexAny(rest, "<>")
	if end < 0 || rest[end] != '>' {
		return urlSpan{}
	}
	u := strings.Map(func(r rune) rune {
		if unicode.IsSpace(r) {
			return -1
		}
		return r
	}, rest[:end])
	return urlSpan{start: start, end: start + end, url: u}
}

// plainURL reads the URL starting at text[start] up to its end.
func plainURL(text string, start int) urlSpan {
	end := start
	for end < len(text) {
		if c := text[end]; c < utf8.RuneSelf {
			if asciiEndsURL[c] {
				break
			}
			end++
			continue
		}
		r, n := utf8.DecodeRuneInString(text[end:])
		if endsURL(r) {
			break
		}
		end += n
	}
	u := text[start:end]
	for u != "" {
		last := u[len(u)-1]
		if strings.IndexByte(".,;:!?'\"*", last) >= 0 || unbalanced(u, last) {
			u = u[:len(u)-1]
			continue
		}
		break
	}
	return urlSpan{start: start, end: start + len(u), url: u}
}

// endsURL reports whether r cannot be part of a URL written in text: white
// space, controls, the characters RFC 3986 excludes that text uses as
// delimiters, and punctuation or spaces outside ASCII (a Japanese sentence's
// "。" right after a URL). Letters of any script stay: IRIs (RFC 3987) have them.
func endsURL(r rune) bool {
	if r < utf8.RuneSelf {
		return asciiEndsURL[r]
	}
	return unicode.IsSpace(r) || unicode.IsPunct(r) || r == utf8.RuneError
}

var asciiEndsURL = func() (t [utf8.RuneSelf]bool) {
	for c := range t {
		t[c] = c <= ' ' || c == 0x7f || strings.IndexByte("<>\"`{}|\\^", byte(c)) >= 0
	}
	return t
}()

// unbalanced reports whether the closing bracket last ends u without a partner:
// "(see https://example.com/a)" ends the URL before the ')', while
// "https://en.wikipedia.org/wiki/Mail_(band)" keeps it.
func unbalanced(u string, last byte) bool {
	var open byte
	switch last {
	case ')':
		open = '('
	case ']':
		open = '['
	case '}':
		open = '{'
	default:
		return false
	}
	return strings.Count(u, string(open)) < strings.Count(u, string(last))
}
