package systemtest

import (
	"bytes"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/emersion/go-smtp"
)

// mailDomain is the servers' default mail domain; the bootstrap namespace is
// "default", so mail to anything@default.localhost lands in it.
const (
	mailDomain = "localhost"
	namespace  = "default"
)

// message is one generated test message. Its subject and recipient carry a
// token unique in the run, of fixed width so that no subject is a substring of
// another's.
type message struct {
	Token   string
	Subject string
	To      string
	Attach  bool
}

// attachmentData is the attachment of a message, derived from its token so a
// download can be checked without keeping the bytes.
func (m message) attachmentData() []byte {
	sum := sha256.Sum256([]byte(m.Token))
	return bytes.Repeat(sum[:], 96) // 3 KB
}

// attachmentName is the filename of the message's attachment.
func (m message) attachmentName() string { return m.Token + ".bin" }

// raw renders the message as RFC 5322 text with CRLF line ends.
func (m message) raw() []byte {
	var b strings.Builder
	h := func(format string, args ...any) { fmt.Fprintf(&b, format+"\r\n", args...) }
	h("From: System Test <load@example.com>")
	h("To: <%s>", m.To)
	h("Subject: %s", m.Subject)
	h("Message-ID: <%s@systemtest.example>", m.Token)
	h("Date: %s", time.Now().Format(time.RFC1123Z))
	h("MIME-Version: 1.0")
	if !m.Attach {
		h("Content-Type: text/plain; charset=utf-8")
		h("")
		h("Body of %s.", m.Token)
		return []byte(b.String())
	}
	h(`Content-Type: multipart/mixed; boundary="sep-%s"`, m.Token)
	h("")
	h("--sep-%s", m.Token)
	h("Content-Type: text/plain; charset=utf-8")
	h("")
	h("Body of %s, with an attachment.", m.Token)
	h("--sep-%s", m.Token)
	h("Content-Type: application/octet-stream")
	h(`Content-Disposition: attachment; filename="%s"`, m.attachmentName())
	h("Content-Transfer-Encoding: base64")
	h("")
	enc := base64.StdEncoding.EncodeToString(m.attachmentData())
	for len(enc) > 76 {
		h("%s", enc[:76])
		enc = enc[76:]
	}
	h("%s", enc)
	h("--sep-%s--", m.Token)
	return []byte(b.String())
}

// outcome is what a sender learned about one message.
type outcome int

const (
	// acked: the server answered 250 after DATA; the message must be stored.
	acked outcome = iota + 1
	// rejected: the server answered an SMTP error at MAIL, RCPT or DATA.
	rejected
	// noReply: the connection failed before a reply to DATA; the message may
	// or may not be stored.
	noReply
)

// attempt is one message tried by a sender.
type attempt struct {
	Msg     message
	Addr    string // the SMTP address it was sent to
	Outcome outcome
	Code    int // the SMTP reply code when rejected
	Err     string
	At      time.Time // when the outcome was known
}

// load sends messages over a number of persistent SMTP connections until it is
// stopped or has tried max messages. A connection is replaced after any error
// (and after perConn messages, under the server's command limit), the way
// pooling clients behave.
type load struct {
	prefix  string
	max     int64
	perConn int

	next    atomic.Int64 // message number
	nAcked  atomic.Int64
	stopped chan struct{}
	wg      sync.WaitGroup

	mu       sync.Mutex
	attempts []attempt
}

// startLoad starts one sender per entry of addrs (an address may repeat). Every
// fourth message carries an attachment.
func startLoad(t *testing.T, prefix string, addrs []string, max int) *load {
	t.Helper()
	var salt [3]byte
	rand.Read(salt[:])
	l := &load{prefix: prefix + "-" + hex.EncodeToString(salt[:]), max: int64(max), perConn: 100, stopped: make(chan struct{})}
	for i, a := range addrs {
		l.wg.Add(1)
		go l.sender(i, a)
	}
	t.Cleanup(l.stop)
	return l
}

// stop ends the load, waits for the senders and returns every attempt.
func (l *load) stop() {
	select {
	case <-l.stopped:
	default:
		close(l.stopped)
	}
	l.wg.Wait()
}

// results returns a copy of the attempts so far.
func (l *load) results() []attempt {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]attempt(nil), l.attempts...)
}

// ackedCount is the number of 250 replies so far.
func (l *load) ackedCount() int { return int(l.nAcked.Load()) }

// ackedSince counts 250 replies from addr (any address when "") after t0.
func (l *load) ackedSince(addr string, t0 time.Time) int {
	n := 0
	for _, a := range l.results() {
		if a.Outcome == acked && (addr == "" || a.Addr == addr) && a.At.After(t0) {
			n++
		}
	}
	return n
}

func (l *load) record(a attempt) {
	a.At = time.Now()
	if a.Outcome == acked {
		l.nAcked.Add(1)
	}
	l.mu.Lock()
	l.attempts = append(l.attempts, a)
	l.mu.Unlock()
}

func (l *load) isStopped() bool {
	select {
	case <-l.stopped:
		return true
	default:
		return false
	}
}

// pause waits d, or less if the load is stopped.
func (l *load) pause(d time.Duration) {
	select {
	case <-l.stopped:
	case <-time.After(d):
	}
}

func (l *load) sender(conn int, addr string) {
	defer l.wg.Done()
	var c *smtp.Client
	sent := 0
	closeConn := func() {
		if c != nil {
			c.Close()
			c = nil
		}
	}
	defer closeConn()
	for !l.isStopped() {
		if c == nil || sent >= l.perConn {
			closeConn()
			var err error
			if c, err = dialSMTP(addr); err != nil {
				c = nil
				l.pause(50 * time.Millisecond) // the server is down or refusing
				continue
			}
			sent = 0
		}
		n := l.next.Add(1)
		if n > l.max {
			return
		}
		token := fmt.Sprintf("%s-c%02d-m%05d", l.prefix, conn, n)
		m := message{Token: token, Subject: "Load " + token, To: token + "@" + namespace + "." + mailDomain, Attach: n%4 == 0}
		a := send(c, m)
		a.Addr = addr
		l.record(a)
		sent++
		if a.Outcome != acked {
			closeConn()
			l.pause(20 * time.Millisecond)
		}
	}
}

// dialSMTP opens an SMTP connection with bounded waits, so a hung server shows
// as an error instead of a hung test.
func dialSMTP(addr string) (*smtp.Client, error) {
	conn, err := net.DialTimeout("tcp", addr, 10*time.Second)
	if err != nil {
		return nil, err
	}
	c := smtp.NewClient(conn)
	c.CommandTimeout = 30 * time.Second
	c.SubmissionTimeout = 60 * time.Second
	if err := c.Hello("systemtest.example"); err != nil {
		c.Close()
		return nil, err
	}
	return c, nil
}

// send runs one mail transaction on c and classifies its outcome.
func send(c *smtp.Client, m message) attempt {
	a := attempt{Msg: m}
	fail := func(err error) attempt {
		a.Err = err.Error()
		var se *smtp.SMTPError
		if errors.As(err, &se) {
			a.Outcome, a.Code = rejected, se.Code
		} else {
			a.Outcome = noReply
		}
		return a
	}
	if err := c.Mail("load@example.com", nil); err != nil {
		return fail(err)
	}
	if err := c.Rcpt(m.To, nil); err != nil {
		return fail(err)
	}
	w, err := c.Data()
	if err != nil {
		return fail(err)
	}
	if _, err := w.Write(m.raw()); err != nil {
		return fail(err)
	}
	if _, err := w.CloseWithResponse(); err != nil {
		return fail(err)
	}
	a.Outcome = acked
	return a
}

// sendOne delivers one message on a fresh connection and fails the test unless
// it is answered 250.
func sendOne(t *testing.T, addr string, m message) {
	t.Helper()
	c, err := dialSMTP(addr)
	if err != nil {
		t.Fatalf("dial SMTP %s: %v", addr, err)
	}
	defer c.Close()
	if a := send(c, m); a.Outcome != acked {
		t.Fatalf("sending %s to %s: %s", m.Token, addr, a.Err)
	}
	c.Quit()
}

// newMessage returns a single message with a token unique in the run.
func newMessage(label string, attach bool) message {
	var b [6]byte
	rand.Read(b[:])
	token := label + "-" + hex.EncodeToString(b[:])
	return message{Token: token, Subject: "Single " + token, To: token + "@" + namespace + "." + mailDomain, Attach: attach}
}

// summary counts the outcomes of attempts, for logs and reports.
type summary struct {
	Acked, Rejected, NoReply int
	Codes                    map[int]int
}

func summarize(as []attempt) summary {
	s := summary{Codes: map[int]int{}}
	for _, a := range as {
		switch a.Outcome {
		case acked:
			s.Acked++
		case rejected:
			s.Rejected++
			s.Codes[a.Code]++
		case noReply:
			s.NoReply++
		}
	}
	return s
}

func (s summary) String() string {
	return fmt.Sprintf("%d acknowledged, %d rejected (codes %v), %d without a reply", s.Acked, s.Rejected, s.Codes, s.NoReply)
}
