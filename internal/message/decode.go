package message

import (
	"bufio"
	"bytes"
	"io"
	"mime"
	"net/textproto"
	"strings"
	"unicode"
	"unicode/utf8"

	"golang.org/x/text/encoding"
	"golang.org/x/text/encoding/charmap"
	"golang.org/x/text/encoding/htmlindex"
	"golang.org/x/text/encoding/ianaindex"
	"golang.org/x/text/encoding/simplifiedchinese"
)

// fallbackCharset reads 8-bit header bytes that are not UTF-8 when the message
// declares no other charset: Windows-1252 is a superset of ISO-8859-1, which is
// what mailers that put raw Latin text in headers send.
const fallbackCharset = "windows-1252"

// lookupCharset returns the decoder of a MIME charset name (RFC 2978), by its
// WHATWG label first (which maps iso-8859-1 to windows-1252 and gb2312 to GBK, as
// browsers do) and then by its IANA name; nil when unknown. A few names mailers
// use that neither list knows are read too: UTF-7 (RFC 2152), HZ-GB-2312 (RFC
// 1842, which WHATWG maps to its replacement encoding but older mail still
// carries), 8859-N, and the names some Windows and Oracle software write.
func lookupCharset(name string) encoding.Encoding {
	name = strings.ToLower(strings.Trim(strings.TrimSpace(name), `"'`))
	switch {
	case name == "":
		return nil
	case name == "hz-gb-2312":
		return simplifiedchinese.HZGB2312
	case name == "utf-7" || name == "utf7":
		return utf7
	case strings.HasPrefix(name, "8859-") || strings.HasPrefix(name, "8859_"):
		name = "iso-8859-" + name[5:]
	case charsetAliases[name] != "":
		name = charsetAliases[name]
	}
	if e, err := htmlindex.Get(name); err == nil && e != nil {
		return e
	}
	if e, err := ianaindex.MIME.Encoding(name); err == nil && e != nil {
		return e
	}
	return nil
}

// charsetAliases are charset names neither WHATWG nor IANA lists: Windows code
// page and GDI charset numbers, and Oracle's name for Latin-1.
var charsetAliases = map[string]string{
	"cp932": "shift_jis", "cp-850": "ibm850", "136": "big5", "238": "windows-1250",
	"iso646-us": "us-ascii", "we8iso8859p1": "iso-8859-1",
}

// toUTF8 converts bytes in the named charset to UTF-8. Unknown charsets fall back
// to Windows-1252; what still is not valid UTF-8 is replaced by U+FFFD.
func toUTF8(b []byte, charset string) string {
	e := lookupCharset(charset)
	if e == nil || e == encoding.Nop {
		e = charmap.Windows1252
	}
	out, err := e.NewDecoder().Bytes(b)
	if err != nil {
		return strings.ToValidUTF8(string(b), "\uFFFD")
	}
	return strings.ToValidUTF8(string(out), "\uFFFD")
}

// wordDecoder decodes RFC 2047 encoded words in any charset lookupCharset knows.
// A charset may name a language after a '*' (RFC 2231 section 5:
// =?US-ASCII*EN?Q?Keith_Moore?=), which says nothing about the bytes and is
// dropped.
var wordDecoder = &mime.WordDecoder{CharsetReader: func(charset string, input io.Reader) (io.Reader, error) {
	charset, _, _ = strings.Cut(charset, "*")
	e := lookupCharset(charset)
	if e == nil {
		return nil, errUnknownCharset
	}
	return e.NewDecoder().Reader(input), nil
}}

type charsetError string

func (e charsetError) Error() string { return string(e) }

const errUnknownCharset = charsetError("unknown charset")

// decodeHeader decodes one header value: 8-bit bytes that are not UTF-8 are read
// in charset (else Windows-1252), then RFC 2047 encoded words are decoded (RFC 2047
// section 6.2: white space between adjacent encoded words is dropped). A word that
// does not decode is kept as it was sent. The result is valid UTF-8 without NUL.
func decodeHeader(v, charset string) string {
	if !utf8.ValidString(v) {
		if charset == "" {
			charset = fallbackCharset
		}
		v = toUTF8([]byte(v), charset)
	}
	return cleanText(decodeWords(v))
}

// decodeWords decodes the RFC 2047 encoded words in v and nothing else: a value
// whose words do not all decode is kept as it was sent.
func decodeWords(v string) string {
	if strings.Contains(v, "=?") {
		if d, err := wordDecoder.DecodeHeader(latin1Words(v)); err == nil {
			return d
		}
	}
	return v
}

// latin1Words relabels the encoded words of v that are in ISO-8859-1 as
// Windows-1252, which mime.WordDecoder would otherwise read itself as strict
// Latin-1: ISO-8859-1 is read as Windows-1252 everywhere (lookupCharset), so that
// the bytes 0x80-0x9F are the characters the sender saw ("€", curly quotes)
// rather than C1 control characters.
func latin1Words(v string) string {
	const latin1 = "=?iso-8859-1?"
	i := indexFoldASCII(v, latin1)
	if i < 0 {
		return v
	}
	var b strings.Builder
	for i >= 0 {
		b.WriteString(v[:i])
		b.WriteString("=?windows-1252?")
		v = v[i+len(latin1):]
		i = indexFoldASCII(v, latin1)
	}
	b.WriteString(v)
	return b.String()
}

// indexFoldASCII is strings.Index for a lower-case ASCII needle, ignoring case.
func indexFoldASCII(s, needle string) int {
	for i := 0; i+len(needle) <= len(s); i++ {
		j := strings.IndexByte(s[i:], needle[0])
		if j < 0 {
			return -1
		}
		i += j
		if i+len(needle) <= len(s) && strings.EqualFold(s[i:i+len(needle)], needle) {
			return i
		}
	}
	return -1
}

// headerEnd returns the length of the header block of msg, up to but not including
// the blank line that ends it (all of msg when there is none).
func headerEnd(msg []byte) int {
	for i := 0; i < len(msg); {
		j := bytes.IndexByte(msg[i:], '\n')
		if j < 0 {
			return len(msg)
		}
		line := msg[i : i+j]
		if len(line) == 0 || (len(line) == 1 && line[0] == '\r') {
			return i
		}
		i += j + 1
	}
	return len(msg)
}

// bodyStart returns the offset of msg's body, after the blank line that ends the
// header block (len(msg) when there is none).
func bodyStart(msg []byte) int {
	i := headerEnd(msg)
	if i < len(msg) && msg[i] == '\r' {
		i++
	}
	if i < len(msg) && msg[i] == '\n' {
		i++
	}
	return i
}

// utf8Headers returns raw with its top-level header block converted to UTF-8 when
// the block holds 8-bit bytes that are not UTF-8 (RFC 6532 allows UTF-8 there;
// older mailers send their own charset). Lines that are UTF-8 already are left as
// they are, so SMTPUTF8 addresses survive. The body is never touched, and raw itself
// is returned, uncopied, in the usual case.
func utf8Headers(raw []byte) []byte {
	end := headerEnd(raw)
	block := raw[:end]
	if utf8.Valid(block) {
		return raw
	}
	charset := fallbackCharset
	tp := textproto.NewReader(bufio.NewReader(io.MultiReader(bytes.NewReader(block), strings.NewReader("\r\n\r\n"))))
	if h, _ := tp.ReadMIMEHeader(); h != nil {
		if _, params, err := mime.ParseMediaType(h.Get("Content-Type")); err == nil {
			if cs := strings.ToLower(params["charset"]); cs != "" && cs != "utf-8" && cs != "us-ascii" && lookupCharset(cs) != nil {
				charset = cs
			}
		}
	}
	out := make([]byte, 0, len(raw)+len(block)/2)
	for len(block) > 0 {
		line := block
		if i := bytes.IndexByte(block, '\n'); i >= 0 {
			line = block[:i+1]
		}
		block = block[len(line):]
		if utf8.Valid(line) {
			out = append(out, line...)
		} else {
			out = append(out, toUTF8(line, charset)...)
		}
	}
	return append(out, raw[end:]...)
}

// cleanFilename makes an attachment's file name safe to return and to offer as a
// download name. RFC 2231 parameters (the filename*=charset'language'value form,
// continuations included) are already decoded (parseMediaType); here RFC 2047
// words in the name are decoded, a raw 8-bit name is read in the part's charset,
// any directory part is dropped (a name like "../../x" or "C:\x" names a file,
// not a path), control characters become spaces, and the result is at most
// maxFilenameRunes. It returns "" when nothing is left.
func cleanFilename(name, charset string) string {
	name = decodeHeader(name, charset)
	if i := strings.LastIndexAny(name, `/\`); i >= 0 {
		name = name[i+1:]
	}
	name = strings.Map(func(r rune) rune {
		// Format characters include the bidirectional overrides that make
		// "invoice\u202Efdp.exe" look like a PDF; the joiners emoji and some
		// scripts need are kept.
		if unicode.IsControl(r) || r == utf8.RuneError || (unicode.Is(unicode.Cf, r) && r != '\u200c' && r != '\u200d') {
			return ' '
		}
		return r
	}, name)
	name = strings.Join(strings.Fields(name), " ")
	if name == "." || name == ".." {
		return ""
	}
	return truncateRunes(name, maxFilenameRunes)
}
