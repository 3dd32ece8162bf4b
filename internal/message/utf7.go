package message

import (
	"unicode/utf16"
	"unicode/utf8"

	"golang.org/x/text/encoding"
	"golang.org/x/text/transform"
)

// utf7 is the UTF-7 charset (RFC 2152), which some mailers offered for mail: its
// decoder only, as Catchbox reads mail and never writes it in UTF-7.
var utf7 encoding.Encoding = utf7Encoding{}

type utf7Encoding struct{}

func (utf7Encoding) NewDecoder() *encoding.Decoder {
	return &encoding.Decoder{Transformer: &utf7Decoder{}}
}

// NewEncoder returns an encoder that replaces everything, as UTF-7 is never
// written.
func (utf7Encoding) NewEncoder() *encoding.Encoder {
	return encoding.Replacement.NewEncoder()
}

// utf7Decoder decodes UTF-7 to UTF-8. Text is ASCII as it is, except "+": "+-" is
// a plus sign, and "+" followed by modified base64 is UTF-16 (surrogate pairs
// included), ended by any other character, a "-" being absorbed. Bytes outside
// ASCII and unpaired surrogates become U+FFFD.
type utf7Decoder struct {
	shifted bool   // inside a base64 run
	fresh   bool   // no base64 character read since the "+"
	bits    uint32 // base64 bits not yet decoded
	nbits   uint
	high    rune // a high surrogate waiting for its low half
}

func (d *utf7Decoder) Reset() { *d = utf7Decoder{} }

func (d *utf7Decoder) Transform(dst, src []byte, atEOF bool) (nDst, nSrc int, err error) {
	emit := func(r rune) bool {
		if nDst+utf8.UTFMax > len(dst) {
			return false
		}
		nDst += utf8.EncodeRune(dst[nDst:], r)
		return true
	}
	for nSrc < len(src) {
		c := src[nSrc]
		if d.shifted {
			if v := base64Value(c); v >= 0 {
				d.bits = d.bits<<6 | uint32(v)
				d.nbits += 6
				d.fresh = false
				if d.nbits >= 16 {
					unit := rune(d.bits >> (d.nbits - 16) & 0xffff)
					var r rune = -1
					switch {
					case d.high != 0 && utf16.IsSurrogate(unit) && unit >= 0xdc00:
						r = utf16.DecodeRune(d.high, unit)
					case d.high != 0:
						if !emit(utf8.RuneError) {
							return nDst, nSrc, transform.ErrShortDst
						}
						d.high = 0
						fallthrough
					default:
						switch {
						case unit >= 0xd800 && unit < 0xdc00:
							d.high = unit
						case unit >= 0xdc00 && unit < 0xe000:
							r = utf8.RuneError
						default:
							r = unit
						}
					}
					if r >= 0 {
						if !emit(r) {
							return nDst, nSrc, transform.ErrShortDst
						}
						d.high = 0
					}
					d.nbits -= 16
				}
				nSrc++
				continue
			}
			// The run ends; a "-" right after "+" is a plus sign.
			if d.high != 0 {
				if !emit(utf8.RuneError) {
					return nDst, nSrc, transform.ErrShortDst
				}
				d.high = 0
			}
			if c == '-' {
				if d.fresh && !emit('+') {
					return nDst, nSrc, transform.ErrShortDst
				}
				d.shifted, d.bits, d.nbits = false, 0, 0
				nSrc++
				continue
			}
			d.shifted, d.bits, d.nbits = false, 0, 0
		}
		if c == '+' {
			d.shifted, d.fresh = true, true
			nSrc++
			continue
		}
		r := rune(c)
		if c >= utf8.RuneSelf {
			r = utf8.RuneError
		}
		if !emit(r) {
			return nDst, nSrc, transform.ErrShortDst
		}
		nSrc++
	}
	if atEOF && d.high != 0 {
		if !emit(utf8.RuneError) {
			return nDst, nSrc, transform.ErrShortDst
		}
		d.high = 0
	}
	return nDst, nSrc, nil
}

// base64Value is the value of a base64 character, or -1.
func base64Value(c byte) int {
	switch {
	case 'A' <= c && c <= 'Z':
		return int(c - 'A')
	case 'a' <= c && c <= 'z':
		return int(c-'a') + 26
	case '0' <= c && c <= '9':
		return int(c-'0') + 52
	case c == '+':
		return 62
	case c == '/':
		return 63
	}
	return -1
}
