package compose

import (
	"html"
	"net/mail"
	"regexp"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/catchbox/catchbox/internal/inbox"
)

// What a reply and a forward take from the inbound email they are made from:
// the subject, the threading headers (RFC 5322 section 3.6.4), the reply's
// recipient, and the forwarded message's header block and bodies.

// MaxSubject is the longest subject, in characters: RFC 5322's line limit.
const MaxSubject = 998

// ReplySubject is the subject of a reply: "Re: " and the original, unless the
// original already starts with Re: (RFC 5322 section 3.6.5), so that a thread
// does not grow "Re: Re: ".
func ReplySubject(orig string) string {
	return prefixed("Re: ", orig, "re:")
}

// ForwardSubject is the subject of a forward: "Fwd: " and the original,
// unless it already starts with Fwd: or Fw:.
func ForwardSubject(orig string) string {
	return prefixed("Fwd: ", orig, "fwd:", "fw:")
}

func prefixed(prefix, orig string, already ...string) string {
	orig = strings.TrimSpace(orig)
	lower := strings.ToLower(orig)
	for _, a := range already {
		if strings.HasPrefix(lower, a) {
			return truncateRunes(orig, MaxSubject)
		}
	}
	return truncateRunes(prefix+orig, MaxSubject)
}

func truncateRunes(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	return string([]rune(s)[:n])
}

// msgIDRE finds the msg-ids of a Message-ID, In-Reply-To or References field.
var msgIDRE = regexp.MustCompile(`<([^<>\s]+)>`)

// msgIDs returns the msg-ids of a header value, without angle brackets.
func msgIDs(v string) []string {
	var out []string
	for _, m := range msgIDRE.FindAllStringSubmatch(v, -1) {
		out = append(out, m[1])
	}
	return out
}

// maxReferences bounds References: RFC 5322 section 3.6.4 lets a long thread
// be trimmed; the first message and the latest ones are kept.
const maxReferences = 20

// Threading returns the In-Reply-To and References of a reply to an email
// with the header map h (RFC 5322 section 3.6.4): In-Reply-To its
// Message-ID; References its References (or, lacking them, its In-Reply-To
// when that names one message) followed by its Message-ID. An email without a
// Message-ID gives neither but its references.
func Threading(h map[string]string) (inReplyTo, references []string) {
	id := msgIDs(h["message-id"])
	refs := msgIDs(h["references"])
	if len(refs) == 0 {
		if irt := msgIDs(h["in-reply-to"]); len(irt) == 1 {
			refs = irt
		}
	}
	if len(id) > 0 {
		inReplyTo = id[:1]
		refs = append(refs, id[0])
	}
	if len(refs) > maxReferences {
		refs = append(refs[:1:1], refs[len(refs)-maxReferences+1:]...)
	}
	return inReplyTo, refs
}

// ReplyRecipients are whom a reply goes to: the addresses of the email's
// Reply-To, else its From (RFC 5322 section 3.6.2).
func ReplyRecipients(e inbox.Email) []Address {
	if v := strings.TrimSpace(e.Headers["reply-to"]); v != "" {
		if as := parseAddresses(v); len(as) > 0 {
			return as
		}
	}
	if e.From.Address == "" {
		return nil
	}
	if _, err := mail.ParseAddress(e.From.Address); err != nil {
		return nil
	}
	return []Address{{Email: e.From.Address, Name: e.From.Name}}
}

// angleAddrRE finds the addresses between angle brackets of a header value.
var angleAddrRE = regexp.MustCompile(`<([^<>\s]+@[^<>\s]+)>`)

// parseAddresses reads an address list from a header value whose encoded
// words are already decoded (the inbound email's headers map). A decoded
// display name may hold a comma, which breaks the list; each address is then
// taken from its angle brackets.
func parseAddresses(v string) []Address {
	var out []Address
	if list, err := mail.ParseAddressList(v); err == nil {
		for _, a := range list {
			out = append(out, Address{Email: a.Address, Name: a.Name})
		}
		return out
	}
	for _, m := range angleAddrRE.FindAllStringSubmatch(v, -1) {
		if a, err := mail.ParseAddress(m[1]); err == nil {
			out = append(out, Address{Email: a.Address})
		}
	}
	return out
}

// forwardHeader is the block that introduces a forwarded message: its From,
// Date, Subject, To and Cc as a reader saw them.
type forwardHeader struct {
	From, Date, Subject, To, Cc string
}

func newForwardHeader(e inbox.Email) forwardHeader {
	date := e.Headers["date"]
	if date == "" {
		date = time.Unix(e.ReceivedTimestamp, 0).UTC().Format(time.RFC1123Z)
	}
	return forwardHeader{From: formatAddress(e.From), Date: date, Subject: e.Subject,
		To: formatAddresses(e.To), Cc: formatAddresses(e.Cc)}
}

func formatAddress(a inbox.Address) string {
	if a.Name == "" {
		return a.Address
	}
	return a.Name + " <" + a.Address + ">"
}

func formatAddresses(as []inbox.Address) string {
	var out []string
	for _, a := range as {
		out = append(out, formatAddress(a))
	}
	return strings.Join(out, ", ")
}

// forwardMarker opens the forwarded message in both bodies.
const forwardMarker = "---------- Forwarded message ---------"

// fields are the block's lines, name and value, empty ones left out.
func (f forwardHeader) fields() [][2]string {
	var out [][2]string
	for _, kv := range [][2]string{{"From", f.From}, {"Date", f.Date}, {"Subject", f.Subject}, {"To", f.To}, {"Cc", f.Cc}} {
		if kv[1] != "" {
			out = append(out, kv)
		}
	}
	return out
}

// ForwardBodies are a forward's text and HTML: what the sender wrote, then
// the forwarded message's header block and its body. Both alternatives are
// always written, each from the matching body where there is one and from
// the other where not, so every reader sees the whole forward.
func ForwardBodies(userHTML, userText string, e inbox.Email) (htmlBody, textBody string) {
	fh := newForwardHeader(e)

	var t strings.Builder
	if intro := firstNonEmpty(userText, htmlToText(userHTML)); intro != "" {
		t.WriteString(strings.TrimRight(intro, "\r\n") + "\n\n")
	}
	t.WriteString(forwardMarker + "\n")
	for _, kv := range fh.fields() {
		t.WriteString(kv[0] + ": " + kv[1] + "\n")
	}
	t.WriteString("\n" + firstNonEmpty(e.Text, htmlToText(e.HTML)))

	var h strings.Builder
	h.WriteString("<!DOCTYPE html>\n<html><body>\n")
	switch {
	case userHTML != "":
		h.WriteString("<div>" + bodyContent(userHTML) + "</div>\n<br>\n")
	case userText != "":
		h.WriteString(textToHTML(userText) + "\n<br>\n")
	}
	h.WriteString(`<div class="forwarded-message">` + forwardMarker + "<br>\n")
	for _, kv := range fh.fields() {
		h.WriteString(kv[0] + ": " + html.EscapeString(kv[1]) + "<br>\n")
	}
	h.WriteString("<br>\n")
	if e.HTML != "" {
		h.WriteString(bodyContent(e.HTML))
	} else {
		h.WriteString(textToHTML(e.Text))
	}
	h.WriteString("\n</div>\n</body></html>\n")
	return h.String(), t.String()
}

func firstNonEmpty(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// bodyRE finds the content of an HTML document's body element.
var bodyRE = regexp.MustCompile(`(?is)<body[^>]*>(.*)</body\s*>`)

// bodyContent is what goes inside another document of an HTML body: its body
// element's content when it is a whole document.
func bodyContent(s string) string {
	if m := bodyRE.FindStringSubmatch(s); m != nil {
		return m[1]
	}
	return s
}

// textToHTML shows plain text in HTML as it reads: escaped, its line breaks
// and spaces kept.
func textToHTML(s string) string {
	return `<div style="white-space: pre-wrap">` + html.EscapeString(s) + `</div>`
}

var (
	hiddenRE   = regexp.MustCompile(`(?is)<(script|style|head|title)[^>]*>.*?</(script|style|head|title)\s*>`)
	breakRE    = regexp.MustCompile(`(?i)<br\s*/?>|</(p|div|h[1-6]|li|tr|blockquote|pre|table)\s*>`)
	tagRE      = regexp.MustCompile(`(?s)<[^>]*>`)
	blankRunRE = regexp.MustCompile(`\n[ \t]*\n([ \t]*\n)+`)
	spaceRunRE = regexp.MustCompile(`[ \t]+`)
)

// htmlToText is the text a reader sees of an HTML body, for the text
// alternative of a forward whose original had HTML only: hidden elements
// dropped, block ends as line breaks, tags removed, entities decoded.
func htmlToText(s string) string {
	if s == "" {
		return ""
	}
	s = hiddenRE.ReplaceAllString(s, "")
	s = strings.NewReplacer("\r\n", " ", "\n", " ", "\r", " ").Replace(s)
	s = breakRE.ReplaceAllString(s, "$0\n")
	s = tagRE.ReplaceAllString(s, "")
	s = html.UnescapeString(s)
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		lines[i] = strings.TrimSpace(spaceRunRE.ReplaceAllString(l, " "))
	}
	s = blankRunRE.ReplaceAllString(strings.Join(lines, "\n"), "\n\n")
	return strings.TrimSpace(s) + "\n"
}
