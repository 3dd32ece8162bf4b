package smtpd

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/catchbox/catchbox/internal/store"
	"github.com/catchbox/catchbox/internal/store/storetest"
)

// TestReadDot reads DATA streams: the message, and what is left after it.
func TestReadDot(t *testing.T) {
	for _, tc := range []struct {
		name, in, want, rest string
	}{
		{"plain", "a\r\nb\r\n.\r\nQUIT\r\n", "a\r\nb\r\n", ".\r\nQUIT\r\n"},
		{"empty", ".\r\nQUIT\r\n", "", ".\r\nQUIT\r\n"},
		{"stuffed", "..a\r\n...\r\n..\r\n.\r\n", ".a\r\n..\r\n.\r\n", ".\r\n"},
		{"cr cr lf end", "a\r\r\n.\r\n", "a\r\r\n", ".\r\n"},
		{"stuffed after cr cr lf", "a\r\r\n..b\r\n.\r\n", "a\r\r\n.b\r\n", ".\r\n"},
		{"many crs", "a\r\r\r\r\n..b\r\r\n.\r\n", "a\r\r\r\r\n.b\r\r\n", ".\r\n"},
		{"stuffed period then bare cr", "..\rx\r\n.\r\n", ".\rx\r\n", ".\r\n"},
		{"unstuffed period then bare cr", ".\rx\r\n.\r\n", "\rx\r\n", ".\r\n"},
		{"bare lf is no line end", "a\n.\nb\r\n.\r\n", "a\n.\nb\r\n", ".\r\n"},
		{"lf period crlf", "a\n.\r\nb\r\n.\r\n", "a\n.\r\nb\r\n", ".\r\n"},
		{"cr period crlf", "a\r.\r\nb\r\n.\r\n", "a\r.\r\nb\r\n", ".\r\n"},
		{"crlf period lf", "a\r\n.\nb\r\n.\r\n", "a\r\n\nb\r\n", ".\r\n"},
		{"crlf period cr cr lf", "a\r\n.\r\r\nb\r\n.\r\n", "a\r\n\r\r\nb\r\n", ".\r\n"},
		{"split cr lf", "a\r" + "\n.\r\n", "a\r\n", ".\r\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// A one-byte-at-a-time source and the smallest buffer make every
			// octet a buffer boundary.
			br := bufio.NewReaderSize(oneByte{strings.NewReader(tc.in)}, 16)
			got, err := readDot(br, 1<<20)
			if err != nil {
				t.Fatalf("readDot(%q): %v", tc.in, err)
			}
			if string(got) != tc.want {
				t.Errorf("readDot(%q) = %q, want %q", tc.in, got, tc.want)
			}
			rest, _ := io.ReadAll(br)
			if string(rest) != tc.rest {
				t.Errorf("left %q, want %q", rest, tc.rest)
			}
		})
	}
}

func TestReadDotLimits(t *testing.T) {
	// Over the limit: read to the end all the same.
	br := bufio.NewReader(strings.NewReader("0123456789\r\n0123456789\r\n.\r\nNOOP\r\n"))
	if _, err := readDot(br, 20); !errors.Is(err, errDotTooBig) {
		t.Fatalf("over the limit: %v, want errDotTooBig", err)
	}
	if rest, _ := io.ReadAll(br); string(rest) != ".\r\nNOOP\r\n" {
		t.Fatalf("left %q", rest)
	}
	// At the limit: kept.
	br = bufio.NewReader(strings.NewReader("0123456789\r\n0123456\r\n.\r\n"))
	if got, err := readDot(br, 21); err != nil || len(got) != 21 {
		t.Fatalf("at the limit: %d bytes, %v", len(got), err)
	}
	// The connection ends before the end of data.
	for _, in := range []string{"", "a\r\n", "a\r\n.", "a\r\n.\r", "a"} {
		br = bufio.NewReader(strings.NewReader(in))
		if _, err := readDot(br, 100); !errors.Is(err, io.ErrUnexpectedEOF) {
			t.Errorf("readDot(%q): %v, want io.ErrUnexpectedEOF", in, err)
		}
	}
}

// FuzzReadDot dot-stuffs any message the way RFC 5321 section 4.5.2 tells a
// client to (a period at the start of a line, a line starting after CR LF,
// gets one more), ends it, and reads it back: the message must come back
// exactly, with the closing line left unread.
func FuzzReadDot(f *testing.F) {
	for _, s := range []string{"", "a\r\n", ".\r\n", "a\r\r\n.\r\n", "\r\n.\n.\r\n", ".\r.\n\r\r\n..", "x\r.\r\n"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, msg []byte) {
		if len(msg) > 0 && !bytes.HasSuffix(msg, []byte("\r\n")) {
			msg = append(msg, '\r', '\n') // DATA carries whole lines
		}
		var wire bytes.Buffer
		lineStart := true
		for i, c := range msg {
			if lineStart && c == '.' {
				wire.WriteByte('.')
			}
			wire.WriteByte(c)
			lineStart = c == '\n' && i > 0 && msg[i-1] == '\r'
		}
		wire.WriteString(".\r\nNEXT")
		br := bufio.NewReaderSize(oneByte{&wire}, 16)
		got, err := readDot(br, int64(len(msg)))
		if err != nil {
			t.Fatalf("readDot: %v", err)
		}
		if !bytes.Equal(got, msg) {
			t.Fatalf("got %q, want %q", got, msg)
		}
		if rest, _ := io.ReadAll(br); string(rest) != ".\r\nNEXT" {
			t.Fatalf("left %q", rest)
		}
	})
}

// oneByte reads one byte at a time.
type oneByte struct{ r io.Reader }

func (o oneByte) Read(p []byte) (int, error) {
	if len(p) > 1 {
		p = p[:1]
	}
	return o.r.Read(p)
}

// TestDataEnd sends messages over a raw socket that go-smtp's own DATA reader
// gets wrong or that try to smuggle a second message, and checks every DATA
// is answered once and the stored raw source is the unstuffed message,
// byte for byte.
func TestDataEnd(t *testing.T) {
	const head = "From: a@example.org\r\nTo: end@alpha.localhost\r\nSubject: "
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		h := newHarness(t, db, Config{})
		for _, tc := range []struct {
			name string
			wire string // the message as sent after 354, closing line included
			want string // the stored raw source
		}{
			{"cr cr lf before the end", head + "crcrlf\r\n\r\nlast line\r\r\n.\r\n",
				head + "crcrlf\r\n\r\nlast line\r\r\n"},
			{"stuffed line after cr cr lf", head + "stuffed\r\n\r\nfirst\r\r\n..second\r\n...\r\n.\r\n",
				head + "stuffed\r\n\r\nfirst\r\r\n.second\r\n..\r\n"},
			{"period and bare cr", head + "barecr\r\n\r\n..\rx\r\n.\r\n",
				head + "barecr\r\n\r\n.\rx\r\n"},
		} {
			t.Run(tc.name, func(t *testing.T) {
				before := len(h.emails("alpha"))
				r := h.raw()
				r.mustReply(220)
				r.cmd("EHLO client.example", 250)
				r.cmd("MAIL FROM:<a@example.org>", 250)
				r.cmd("RCPT TO:<end@alpha.localhost>", 250)
				r.cmd("DATA", 354)
				if _, err := io.WriteString(r.nc, tc.wire); err != nil {
					t.Fatalf("write: %v", err)
				}
				r.mustReply(250)
				r.cmd("QUIT", 221)
				got := h.emails("alpha")
				if len(got) != before+1 {
					t.Fatalf("%d emails stored, want %d", len(got), before+1)
				}
				if raw := h.rawSource(got[len(got)-1].ID); string(raw) != tc.want {
					t.Fatalf("stored %q\nwant   %q", raw, tc.want)
				}
			})
		}

		// One write from DATA to QUIT, the message before the 354 (an
		// early talker): the buffered bytes are read by the same rule.
		t.Run("pipelined", func(t *testing.T) {
			before := len(h.emails("alpha"))
			r := h.raw()
			r.mustReply(220)
			r.cmd("EHLO client.example", 250)
			msg := head + "pipelined\r\n\r\nbody\r\r\n"
			io.WriteString(r.nc, "MAIL FROM:<a@example.org>\r\nRCPT TO:<end@alpha.localhost>\r\nDATA\r\n"+msg+".\r\nQUIT\r\n")
			for _, want := range []int{250, 250, 354, 250, 221} {
				r.mustReply(want)
			}
			got := h.emails("alpha")
			if len(got) != before+1 {
				t.Fatalf("%d emails stored, want %d", len(got), before+1)
			}
			if raw := h.rawSource(got[len(got)-1].ID); string(raw) != msg {
				t.Fatalf("stored %q\nwant   %q", raw, msg)
			}
		})

		// SMTP smuggling: an end of data a lenient reader might see, followed
		// by a second transaction to beta. None of them ends the data: one
		// reply, one message holding the smuggled text, nothing for beta.
		for _, sep := range []string{"\n.\n", "\n.\r\n", "\r.\r\n", "\r\n.\n", "\r\n.\r\r\n", "\r\n\x00.\r\n", "\r\n .\r\n"} {
			t.Run("smuggling "+strings.NewReplacer("\r", "CR", "\n", "LF", "\x00", "NUL", " ", "SP").Replace(sep), func(t *testing.T) {
				before := len(h.emails("alpha"))
				r := h.raw()
				r.mustReply(220)
				r.cmd("EHLO client.example", 250)
				r.cmd("MAIL FROM:<a@example.org>", 250)
				r.cmd("RCPT TO:<end@alpha.localhost>", 250)
				r.cmd("DATA", 354)
				smuggled := "MAIL FROM:<admin@example.org>\r\nRCPT TO:<victim@beta.localhost>\r\nDATA\r\n" +
					"From: admin@example.org\r\nSubject: smuggled\r\n\r\nsmuggled\r\n"
				io.WriteString(r.nc, head+"carrier\r\n\r\nbody"+sep+smuggled+".\r\n")
				r.mustReply(250)
				r.cmd("QUIT", 221)
				got := h.emails("alpha")
				if len(got) != before+1 || got[len(got)-1].Subject != "carrier" {
					t.Fatalf("alpha holds %+v, want one more email, carrier", got[before:])
				}
				if raw := h.rawSource(got[len(got)-1].ID); !bytes.Contains(raw, []byte("RCPT TO:<victim@beta.localhost>")) {
					t.Fatalf("the smuggled text is not in the carrier: %q", raw)
				}
				if b := h.emails("beta"); len(b) != 0 {
					t.Fatalf("beta received %+v", b)
				}
			})
		}
	})
}

// TestDataLimits: a data line over the line limit and a client silent in
// the middle of a message are answered, as before Catchbox read DATA itself.
func TestDataLimits(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		h := newHarness(t, db, Config{IdleTimeout: 300 * time.Millisecond})
		r := h.raw()
		r.mustReply(220)
		r.cmd("EHLO client.example", 250)
		r.cmd("MAIL FROM:<a@example.org>", 250)
		r.cmd("RCPT TO:<long@alpha.localhost>", 250)
		r.cmd("DATA", 354)
		io.WriteString(r.nc, "Subject: long\r\n\r\n"+strings.Repeat("x", maxLineLength+10)+"\r\n.\r\n")
		if code, msg, err := r.reply(); err != nil || code != 500 {
			t.Fatalf("over-long data line: %d %q %v, want 500", code, msg, err)
		}

		r = h.raw()
		r.mustReply(220)
		r.cmd("EHLO client.example", 250)
		r.cmd("MAIL FROM:<a@example.org>", 250)
		r.cmd("RCPT TO:<silent@alpha.localhost>", 250)
		r.cmd("DATA", 354)
		io.WriteString(r.nc, "Subject: silent\r\n\r\nand then nothing")
		if code, msg, err := r.reply(); err != nil || code != 421 {
			t.Fatalf("silent client: %d %q %v, want 421", code, msg, err)
		}
		r.expectClosed()
		if got := h.emails("alpha"); len(got) != 0 {
			t.Fatalf("stored %+v", got)
		}
	})
}
