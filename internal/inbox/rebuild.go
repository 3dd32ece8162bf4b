package inbox

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"mime"
	"net/textproto"
	"sort"
	"time"

	gomessage "github.com/emersion/go-message"
	"github.com/emersion/go-message/mail"
)

// Source returns an email's message for the mail clients of IMAP and POP3:
// the bytes received, exactly, when its namespace captured them, and
// otherwise a rebuild (Rebuild). rebuilt tells which. It does not check the
// email's expiry or who may read it.
func (s *Searcher) Source(ctx context.Context, emailID string) (raw []byte, rebuilt bool, err error) {
	raw, err = s.RawMessage(ctx, emailID)
	if !errors.Is(err, ErrRawNotCaptured) {
		return raw, false, err
	}
	e, err := s.ByID(ctx, emailID)
	if err != nil {
		return nil, false, err
	}
	raw, err = s.Rebuild(ctx, e.Email)
	return raw, true, err
}

// rebuiltSkip are the header fields a rebuild writes itself.
var rebuiltSkip = map[string]bool{
	"from": true, "to": true, "cc": true, "bcc": true, "subject": true,
	"content-type": true, "content-transfer-encoding": true, "mime-version": true, "content-disposition": true,
}

// Rebuild writes an email whose raw source was not captured
// (capture_raw_email off) back into an RFC 5322 message, from what was kept:
// every header field with its value as stored (a repeated field once, its
// values joined with ", "), From, To, Cc and Subject encoded anew, the text
// and HTML bodies (multipart/alternative when both), and the attachments with
// their bytes, file names, types and content ids (multipart/mixed). Transfer
// encodings, MIME boundaries and the order of header fields are the
// rebuild's own; docs/imap.md says what differs from the original.
func (s *Searcher) Rebuild(ctx context.Context, e Email) ([]byte, error) {
	var h mail.Header
	names := make([]string, 0, len(e.Headers))
	for name := range e.Headers {
		if !rebuiltSkip[name] && validFieldName(name) {
			names = append(names, name)
		}
	}
	sort.Strings(names)
	for _, name := range names {
		h.Set(textproto.CanonicalMIMEHeaderKey(name), encodeHeaderValue(e.Headers[name]))
	}
	if h.Get("Date") == "" {
		h.SetDate(time.Unix(e.ReceivedTimestamp, 0).UTC())
	}
	if e.From.Address != "" || e.From.Name != "" {
		h.SetAddressList("From", []*mail.Address{{Name: e.From.Name, Address: e.From.Address}})
	}
	setAddresses(&h, "To", e.To)
	setAddresses(&h, "Cc", e.Cc)
	if e.Subject != "" {
		h.SetSubject(e.Subject)
	}
	h.Set("MIME-Version", "1.0")

	type part struct {
		header gomessage.Header
		body   []byte
	}
	var bodies []part
	if e.Text != "" || e.HTML == "" {
		var ph gomessage.Header
		ph.SetContentType("text/plain", map[string]string{"charset": "utf-8"})
		ph.Set("Content-Transfer-Encoding", "quoted-printable")
		bodies = append(bodies, part{ph, []byte(e.Text)})
	}
	if e.HTML != "" {
		var ph gomessage.Header
		ph.SetContentType("text/html", map[string]string{"charset": "utf-8"})
		ph.Set("Content-Transfer-Encoding", "quoted-printable")
		bodies = append(bodies, part{ph, []byte(e.HTML)})
	}
	var attachments []part
	for _, a := range e.Attachments {
		data, err := s.AttachmentData(ctx, a.ID)
		if err != nil {
			return nil, fmt.Errorf("rebuild email %s: %w", e.ID, err)
		}
		var ph gomessage.Header
		ph.SetContentType(a.ContentType, nil)
		disposition := "attachment"
		if a.ContentID != "" {
			disposition = "inline"
			ph.Set("Content-Id", "<"+a.ContentID+">")
		}
		ph.SetContentDisposition(disposition, map[string]string{"filename": a.Filename})
		ph.Set("Content-Transfer-Encoding", "base64")
		attachments = append(attachments, part{ph, data})
	}

	var buf bytes.Buffer
	write := func(w *gomessage.Writer, body []byte) error {
		if _, err := w.Write(body); err != nil {
			return err
		}
		return w.Close()
	}
	// The body: one part, or the alternatives together.
	writeBody := func(create func(gomessage.Header) (*gomessage.Writer, error)) error {
		if len(bodies) == 1 {
			w, err := create(bodies[0].header)
			if err != nil {
				return err
			}
			return write(w, bodies[0].body)
		}
		var ah gomessage.Header
		ah.SetContentType("multipart/alternative", nil)
		aw, err := create(ah)
		if err != nil {
			return err
		}
		for _, b := range bodies {
			w, err := aw.CreatePart(b.header)
			if err != nil {
				return err
			}
			if err := write(w, b.body); err != nil {
				return err
			}
		}
		return aw.Close()
	}
	top := func(ph gomessage.Header) (*gomessage.Writer, error) {
		for f := ph.Fields(); f.Next(); {
			h.Add(f.Key(), f.Value())
		}
		return gomessage.CreateWriter(&buf, h.Header)
	}
	var err error
	if len(attachments) == 0 {
		err = writeBody(top)
	} else {
		var mh gomessage.Header
		mh.SetContentType("multipart/mixed", nil)
		var mw *gomessage.Writer
		if mw, err = top(mh); err == nil {
			if err = writeBody(mw.CreatePart); err == nil {
				for _, a := range attachments {
					var w *gomessage.Writer
					if w, err = mw.CreatePart(a.header); err != nil {
						break
					}
					if err = write(w, a.body); err != nil {
						break
					}
				}
				if err == nil {
					err = mw.Close()
				}
			}
		}
	}
	if err != nil {
		return nil, fmt.Errorf("rebuild email %s: %w", e.ID, err)
	}
	return buf.Bytes(), nil
}

func setAddresses(h *mail.Header, field string, addrs []Address) {
	if len(addrs) == 0 {
		return
	}
	list := make([]*mail.Address, len(addrs))
	for i, a := range addrs {
		list[i] = &mail.Address{Name: a.Name, Address: a.Address}
	}
	h.SetAddressList(field, list)
}

// encodeHeaderValue keeps an ASCII value as it is and writes any other as
// RFC 2047 encoded words.
func encodeHeaderValue(v string) string {
	for i := 0; i < len(v); i++ {
		if v[i] >= 0x80 {
			return mime.QEncoding.Encode("utf-8", v)
		}
	}
	return v
}

// validFieldName reports whether name can be written as a header field name
// (RFC 5322 section 3.6.8: printable ASCII but the colon).
func validFieldName(name string) bool {
	if name == "" {
		return false
	}
	for i := 0; i < len(name); i++ {
		if name[i] <= ' ' || name[i] > '~' || name[i] == ':' {
			return false
		}
	}
	return true
}
