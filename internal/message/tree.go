package message

import "strings"

// Part is one node of a message's MIME tree (RFC 2046), for a reader that
// needs the structure Parse flattens: a delivery status notification's
// machine-readable part is found by its place in a multipart/report (RFC
// 6522), not by being an attachment. It reads as leniently as Parse, with the
// same limits.
type Part struct{ p *mimePart }

// Tree reads the MIME structure of raw and returns its root. ok is false when
// raw cannot be read as MIME: its header block does not start with a field,
// its Content-Type cannot be read, or it is a multipart without a boundary
// parameter. The parts' bodies are slices of raw, which must not change.
func Tree(raw []byte) (root Part, ok bool) {
	p, ok := readMIME(raw)
	if !ok {
		return Part{}, false
	}
	return Part{p}, true
}

// Get returns the first value of the named header field (the name's case is
// ignored), unfolded, encoded words as sent; "" when the part has none.
func (p Part) Get(name string) string { return p.p.header.get(name) }

// Values returns every value of the named header field, in order.
func (p Part) Values(name string) []string {
	var out []string
	for _, f := range p.p.header {
		if len(f.name) == len(name) && strings.EqualFold(f.name, name) {
			out = append(out, f.value)
		}
	}
	return out
}

// MediaType is the Content-Type's media type in lower case: text/plain for a
// message without one, "" for a part without one (RFC 2045 section 5.2 makes
// it text/plain) or whose value cannot be read.
func (p Part) MediaType() string { return p.p.contentType }

// Param returns the Content-Type parameter of the lower-case name, RFC 2231
// continuations joined; "" when absent.
func (p Part) Param(name string) string { return p.p.params[name] }

// Parts are the parts of a multipart, in order; nil for a leaf, and for a
// multipart whose boundary parameter is missing.
func (p Part) Parts() []Part {
	if len(p.p.children) == 0 {
		return nil
	}
	out := make([]Part, len(p.p.children))
	for i, c := range p.p.children {
		out[i] = Part{c}
	}
	return out
}

// Body is the body of a leaf with its transfer encoding undone (a body in an
// unknown encoding as sent); nil for a multipart read as one.
func (p Part) Body() []byte { return p.p.content() }
