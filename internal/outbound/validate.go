package outbound

import (
	"encoding/base64"
	"errors"
	"fmt"
	"mime"
	"net/mail"
	"strings"
	"unicode/utf8"

	"github.com/catchbox/catchbox/internal/outbound/compose"
	"github.com/catchbox/catchbox/internal/outbound/outstore"
	"github.com/catchbox/catchbox/internal/problem"
	"github.com/catchbox/catchbox/internal/routing"
)

// The seed's limits of send, reply and forward (its Limits and sending rules),
// and Catchbox's own where the seed is silent (docs/api.md).
const (
	// MaxRecipients is the most recipients of one message across to, cc and
	// bcc, a reply's derived recipient included.
	MaxRecipients = 4
	// MaxAttachments is the most attachments of one message.
	MaxAttachments = 20
	// MaxMessageBytes is the largest built message: "5 MB" is 5 MiB of the
	// encoded RFC 5322 message (contract section 5).
	MaxMessageBytes = 5 << 20
	// MaxSubject is the longest subject, in characters: RFC 5322's line limit.
	MaxSubject = compose.MaxSubject
	// MaxNamespace is the longest namespace query value.
	MaxNamespace = 253
	// maxName is the longest display name, in characters.
	maxName = 256
	// maxFilename is the longest attachment filename, in characters (the
	// inbound side keeps as many).
	maxFilename = 255
	// maxContentID is the longest Content-ID, in bytes.
	maxContentID = 250
)

// input is what send, reply and forward take from their requests: the
// fields of send, of which a reply and a forward each have theirs.
type input struct {
	From        *AddressInput
	ReplyTo     *AddressInput
	To          []string
	Cc          []string
	Bcc         []string
	Subject     string
	HTML        string
	Text        string
	Attachments []AttachmentInput
}

// draft is a request's fields once checked: what the message is made of,
// before its sender and recipients are checked against the namespace.
type draft struct {
	From        *outstore.Address // nil: the namespace's default sender
	ReplyTo     *outstore.Address
	To, Cc, Bcc []outstore.Address
	// Derived is how many of To come from the email replied to.
	Derived     int
	Subject     string
	HTML, Text  string
	Attachments []outstore.NewAttachment
}

// checker collects the invalid fields of one request (problem.Fields), so
// that a client learns of every mistake at once.
type checker struct{ fields problem.Fields }

func (c *checker) fail(field, format string, args ...any) {
	c.fields.Add(field, fmt.Sprintf(format, args...))
}

// text checks a free-text field: UTF-8 (a JSON body always is; a Go caller's
// string may not be), at most max characters (0: no limit), no NUL (no store
// keeps one in text), and with oneLine no other control character either (it
// becomes a header: a line break would end it).
func (c *checker) text(field, v string, max int, oneLine bool) bool {
	switch {
	case !utf8.ValidString(v):
		c.fail(field, "must be UTF-8 text")
	case max > 0 && utf8.RuneCountInString(v) > max:
		c.fail(field, "must be at most %d characters", max)
	case strings.ContainsRune(v, 0):
		c.fail(field, "must not contain NUL characters")
	case oneLine && strings.ContainsFunc(v, isControl):
		c.fail(field, "must not contain line breaks or other control characters")
	default:
		return true
	}
	return false
}

func isControl(r rune) bool { return r < 0x20 && r != '\t' || r == 0x7f }

// mailbox checks an address given as a string: a bare address or a name and
// an address ("Jane <jane@example.com>"), RFC 5322 section 3.4, whose domain
// is a host name or an address literal (RFC 5321 section 4.1.2).
func (c *checker) mailbox(field, v string) (outstore.Address, bool) {
	v = strings.TrimSpace(v)
	if v == "" {
		c.fail(field, "must be an email address")
		return outstore.Address{}, false
	}
	a, err := mail.ParseAddress(v)
	if err != nil || a.Address == "" || !utf8.ValidString(v) {
		c.fail(field, "must be an email address, not %s", quote(v))
		return outstore.Address{}, false
	}
	if _, err := syntaxOnly.Parse(a.Address); errors.Is(err, routing.ErrSyntax) {
		c.fail(field, "must be an email address, not %s", quote(v))
		return outstore.Address{}, false
	}
	if !c.text(field, a.Name, maxName, true) {
		return outstore.Address{}, false
	}
	return outstore.Address{Email: a.Address, Name: a.Name}, true
}

// syntaxOnly checks the syntax of addresses: no namespace is looked up.
var syntaxOnly = routing.New("invalid", nil)

// address checks an OutboundEmailAddress (from, reply_to). nil is absent.
func (c *checker) address(field string, in *AddressInput) *outstore.Address {
	if in == nil {
		return nil
	}
	if in.Email == nil {
		c.fail(field+".email", "is required")
		return nil
	}
	a, ok := c.mailbox(field+".email", *in.Email)
	if !ok {
		return nil
	}
	if strings.ContainsAny(*in.Email, "<>") || a.Name != "" {
		c.fail(field+".email", "must be a bare email address; the display name goes in %s.name", field)
		return nil
	}
	if !c.text(field+".name", in.Name, maxName, true) {
		return nil
	}
	a.Name = strings.TrimSpace(in.Name)
	return &a
}

// list checks a recipient list. seen holds the addresses named so far, lower
// case: an address named twice would be delivered twice.
func (c *checker) list(field string, vs []string, seen map[string]bool) []outstore.Address {
	var out []outstore.Address
	for i, v := range vs {
		f := fmt.Sprintf("%s[%d]", field, i)
		a, ok := c.mailbox(f, v)
		if !ok {
			continue
		}
		key := strings.ToLower(a.Email)
		if seen[key] {
			c.fail(f, "names %s, a recipient already named", quote(a.Email))
			continue
		}
		seen[key] = true
		out = append(out, a)
	}
	return out
}

// attachments checks the attachments: at most MaxAttachments, each with a
// filename, a media type and base64 content that decodes.
func (c *checker) attachments(in []AttachmentInput) []outstore.NewAttachment {
	if len(in) > MaxAttachments {
		c.fail("attachments", "must hold at most %d attachments", MaxAttachments)
		return nil
	}
	var out []outstore.NewAttachment
	cids := map[string]bool{}
	for i, a := range in {
		f := fmt.Sprintf("attachments[%d]", i)
		var na outstore.NewAttachment
		ok := true
		switch {
		case strings.TrimSpace(a.Filename) == "":
			c.fail(f+".filename", "is required")
			ok = false
		case !c.text(f+".filename", a.Filename, maxFilename, true):
			ok = false
		default:
			na.Filename = strings.TrimSpace(a.Filename)
		}
		if strings.TrimSpace(a.ContentType) == "" {
			c.fail(f+".content_type", "is required")
			ok = false
		} else if ct, err := mediaType(a.ContentType); err != nil {
			c.fail(f+".content_type", "%v", err)
			ok = false
		} else {
			na.ContentType = ct
		}
		if a.ContentBase64 == nil {
			c.fail(f+".content_base64", "is required")
			ok = false
		} else if data, err := decodeBase64(*a.ContentBase64); err != nil {
			c.fail(f+".content_base64", "must be base64 (RFC 4648 section 4): %v", err)
			ok = false
		} else {
			na.Data = data
		}
		if a.ContentID != "" {
			cid := contentID(a.ContentID)
			switch {
			case !validContentID(cid):
				c.fail(f+".content_id", "must be 1 to %d printable ASCII characters without spaces or angle brackets inside", maxContentID)
				ok = false
			case cids[strings.ToLower(cid)]:
				c.fail(f+".content_id", "names %s, the Content-ID of another attachment", quote(cid))
				ok = false
			default:
				cids[strings.ToLower(cid)] = true
				na.ContentID = cid
			}
		}
		switch {
		case a.Disposition == "":
			// A part with a Content-ID is there to be shown in the HTML.
			na.Disposition = outstore.DispositionAttachment
			if na.ContentID != "" {
				na.Disposition = outstore.DispositionInline
			}
		case a.Disposition == outstore.DispositionAttachment || a.Disposition == outstore.DispositionInline:
			na.Disposition = a.Disposition
		default:
			c.fail(f+".disposition", "must be attachment or inline")
			ok = false
		}
		if ok {
			out = append(out, na)
		}
	}
	return out
}

// mediaType checks a content_type: a type and subtype (RFC 2045 section 5.1),
// not multipart, whose parts would have to be written by Catchbox, and
// returns it as it will be written.
func mediaType(v string) (string, error) {
	mt, params, err := mime.ParseMediaType(v)
	if err != nil || !utf8.ValidString(v) || !strings.Contains(mt, "/") || strings.HasPrefix(mt, "/") || strings.HasSuffix(mt, "/") {
		return "", fmt.Errorf("must be a media type such as application/pdf, not %s", quote(v))
	}
	if strings.HasPrefix(mt, "multipart/") {
		return "", fmt.Errorf("must not be multipart: attach the parts one by one")
	}
	out := mime.FormatMediaType(mt, params)
	if out == "" {
		return "", fmt.Errorf("must be a media type such as application/pdf, not %s", quote(v))
	}
	return out, nil
}

// decodeBase64 decodes standard base64 (RFC 4648 section 4), with or without
// padding, ignoring line breaks and spaces: encoders wrap lines.
func decodeBase64(v string) ([]byte, error) {
	v = strings.Map(func(r rune) rune {
		if r == ' ' || r == '\t' || r == '\r' || r == '\n' {
			return -1
		}
		return r
	}, v)
	if len(v)%4 != 0 {
		return base64.RawStdEncoding.Strict().DecodeString(v)
	}
	return base64.StdEncoding.Strict().DecodeString(v)
}

// contentID is a content_id as given without its optional angle brackets.
func contentID(v string) string {
	return strings.TrimSuffix(strings.TrimPrefix(strings.TrimSpace(v), "<"), ">")
}

// validContentID reports whether id can be written as a Content-ID
// (RFC 2045 section 7: a msg-id between angle brackets).
func validContentID(id string) bool {
	if id == "" || len(id) > maxContentID {
		return false
	}
	for i := 0; i < len(id); i++ {
		if id[i] <= ' ' || id[i] >= 0x7f || id[i] == '<' || id[i] == '>' {
			return false
		}
	}
	return true
}

// rules are what a kind of message requires (the seed's sending rules 4 and
// 5, and each endpoint's body).
type rules struct {
	subject   bool // a subject (send)
	body      bool // html or text (send, reply)
	recipient bool // a recipient across to, cc and bcc (send)
	to        bool // a to (forward)
	replyTo   bool // reply_to is a field (send)
}

var (
	newRules     = rules{subject: true, body: true, recipient: true, replyTo: true}
	replyRules   = rules{body: true}
	forwardRules = rules{to: true}
)

// check checks a request's fields in the seed's order (from, reply_to, to,
// cc, bcc, subject, html, text, attachments). derived are the recipients a
// reply takes from the email replied to, counted before the request's.
func (c *checker) check(in input, r rules, derived []outstore.Address) draft {
	var d draft
	d.From = c.address("from", in.From)
	if r.replyTo {
		d.ReplyTo = c.address("reply_to", in.ReplyTo)
	}
	switch {
	case r.to && len(in.To) == 0:
		c.fail("to", "is required: name at least one recipient")
	case r.recipient && len(in.To)+len(in.Cc)+len(in.Bcc) == 0:
		c.fail("to", "must name at least one recipient (to, cc and bcc are all empty)")
	}
	c.recipientLists(&d, derived, in.To, in.Cc, in.Bcc)
	// Readers trim a header's surrounding white space: so is it stored.
	if subject := strings.TrimSpace(in.Subject); c.text("subject", subject, MaxSubject, true) {
		d.Subject = subject
	}
	if r.subject && strings.TrimSpace(in.Subject) == "" {
		c.fail("subject", "is required")
	}
	if c.text("html", in.HTML, 0, false) {
		d.HTML = in.HTML
	}
	if c.text("text", in.Text, 0, false) {
		d.Text = in.Text
	}
	if r.body && in.HTML == "" && in.Text == "" {
		c.fail("html", "or text is required")
	}
	d.Attachments = c.attachments(in.Attachments)
	return d
}

// recipientLists checks to, cc and bcc after the derived recipients (a
// reply's), and the count across them.
func (c *checker) recipientLists(d *draft, derived []outstore.Address, to, cc, bcc []string) {
	if len(derived) > MaxRecipients {
		c.fail("to", "(the Reply-To of the email replied to) names %d addresses: at most %d recipients in total", len(derived), MaxRecipients)
		return
	}
	seen := map[string]bool{}
	for _, a := range derived {
		seen[strings.ToLower(a.Email)] = true
	}
	d.To = append(append([]outstore.Address(nil), derived...), c.list("to", to, seen)...)
	d.Derived = len(derived)
	d.Cc = c.list("cc", cc, seen)
	d.Bcc = c.list("bcc", bcc, seen)
	n := len(derived)
	for _, l := range []struct {
		field string
		n     int
	}{{"to", len(to)}, {"cc", len(cc)}, {"bcc", len(bcc)}} {
		n += l.n
		if n > MaxRecipients {
			detail := "brings the recipients to %d: at most %d in total across to, cc and bcc"
			if len(derived) > 0 {
				detail += ", the reply's recipient included"
			}
			c.fail(l.field, detail, n, MaxRecipients)
			break
		}
	}
}

// quote writes a value into an error detail, shortened.
func quote(s string) string {
	if len(s) > 80 {
		s = s[:77] + "..."
	}
	return fmt.Sprintf("%q", s)
}
