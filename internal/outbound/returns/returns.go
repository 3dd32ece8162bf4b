// Package returns reads the reports that come back to the return paths of
// outbound mail. A delivery status notification (RFC 3464) and a feedback
// report (RFC 5965, ARF) are both multipart/report (RFC 6522): a
// human-readable part, a machine-readable part named by the report-type
// parameter, and the original message or its header. Only the machine-readable
// part is read, and the original's recipients when a feedback report names
// none; everything else a return path receives (auto-replies, reports of other
// types, malformed ones) is not a report.
//
// The MIME structure is read by internal/message, Catchbox's one MIME reader;
// the machine-readable part's fields, blocks of header fields (RFC 3464
// section 2.1), by net/textproto. The package records nothing: outbound.Returns
// turns a Report into the events of the recipients it names.
package returns

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/mail"
	"net/textproto"
	"strings"

	"github.com/catchbox/catchbox/internal/message"
)

// Limits on what a report may make the server do: each block of a delivery
// status is a recipient, each recipient an event.
const (
	// MaxRecipients is the most per-recipient blocks read from one delivery
	// status notification, or recipients named by one feedback report; the
	// rest are ignored.
	MaxRecipients = 100
	// maxPart bounds the bytes read of the machine-readable part (RFC 3464
	// fields are a few hundred bytes per recipient) and of the original.
	maxPart = 256 << 10
	// maxDepth bounds how deep the report is looked for in nested
	// multiparts (some relays wrap it once more).
	maxDepth = 3
	// maxField bounds a field value kept from a report.
	maxField = 1000
)

// ErrNotReport: the message is not a delivery status notification or a
// feedback report (an auto-reply, a report of another type, a malformed one).
var ErrNotReport = errors.New("not a delivery status notification or feedback report")

// Kind is what a report is: its report-type.
type Kind string

// Kinds of report.
const (
	DSN      Kind = "delivery-status" // RFC 3464
	Feedback Kind = "feedback-report" // RFC 5965
)

// Report is what a report sent back to a return path says.
type Report struct {
	Kind Kind
	// ID identifies the report: its Message-ID, or a hash of its
	// machine-readable part when it has none. A report delivered twice has
	// the same ID, which makes recording it again a no-op.
	ID string
	// Recipients are the per-recipient blocks of a DSN, in order.
	Recipients []Recipient
	// FeedbackType is a feedback report's Feedback-Type (abuse, fraud,
	// virus, other, not-spam; RFC 5965 section 7.3), lower case.
	FeedbackType string
	// Complained are the addresses a feedback report names: its
	// Original-Rcpt-To fields, else the To and Cc of the attached original
	// message (or its header).
	Complained []string
}

// Recipient is one per-recipient block of a DSN (RFC 3464 section 2.3).
type Recipient struct {
	// Original is Original-Recipient's address, as the sender gave it in RCPT
	// TO; Final is Final-Recipient's. Either may be empty.
	Original, Final string
	Action          string // failed, delayed, delivered, relayed, expanded (lower case)
	Status          string // the enhanced status code, e.g. 5.1.1 (RFC 3463)
	// DiagnosticCode is the Diagnostic-Code as it is ("smtp; 550 5.1.1 ...");
	// SMTPCode is its reply code when the type is smtp.
	DiagnosticCode string
	SMTPCode       string
	RemoteMTA      string // Remote-MTA's name, without its type
}

// Parse reads a message sent to a return path. It returns ErrNotReport for a
// message that is neither kind of report, or one whose machine-readable part
// cannot be read.
func Parse(raw []byte) (Report, error) {
	root, ok := message.Tree(raw)
	if !ok {
		return Report{}, fmt.Errorf("%w: the message cannot be read as MIME", ErrNotReport)
	}
	rep, err := find(root, 0)
	if err != nil {
		return Report{}, err
	}
	if id := strings.TrimSpace(root.Get("Message-Id")); id != "" {
		rep.ID = "mid:" + hashOf([]byte(id))
	}
	return rep, nil
}

// find looks for a multipart/report of a known type in p, depth levels down
// already.
func find(p message.Part, depth int) (Report, error) {
	mt := p.MediaType()
	parts := p.Parts()
	if !strings.HasPrefix(mt, "multipart/") || depth > maxDepth || parts == nil {
		return Report{}, ErrNotReport
	}
	kind := Kind(strings.ToLower(p.Param("report-type")))
	var rep Report
	found := false
	var original *message.Part
	for _, c := range parts {
		pt := c.MediaType()
		var err error
		switch {
		case mt == "multipart/report" && !found && kind == DSN &&
			(pt == "message/delivery-status" || pt == "message/global-delivery-status"):
			if rep, err = readDSN(c.Body()); err != nil {
				return Report{}, err
			}
			found = true
		case mt == "multipart/report" && !found && kind == Feedback && pt == "message/feedback-report":
			if rep, err = readFeedback(c.Body()); err != nil {
				return Report{}, err
			}
			found = true
		case mt == "multipart/report" && kind == Feedback && original == nil &&
			(pt == "message/rfc822" || pt == "text/rfc822-headers" || pt == "message/global" || pt == "message/global-headers"):
			if o, ok := message.Tree(limit(c.Body())); ok {
				original = &o
			} else {
				slog.Debug("A feedback report's original message is unreadable")
			}
		case strings.HasPrefix(pt, "multipart/") && !found:
			if r, err := find(c, depth+1); err == nil {
				return r, nil
			}
		}
	}
	if !found {
		return Report{}, ErrNotReport
	}
	if rep.Kind == Feedback && len(rep.Complained) == 0 && original != nil {
		rep.Complained = headerAddresses(*original, "To", "Cc")
	}
	return rep, nil
}

// limit is b cut to maxPart bytes.
func limit(b []byte) []byte { return b[:min(len(b), maxPart)] }

// readDSN reads a message/delivery-status body: the per-message fields, then
// one block of fields per recipient, blocks separated by blank lines (RFC
// 3464 section 2.1).
func readDSN(body []byte) (Report, error) {
	data, blocks, err := readBlocks(body)
	if err != nil {
		return Report{}, err
	}
	rep := Report{Kind: DSN, ID: "dsn:" + hashOf(data)}
	if len(blocks) < 2 {
		return Report{}, fmt.Errorf("%w: a delivery status without a recipient block", ErrNotReport)
	}
	for _, b := range blocks[1:] {
		r := Recipient{
			Original:       typedValue(b.Get("Original-Recipient")),
			Final:          typedValue(b.Get("Final-Recipient")),
			Action:         strings.ToLower(field(b.Get("Action"))),
			Status:         statusCode(b.Get("Status")),
			DiagnosticCode: field(b.Get("Diagnostic-Code")),
			RemoteMTA:      typedValue(b.Get("Remote-MTA")),
		}
		if r.Original == "" && r.Final == "" {
			continue
		}
		r.SMTPCode = diagnosticSMTPCode(r.DiagnosticCode)
		rep.Recipients = append(rep.Recipients, r)
		if len(rep.Recipients) == MaxRecipients {
			break
		}
	}
	if len(rep.Recipients) == 0 {
		return Report{}, fmt.Errorf("%w: no recipient block names a recipient", ErrNotReport)
	}
	return rep, nil
}

// readFeedback reads a message/feedback-report body (RFC 5965 section 3.1):
// one block of fields.
func readFeedback(body []byte) (Report, error) {
	data, blocks, err := readBlocks(body)
	if err != nil {
		return Report{}, err
	}
	if len(blocks) == 0 {
		return Report{}, fmt.Errorf("%w: an empty feedback report", ErrNotReport)
	}
	b := blocks[0]
	rep := Report{Kind: Feedback, ID: "arf:" + hashOf(data),
		FeedbackType: strings.ToLower(field(b.Get("Feedback-Type")))}
	if rep.FeedbackType == "" {
		return Report{}, fmt.Errorf("%w: a feedback report without Feedback-Type", ErrNotReport)
	}
	for _, v := range b.Values("Original-Rcpt-To") {
		if a := bareAddress(v); a != "" && len(rep.Complained) < MaxRecipients {
			rep.Complained = append(rep.Complained, a)
		}
	}
	return rep, nil
}

// readBlocks reads blocks of header fields separated by blank lines, at most
// maxPart bytes and MaxRecipients+1 blocks, and returns the bytes read as
// well.
func readBlocks(body []byte) ([]byte, []textproto.MIMEHeader, error) {
	data := limit(body)
	// Blank lines before a block, or several between two, are allowed.
	r := textproto.NewReader(bufio.NewReader(bytes.NewReader(data)))
	var blocks []textproto.MIMEHeader
	for len(blocks) <= MaxRecipients {
		for {
			b, err := r.R.Peek(1)
			if err != nil || (b[0] != '\r' && b[0] != '\n') {
				break
			}
			r.R.ReadByte()
		}
		if _, err := r.R.Peek(1); err != nil {
			break
		}
		h, err := r.ReadMIMEHeader()
		if len(h) > 0 {
			blocks = append(blocks, h)
		}
		if err != nil {
			if errors.Is(err, io.EOF) {
				break
			}
			return nil, nil, fmt.Errorf("%w: %w", ErrNotReport, err)
		}
	}
	return data, blocks, nil
}

// field is a field's value, comments and folding aside, bounded.
func field(v string) string {
	v = strings.Join(strings.Fields(v), " ")
	if len(v) > maxField {
		v = v[:maxField]
	}
	return v
}

// typedValue is the value of a typed field ("rfc822; user@example.com",
// "dns; mx.example.com") without its type.
func typedValue(v string) string {
	v = field(v)
	if _, after, ok := strings.Cut(v, ";"); ok {
		v = strings.TrimSpace(after)
	}
	return strings.Trim(v, "<>")
}

// statusCode is the enhanced status code of a Status field (RFC 3464 section
// 2.3.4: class.subject.detail, then maybe a comment), "" if malformed.
func statusCode(v string) string {
	v = field(v)
	if i := strings.IndexAny(v, " (\t"); i >= 0 {
		v = v[:i]
	}
	parts := strings.Split(v, ".")
	if len(parts) != 3 || len(parts[0]) != 1 || !strings.Contains("245", parts[0]) {
		return ""
	}
	for _, p := range parts[1:] {
		if p == "" || len(p) > 3 || strings.Trim(p, "0123456789") != "" {
			return ""
		}
	}
	return v
}

// diagnosticSMTPCode is the reply code of an smtp Diagnostic-Code ("smtp; 550
// 5.1.1 ..."), "" when there is none.
func diagnosticSMTPCode(v string) string {
	typ, text, ok := strings.Cut(v, ";")
	if !ok || !strings.EqualFold(strings.TrimSpace(typ), "smtp") {
		return ""
	}
	text = strings.TrimSpace(text)
	if len(text) >= 3 && strings.Trim(text[:3], "0123456789") == "" && text[0] >= '2' && text[0] <= '5' &&
		(len(text) == 3 || text[3] == ' ' || text[3] == '-') {
		return text[:3]
	}
	return ""
}

// bareAddress is the address of a field holding one, angle brackets and
// display name removed; "" if it holds none.
func bareAddress(v string) string {
	v = field(v)
	if a, err := mail.ParseAddress(v); err == nil {
		return a.Address
	}
	v = strings.Trim(v, "<> ")
	if strings.Count(v, "@") == 1 && !strings.ContainsAny(v, " ,;") {
		return v
	}
	return ""
}

// headerAddresses are the addresses of the named header fields of p.
func headerAddresses(p message.Part, names ...string) []string {
	var out []string
	for _, n := range names {
		for _, v := range p.Values(n) {
			list, err := mail.ParseAddressList(v)
			if err != nil {
				if a := bareAddress(v); a != "" && len(out) < MaxRecipients {
					out = append(out, a)
				}
				continue
			}
			for _, a := range list {
				if len(out) < MaxRecipients {
					out = append(out, a.Address)
				}
			}
		}
	}
	return out
}

func hashOf(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:12])
}
