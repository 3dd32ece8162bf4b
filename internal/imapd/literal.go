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
// (conn.tls), and go-imap's behaviour is what the client gets. A refused
// APPEND literal (over the message limit) is passed over as if its bytes
// came, which only blinds the watch for that many bytes.
type literalWatch struct {
	head []byte // the start of the command being read (its tag), at most 64 bytes
	tail []byte // the last bytes of its current line, at most 32
	skip int64  // bytes of a literal still to come: data, not command text
}

// feed follows bytes read from the client. For a line that ends in a
// literal over the limit of a command other than APPEND it returns what to
// answer before the connection is closed. The bytes of a literal it lets
// through (a message being appended, say) are passed over as data.
func (w *literalWatch) feed(p []byte) (refusal string) {
	for len(p) > 0 {
		if w.skip > 0 {
			n := min(w.skip, int64(len(p)))
			w.skip -= n
			p = p[n:]
			continue
		}
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
		p = p[nl+1:]
		size, nonSync, ok := literalAtEnd(w.tail)
		w.tail = w.tail[:0]
		if !ok {
			w.head = w.head[:0] // the command ended
			continue
		}
		if size > maxBufferedLiteral && !isAppend(w.head) {
			bye := "* BYE Literals are limited to 4096 bytes in commands other than APPEND\r\n"
			if tag, _, ok := bytes.Cut(w.head, []byte(" ")); ok && !nonSync {
				return string(tag) + " NO [TOOBIG] Literals are limited to 4096 bytes for this command\r\n" + bye
			}
			return bye
		}
		// The literal's bytes follow (at once, or after the continuation),
		// then the rest of the command.
		w.skip = size
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
