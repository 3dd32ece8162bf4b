package outbound_test

import (
	"bytes"
	"io"
	"strings"
	"testing"

	gomessage "github.com/emersion/go-message"
	_ "github.com/emersion/go-message/charset" // text parts in other charsets
	gomail "github.com/emersion/go-message/mail"
)

// part is one MIME entity of a built message as go-message reads it back:
// its header, its media type and parameters, its disposition, its body with
// the transfer encoding undone, and its parts.
type part struct {
	header      gomessage.Header
	mediaType   string
	params      map[string]string
	disposition string
	dispParams  map[string]string
	body        []byte
	parts       []*part
}

// readMIME parses a built message with go-message, independently of the
// package's own reader (internal/message), failing the test on anything
// go-message refuses.
func readMIME(t *testing.T, raw []byte) (gomail.Header, *part) {
	t.Helper()
	checkLines(t, raw)
	e, err := gomessage.Read(bytes.NewReader(raw))
	if err != nil {
		t.Fatalf("go-message cannot read the message: %v\n%s", err, raw)
	}
	return gomail.Header{Header: e.Header}, readEntity(t, e)
}

func readEntity(t *testing.T, e *gomessage.Entity) *part {
	t.Helper()
	p := &part{header: e.Header}
	var err error
	if p.mediaType, p.params, err = e.Header.ContentType(); err != nil {
		t.Fatalf("Content-Type %q: %v", e.Header.Get("Content-Type"), err)
	}
	if e.Header.Has("Content-Disposition") {
		if p.disposition, p.dispParams, err = e.Header.ContentDisposition(); err != nil {
			t.Fatalf("Content-Disposition %q: %v", e.Header.Get("Content-Disposition"), err)
		}
	}
	if mr := e.MultipartReader(); mr != nil {
		for {
			child, err := mr.NextPart()
			if err == io.EOF {
				break
			}
			if err != nil {
				t.Fatalf("next part of %s: %v", p.mediaType, err)
			}
			p.parts = append(p.parts, readEntity(t, child))
		}
		return p
	}
	if p.body, err = io.ReadAll(e.Body); err != nil {
		t.Fatalf("body of %s: %v", p.mediaType, err)
	}
	return p
}

// shape writes the structure of the MIME tree: "multipart/mixed[text/plain,
// application/pdf]".
func (p *part) shape() string {
	if len(p.parts) == 0 {
		return p.mediaType
	}
	var kids []string
	for _, c := range p.parts {
		kids = append(kids, c.shape())
	}
	return p.mediaType + "[" + strings.Join(kids, ",") + "]"
}

// find returns the leaves of the tree, depth first.
func (p *part) leaves() []*part {
	if len(p.parts) == 0 {
		return []*part{p}
	}
	var out []*part
	for _, c := range p.parts {
		out = append(out, c.leaves()...)
	}
	return out
}

// checkLines checks the message's lines: CRLF endings only (RFC 5322 section
// 2.1), none over 998 characters (section 2.1.1), nor over 78 but for the
// header fields that cannot be folded shorter, and only 7-bit characters
// outside the header.
func checkLines(t *testing.T, raw []byte) {
	t.Helper()
	if bytes.Contains(bytes.ReplaceAll(raw, []byte("\r\n"), nil), []byte("\n")) || bytes.Contains(bytes.ReplaceAll(raw, []byte("\r\n"), nil), []byte("\r")) {
		t.Errorf("the message has a bare LF or CR")
	}
	if !bytes.HasSuffix(raw, []byte("\r\n")) {
		t.Errorf("the message does not end with CRLF")
	}
	headerEnd := bytes.Index(raw, []byte("\r\n\r\n"))
	for i, line := range strings.Split(string(raw), "\r\n") {
		if len(line) > 998 {
			t.Errorf("line %d has %d characters: over RFC 5322's 998", i+1, len(line))
		}
		if len(line) > 78 {
			t.Errorf("line %d has %d characters, over 78: %.100s", i+1, len(line), line)
		}
	}
	for i, c := range raw[headerEnd:] {
		if c >= 0x80 {
			t.Errorf("8-bit byte %#x in the body at %d", c, headerEnd+i)
			break
		}
	}
}
