package imapd

import (
	"bytes"
	"strconv"
)

// maxBufferedLiteral is go-imap's limit on a literal in any command but
// APPEND (imapserver's checkBufferedLiteral).
const maxBufferedLiteral = 4096

// literalWatch makes up for a gap in go-imap v2.0.0-beta.8 when a command
// other than APPEND carries a literal over 4 KiB. The library sends no
// continuation for it, rightly, but then answers nothing, or reads the lines
// that follow as the rest of the refused command, or (for a
// non-synchronising literal, {N+}, LITERAL- of RFC 7888) reads the literal's
// bytes as commands. So the connection follows the command lines of a
// plain-text client, and a line that ends in such a literal is answered
// before go-imap reads it: NO [TOOBIG] with the line's tag for a synchronising
// literal (no continuation is sent, so the client sends no data), then BYE,
// and the connection is closed (RFC 7888 section 4 allows the close). It sees
// only the bytes of a plain-text connection; on TLS it stands aside
// (conn.tls), and go-imap's behaviour is what the client gets.
type literalWatch struct {
	head []byte // the start of the line being read (its tag), at most 64 bytes
	tail []byte // its last bytes, at most 32
}

// feed follows bytes read from the client. For a line that ends in a
// literal over the limit of a command other than APPEND it returns what to
// answer before the connection is closed.
func (w *literalWatch) feed(p []byte) (refusal string) {
	for len(p) > 0 {
		nl := bytes.IndexByte(p, '\n')
		line := p
		if nl >= 0 {
			line = p[:nl+1]
		}
		if room := 64 - len(w.head); room > 0 {
			w.head = append(w.head, line[:min(room, len(line))]...)
		}
		w.tail = append(w.tail, line...)
		if len(w.tail) > 32 {
			w.tail = append(w.tail[:0], w.tail[len(w.tail)-32:]...)
		}
		if nl < 0 {
			return ""
		}
		if size, nonSync, ok := literalAtEnd(w.tail); ok && size > maxBufferedLiteral && !isAppend(w.head) {
			bye := "* BYE Literals are limited to 4096 bytes in commands other than APPEND\r\n"
			if tag, _, ok := bytes.Cut(w.head, []byte(" ")); ok && !nonSync {
				return string(tag) + " NO [TOOBIG] Literals are limited to 4096 bytes for this command\r\n" + bye
			}
			return bye
		}
		w.head, w.tail = w.head[:0], w.tail[:0]
		p = p[nl+1:]
	}
	return ""
}

// literalAtEnd reads a literal's announcement at the end of a line:
// "{N}\r\n" or "{N+}\r\n".
func literalAtEnd(line []byte) (size int64, nonSync, ok bool) {
	line = bytes.TrimSuffix(bytes.TrimSuffix(line, []byte("\n")), []byte("\r"))
	if !bytes.HasSuffix(line, []byte("}")) {
		return 0, false, false
	}
	open := bytes.LastIndexByte(line, '{')
	if open < 0 {
		return 0, false, false
	}
	num := line[open+1 : len(line)-1]
	if n := len(num); n > 0 && num[n-1] == '+' {
		num, nonSync = num[:n-1], true
	}
	size, err := strconv.ParseInt(string(num), 10, 64)
	return size, nonSync, err == nil
}

// isAppend reports whether a command line is APPEND (tag, space, APPEND),
// whose literal go-imap answers itself.
func isAppend(head []byte) bool {
	_, rest, ok := bytes.Cut(head, []byte(" "))
	return ok && len(rest) >= 7 && bytes.EqualFold(rest[:7], []byte("APPEND "))
}
