package message

import (
	"bytes"
	"encoding/base64"
	"strings"
	"unicode/utf8"

	"golang.org/x/text/encoding"
	"golang.org/x/text/encoding/charmap"
	"golang.org/x/text/encoding/unicode"
)

// decodeTransfer undoes a Content-Transfer-Encoding (RFC 2045 section 6), given
// in lower case. Identity encodings and unknown ones give the body itself, not a
// copy; known is false for an unknown encoding.
func decodeTransfer(encoding string, body []byte) (data []byte, known bool) {
	switch encoding {
	case "base64":
		return decodeBase64(body), true
	case "quoted-printable":
		return decodeQuotedPrintable(body), true
	case "", "7bit", "8bit", "binary":
		return body, true
	}
	return body, false
}

// decodeBase64 decodes a base64 body (RFC 2045 section 6.8) leniently: characters
// outside the alphabet are skipped, padding may be missing or misplaced, and a
// lone character left at the end is dropped. Well-formed bodies, lines of the
// alphabet ending in padding, are decoded in bulk.
func decodeBase64(body []byte) []byte {
	// Room for the bytes of every character, padding or not.
	out := make([]byte, base64.RawStdEncoding.DecodedLen(len(body)))
	if n, err := base64.StdEncoding.Decode(out, body); err == nil {
		return out[:n]
	}
	clean := make([]byte, 0, len(body))
	for _, c := range body {
		if base64Alphabet[c] {
			clean = append(clean, c)
		}
	}
	if len(clean)%4 == 1 {
		clean = clean[:len(clean)-1]
	}
	n, _ := base64.RawStdEncoding.Decode(out, clean)
	return out[:n]
}

var base64Alphabet = func() (t [256]bool) {
	for _, c := range []byte("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/") {
		t[c] = true
	}
	return t
}()

// decodeQuotedPrintable decodes a quoted-printable body (RFC 2045 section 6.7)
// and never fails:
//
//   - =XX (hexadecimal digits in either case) is the byte XX;
//   - white space at the end of a line is dropped (rule 3: transports add it);
//   - a line that then ends in '=' is joined to the next (a soft line break,
//     rule 5), even with nothing after it, as before a boundary;
//   - an '=' not followed by two hexadecimal digits is kept as it is, and so are
//     bytes that should have been encoded;
//   - lines end in CRLF or LF, kept as they were.
func decodeQuotedPrintable(body []byte) []byte {
	out := make([]byte, 0, len(body))
	for len(body) > 0 {
		line := body
		var eol []byte
		if i := bytes.IndexByte(body, '\n'); i >= 0 {
			line, body = body[:i+1], body[i+1:]
			eol = line[i:]
			if i > 0 && line[i-1] == '\r' {
				eol = line[i-1:]
			}
		} else {
			body = nil
		}
		line = bytes.TrimRight(line, " \t\r\n")
		soft := len(line) > 0 && line[len(line)-1] == '='
		if soft {
			line = line[:len(line)-1]
		}
		for len(line) > 0 {
			i := bytes.IndexByte(line, '=')
			if i < 0 {
				out = append(out, line...)
				break
			}
			out = append(out, line[:i]...)
			if i+2 < len(line) && unhex(line[i+1]) >= 0 && unhex(line[i+2]) >= 0 {
				out = append(out, byte(unhex(line[i+1])<<4|unhex(line[i+2])))
				line = line[i+3:]
				continue
			}
			out = append(out, '=')
			line = line[i+1:]
		}
		if !soft {
			out = append(out, eol...)
		}
	}
	return out
}

// textToUTF8 converts the bytes of a text part to UTF-8 from the charset it
// declares (RFC 2046 section 4.1.2). An HTML part that declares none may name one
// in a meta tag, as browsers read it. Without a charset, bytes that are UTF-8
// are kept and others read as Windows-1252, as in headers. A charset that is not
// known leaves the bytes as they are.
func textToUTF8(b []byte, charset string, html bool) string {
	if charset != "" {
		return decodeCharset(b, bodyCharset(charset))
	}
	if html {
		if e := lookupCharset(htmlMetaCharset(b)); e != nil {
			return decodeCharset(b, e)
		}
	}
	if utf8.Valid(b) {
		return string(b)
	}
	return decodeCharset(b, charmap.Windows1252)
}

// bodyCharset looks up the charset a part declares, also when the declaration
// repeats its name (charset="charset=utf-8").
func bodyCharset(label string) encoding.Encoding {
	if e := lookupCharset(label); e != nil {
		return e
	}
	if name, value, ok := strings.Cut(label, "="); ok && strings.EqualFold(strings.TrimSpace(name), "charset") {
		return lookupCharset(value)
	}
	return nil
}

// decodeCharset converts b from e to UTF-8; a nil e, or UTF-8, keeps b as it is.
// Bytes that are not valid in e are left for cleanBody to replace.
func decodeCharset(b []byte, e encoding.Encoding) string {
	if e == nil || e == unicode.UTF8 || e == encoding.Nop {
		return string(b)
	}
	out, err := e.NewDecoder().Bytes(b)
	if err != nil {
		return string(b)
	}
	return string(out)
}

// htmlMetaCharset finds the charset an HTML document names in a meta tag, either
// <meta charset="x"> or <meta http-equiv="Content-Type" content="text/html;
// charset=x">: the last charset= on the first line that has one after "<meta".
func htmlMetaCharset(b []byte) string {
	for from := 0; ; {
		i := indexMeta(b[from:])
		if i < 0 {
			return ""
		}
		start := from + i + len("<meta")
		end := len(b)
		if j := bytes.IndexByte(b[start:], '\n'); j >= 0 {
			end = start + j
		}
		line := b[start:end]
		for k := len(line) - len("charset="); k >= 0; k-- {
			if !bytes.EqualFold(line[k:k+len("charset=")], []byte("charset=")) {
				continue
			}
			// The name may be quoted and follow white space, even a line break.
			v := b[start+k+len("charset="):]
			if len(v) > 0 && v[0] == '"' {
				v = v[1:]
			}
			v = bytes.TrimLeft(v, " \t\r\n\f")
			n := 0
			for n < len(v) && isCharsetNameByte(v[n]) {
				n++
			}
			if n > 0 {
				return string(v[:n])
			}
		}
		from = end
	}
}

func isCharsetNameByte(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '_' || c == '.' || c == ':' || c == '-'
}

// indexMeta is the index of the first "<meta" in b, in any case.
func indexMeta(b []byte) int {
	for i := 0; ; {
		j := bytes.IndexByte(b[i:], '<')
		if j < 0 {
			return -1
		}
		i += j
		if i+5 <= len(b) && bytes.EqualFold(b[i+1:i+5], []byte("meta")) {
			return i
		}
		i++
	}
}
