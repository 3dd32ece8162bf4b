package smtpd

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"reflect"
	"sync"

	"github.com/emersion/go-smtp"
)

// Reading DATA (RFC 5321 section 4.1.1.4 and 4.5.2).
//
// A message sent with DATA ends with a line holding a single period: the
// octets CR LF . CR LF, where the first CR LF ends the message's last line.
// A line of the message that begins with a period was sent with one more
// period in front (dot-stuffing, section 4.5.2), which the receiver removes.
// A line ends at CR LF and nowhere else: a bare LF or a bare CR is a character
// of the line, so LF . LF, LF . CR LF and CR . CR LF never end the data
// (SMTP smuggling, where a second message hides in the first one, needs a
// receiver that takes one of them for the end).
//
// go-smtp v0.25.1 reads DATA with a state machine adapted from
// net/textproto's that keeps CR LF, but in doing so lost two of
// textproto's steps: a CR that follows a CR no longer counts as the start of
// a possible line end, and a CR after a line's leading period is dropped when
// no LF follows it. So a message whose last line ends CR CR LF was never
// ended by the . CR LF after it (the client waited for a reply that never
// came, until the idle timeout), and a dot-stuffed line after CR CR LF kept
// its extra period. Catchbox therefore reads DATA itself, from go-smtp's
// buffered reader of the connection, with the rule above: readDot. It leaves
// the closing . CR LF in the buffer for go-smtp's reader, which then ends at
// once, so go-smtp's connection goes on exactly as after its own reading.
// BDAT (RFC 3030) carries counted chunks, no dot-stuffing, and is read by
// go-smtp's code. TestDataEnd fails if a go-smtp upgrade moves what this
// relies on.

// errNotDot says the reader given to Data is BDAT's, not DATA's.
var errNotDot = errors.New("smtpd: not a DATA reader")

// dotBuffer returns the buffered reader of the connection under go-smtp's
// DATA reader r: the unexported field r of go-smtp's dataReader, the first
// thing it reads from. Under BDAT, r is the pipe go-smtp fills with chunks and
// dotBuffer returns errNotDot. A go-smtp whose DATA reader has another shape
// gives errUnknownDataReader, logged once by the caller, and its own reading
// is used.
func dotBuffer(r io.Reader) (*bufio.Reader, error) {
	if _, ok := r.(*io.PipeReader); ok {
		return nil, errNotDot
	}
	v := reflect.ValueOf(r)
	if v.Kind() != reflect.Pointer || v.IsNil() {
		return nil, errUnknownDataReader
	}
	e := v.Elem()
	if e.Kind() != reflect.Struct || e.Type().PkgPath() != smtpPkgPath || e.Type().Name() != "dataReader" {
		return nil, errUnknownDataReader
	}
	f := e.FieldByName("r")
	if !f.IsValid() || f.Type() != reflect.TypeFor[*bufio.Reader]() || f.IsNil() {
		return nil, errUnknownDataReader
	}
	// A field's value may be read through reflection without exporting it;
	// the pointer is go-smtp's own *bufio.Reader, used only while Data runs,
	// when go-smtp itself does not touch it.
	return (*bufio.Reader)(f.UnsafePointer()), nil
}

// smtpPkgPath is go-smtp's import path, where its DATA reader type lives.
var smtpPkgPath = reflect.TypeFor[smtp.SMTPError]().PkgPath()

// errUnknownDataReader says go-smtp's DATA reader is not the shape dotBuffer
// knows (a go-smtp upgrade): its own reading is used instead.
var errUnknownDataReader = errors.New("smtpd: go-smtp's DATA reader has an unknown shape")

// unknownDataReader logs the fallback to go-smtp's reading once.
var unknownDataReader sync.Once

// errDotTooBig reports a message over the size limit; readDot read it to its
// end all the same, so the connection can go on.
var errDotTooBig = errors.New("smtpd: message over the size limit")

// readDot reads a message sent with DATA from br: it removes the stuffing
// period of each line that has one, stops before the closing . CR LF (left
// in br), and returns the message with its CR LF line ends, the last line's
// included. A message longer than max is read to its end and dropped
// (errDotTooBig), so that the reply comes after the client's end of data.
// A read error (a timeout, the connection closed, go-smtp's line length
// limit) is returned as it is.
func readDot(br *bufio.Reader, max int64) ([]byte, error) {
	var out bytes.Buffer
	var n int64
	tooBig := false
	lineStart := true // at the first octet of a line: after CR LF, or the first of the message
	prevCR := false   // the last octet read was a CR
	for {
		if lineStart {
			p, err := br.Peek(1)
			if err != nil {
				return nil, unexpectedEOF(err)
			}
			if p[0] == '.' {
				p, err = br.Peek(3)
				if err != nil {
					return nil, unexpectedEOF(err)
				}
				if p[1] == '\r' && p[2] == '\n' {
					if tooBig {
						return nil, errDotTooBig
					}
					return out.Bytes(), nil
				}
				br.Discard(1) // the stuffing period
			}
			lineStart = false
		}
		seg, err := br.ReadSlice('\n')
		if len(seg) > 0 {
			end := seg[len(seg)-1] == '\n'
			if end {
				switch {
				case len(seg) >= 2:
					lineStart = seg[len(seg)-2] == '\r'
				default:
					lineStart = prevCR
				}
			}
			prevCR = seg[len(seg)-1] == '\r'
			n += int64(len(seg))
			if n > max {
				tooBig = true
				out = bytes.Buffer{}
			}
			if !tooBig {
				out.Write(seg)
			}
		}
		switch {
		case err == nil, errors.Is(err, bufio.ErrBufferFull):
		default:
			return nil, unexpectedEOF(err)
		}
	}
}

// unexpectedEOF turns the end of the connection in the middle of a message
// into io.ErrUnexpectedEOF, as go-smtp's reader does.
func unexpectedEOF(err error) error {
	if err == io.EOF {
		return io.ErrUnexpectedEOF
	}
	return err
}
