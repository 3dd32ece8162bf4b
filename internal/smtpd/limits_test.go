package smtpd

import (
	"fmt"
	"net"
	"net/textproto"
	"strings"
	"testing"
	"time"

	"github.com/emersion/go-smtp"

	"github.com/catchbox/catchbox/internal/store"
	"github.com/catchbox/catchbox/internal/store/storetest"
	"github.com/catchbox/catchbox/internal/testkit"
)

// rawFrom is raw for a connection from the local address ip: Linux routes all
// of 127.0.0.0/8 to the loopback interface, so two addresses give two clients
// on one machine.
func (h *harness) rawFrom(ip string) *rawClient {
	h.t.Helper()
	nc := h.dialFrom(ip)
	return &rawClient{t: h.t, nc: nc, tp: textproto.NewConn(nc)}
}

func (h *harness) dialFrom(ip string) net.Conn {
	h.t.Helper()
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(ip)}}
	nc, err := d.Dial("tcp", h.addr)
	if err != nil {
		h.t.Fatalf("dial from %s: %v", ip, err)
	}
	h.t.Cleanup(func() { nc.Close() })
	// A guard against a hung test, not a timing assertion.
	nc.SetDeadline(time.Now().Add(30 * time.Second))
	return nc
}

// One client holding its cap of connections is refused the next with 421
// 4.7.0, while another client's mail still goes through; the slot comes back
// when one of the first client's connections ends.
func TestConnectionLimitPerAddress(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		h := newHarness(t, db, Config{MaxConnsPerIP: 2})
		var idle []*rawClient
		for i := 0; i < 2; i++ {
			r := h.rawFrom("127.0.0.2")
			r.mustReply(220)
			r.cmd("EHLO idle.example", 250)
			idle = append(idle, r)
		}
		over := h.rawFrom("127.0.0.2")
		code, msg, err := over.reply()
		if err != nil || code != 421 || msg != "4.7.0 Too many connections from your address, try again later" {
			t.Fatalf("connection over the address's cap got %d %q %v, want 421 4.7.0", code, msg, err)
		}
		over.expectClosed()

		c := smtp.NewClient(h.dialFrom("127.0.0.1"))
		if err := send(c, "app@example.org", []string{"x@alpha.localhost"}, message("app@example.org", "x@alpha.localhost", "from-another-client", "body")); err != nil {
			t.Fatalf("mail from another address: %v", err)
		}
		c.Quit()
		if got := h.emails("alpha"); len(got) != 1 || got[0].Subject != "from-another-client" || got[0].ClientIP != "127.0.0.1" {
			t.Fatalf("stored %+v", got)
		}

		idle[0].cmd("QUIT", 221)
		idle[0].expectClosed()
		// The slot is freed once the server has closed that connection.
		testkit.Await(t, "a connection from 127.0.0.2 accepted after one closed", func() (string, bool) {
			r := h.rawFrom("127.0.0.2")
			code, msg, err := r.reply()
			if err == nil && code == 220 {
				r.cmd("QUIT", 221)
				return "220", true
			}
			return fmt.Sprintf("%d %q %v", code, msg, err), false
		})
	})
}

// After AuthFailures refused attempts from one address, AUTH from it is
// answered 421 4.7.0 and the connection closed, whatever the credentials,
// until the address has regained an attempt; its mail without AUTH, and
// AUTH from another address, are unaffected.
func TestAuthFailuresThrottled(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		h := newHarness(t, db, Config{AuthFailures: 2, AuthLockout: time.Minute})
		now := time.Date(2026, 11, 22, 3, 23, 50, 0, time.UTC)
		h.srv.auth.SetClock(func() time.Time { return now })
		good := "AUTH PLAIN " + b64("\x00alpha\x00"+h.password("alpha"))
		bad := "AUTH PLAIN " + b64("\x00alpha\x00wrong-password")

		r := h.rawFrom("127.0.0.2")
		r.mustReply(220)
		r.cmd("EHLO guesser.example", 250)
		r.cmd(bad, 535)
		r.cmd("AUTH LOGIN "+b64("nosuch"), 334)
		r.cmd(b64("whatever"), 535)
		if msg := r.cmd(good, 421); !strings.HasPrefix(msg, "4.7.0 ") {
			t.Fatalf("throttled AUTH: 421 %q, want 4.7.0", msg)
		}
		r.expectClosed()

		again := h.rawFrom("127.0.0.2")
		again.mustReply(220)
		again.cmd("EHLO guesser.example", 250)
		again.cmd(good, 421)
		again.expectClosed()

		// Mail without AUTH from that address still goes through.
		mx := h.rawFrom("127.0.0.2")
		mx.mustReply(220)
		mx.cmd("EHLO mx.example", 250)
		mx.cmd("MAIL FROM:<a@example.org>", 250)
		mx.cmd("RCPT TO:<x@alpha.localhost>", 250)
		mx.cmd("DATA", 354)
		mx.send("Subject: mx\r\n\r\nbody\r\n.")
		mx.mustReply(250)
		mx.cmd("QUIT", 221)

		other := h.rawFrom("127.0.0.1")
		other.mustReply(220)
		other.cmd("EHLO app.example", 250)
		other.cmd(good, 235)

		now = now.Add(time.Minute)
		back := h.rawFrom("127.0.0.2")
		back.mustReply(220)
		back.cmd("EHLO guesser.example", 250)
		back.cmd(good, 235)
	})
}

// Sixty connections from one address that all send wrong credentials before
// any is answered have at most AuthFailures (10) of them evaluated, 535 each;
// the others are refused with 421 unevaluated. The right password sent next
// is refused too, and from another address it is accepted.
func TestParallelAuthNeverExceedsLimit(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		h := newHarness(t, db, Config{AuthFailures: 10, AuthLockout: time.Minute, MaxConnsPerIP: 200})
		now := time.Date(2026, 11, 22, 3, 23, 50, 0, time.UTC)
		h.srv.auth.SetClock(func() time.Time { return now })
		g := testkit.NewGate(t) // attempts held where their credentials would be evaluated
		h.srv.auth.Arrived, h.srv.auth.Evaluating = g.Arrive, g.Hold
		bad := "AUTH PLAIN " + b64("\x00alpha\x00wrong-password")
		good := "AUTH PLAIN " + b64("\x00alpha\x00"+h.password("alpha"))

		const n = 60
		conns := make([]*rawClient, n)
		for i := range conns {
			conns[i] = h.rawFrom("127.0.0.2")
			conns[i].mustReply(220)
			conns[i].cmd("EHLO guesser.example", 250)
		}
		codes := make(chan int, n)
		for _, c := range conns {
			go func(c *rawClient) {
				c.send(bad)
				code, _, err := c.reply()
				if err != nil {
					t.Errorf("AUTH reply: %v", err)
				}
				codes <- code
			}(c)
		}
		g.Await(t, "every attempt to arrive and the first to be evaluated", func(c testkit.GateCounts) bool {
			return c.Arrived == n && c.Held >= 10
		})
		g.Open()
		count := map[int]int{}
		for i := 0; i < n; i++ {
			count[<-codes]++
		}
		if count[535] != 10 || count[421] != n-10 || g.Held() != 10 {
			t.Fatalf("answers %v, %d evaluated; want 10 × 535 and %d × 421, 10 evaluated", count, g.Held(), n-10)
		}
		r := h.rawFrom("127.0.0.2")
		r.mustReply(220)
		r.cmd("EHLO guesser.example", 250)
		r.cmd(good, 421)
		other := h.rawFrom("127.0.0.3")
		other.mustReply(220)
		other.cmd("EHLO app.example", 250)
		other.cmd(good, 235)
		if g.Held() != 11 {
			t.Fatalf("%d evaluated, want 11", g.Held())
		}
	})
}

// A sender opening many authenticated connections at once from one address
// is not refused for their overlap: attempts beyond the budget wait for the
// outcome of those being evaluated, whose right credentials give their
// charges back.
func TestParallelRightAuthAllAccepted(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		h := newHarness(t, db, Config{AuthFailures: 2, AuthLockout: time.Hour, MaxConnsPerIP: 200})
		h.srv.auth.SetWait(time.Minute) // however long the gate takes to open
		g := testkit.NewGate(t)         // attempts held where their credentials would be evaluated
		h.srv.auth.Arrived, h.srv.auth.Evaluating = g.Arrive, g.Hold
		good := "AUTH PLAIN " + b64("\x00alpha\x00"+h.password("alpha"))
		const n = 20
		codes := make(chan int, n)
		for i := 0; i < n; i++ {
			c := h.rawFrom("127.0.0.4")
			c.mustReply(220)
			c.cmd("EHLO sender.example", 250)
			go func() {
				c.send(good)
				code, _, _ := c.reply()
				codes <- code
			}()
		}
		g.Await(t, "every attempt to arrive and two to be evaluated", func(c testkit.GateCounts) bool {
			return c.Arrived == n && c.Held == 2
		})
		g.Open()
		for i := 0; i < n; i++ {
			if code := <-codes; code != 235 {
				t.Fatalf("a right AUTH among many at once: %d", code)
			}
		}
	})
}
