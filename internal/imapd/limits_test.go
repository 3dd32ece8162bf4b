package imapd

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/emersion/go-imap/v2"
	"github.com/emersion/go-imap/v2/imapclient"
	"github.com/emersion/go-sasl"

	"github.com/catchbox/catchbox/internal/inbox"
	"github.com/catchbox/catchbox/internal/store"
	"github.com/catchbox/catchbox/internal/store/storetest"
	"github.com/catchbox/catchbox/internal/tenant"
	"github.com/catchbox/catchbox/internal/testkit"
)

// raw speaks IMAP line by line, to see exact responses and closes.
type raw struct {
	t  *testing.T
	nc net.Conn
	r  *bufio.Reader
}

func (h *harness) raw() *raw {
	h.t.Helper()
	nc, err := net.Dial("tcp", h.imapAddr)
	if err != nil {
		h.t.Fatal(err)
	}
	h.t.Cleanup(func() { nc.Close() })
	nc.SetDeadline(time.Now().Add(30 * time.Second)) // a guard against a hung test
	c := &raw{t: h.t, nc: nc, r: bufio.NewReader(nc)}
	c.expect("* OK")
	return c
}

func (c *raw) line() (string, error) {
	l, err := c.r.ReadString('\n')
	return strings.TrimRight(l, "\r\n"), err
}

func (c *raw) expect(prefix string) string {
	c.t.Helper()
	l, err := c.line()
	if err != nil || !strings.HasPrefix(l, prefix) {
		c.t.Fatalf("got %q (%v), want %s...", l, err, prefix)
	}
	return l
}

func (c *raw) send(s string) {
	c.t.Helper()
	if _, err := c.nc.Write([]byte(s)); err != nil {
		c.t.Fatal(err)
	}
}

// tagged reads up to the tagged response of tag, and returns it with the
// lines before it.
func (c *raw) tagged(tag string) (string, []string) {
	c.t.Helper()
	var before []string
	for {
		l, err := c.line()
		if err != nil {
			c.t.Fatalf("reading the response to %s: %v (after %q)", tag, err, before)
		}
		if strings.HasPrefix(l, tag+" ") {
			return l, before
		}
		before = append(before, l)
	}
}

// closed reports whether the server closed the connection (reading up to
// its end).
func (c *raw) closed() bool {
	for {
		if _, err := c.line(); err != nil {
			var ne net.Error
			return !(errors.As(err, &ne) && ne.Timeout())
		}
	}
}

// Wrong credentials, and namespaces with another's password, another
// organisation's among them, are refused; AUTHENTICATE PLAIN logs in; after
// the attempts allowed, the address is refused and told BYE.
func TestLoginRefusals(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		h := newHarness(t, db, Config{})
		c := h.dial(nil)
		for _, try := range [][2]string{{"alpha", "wrong"}, {"gamma", h.password("alpha")}, {"alpha", h.password("gamma")}, {"nosuch", "x"}} {
			err := c.Login(try[0], try[1]).Wait()
			var imapErr *imap.Error
			if !errors.As(err, &imapErr) || imapErr.Code != imap.ResponseCodeAuthenticationFailed {
				t.Fatalf("login %s: %v, want NO [AUTHENTICATIONFAILED]", try[0], err)
			}
		}
		if err := c.Authenticate(sasl.NewPlainClient("", "gamma", h.password("gamma"))); err != nil {
			t.Fatalf("AUTHENTICATE PLAIN: %v", err)
		}
		if _, err := c.Select("INBOX", nil).Wait(); err != nil {
			t.Fatalf("select: %v", err)
		}

		// Ten failures in all from this address (four above): then BYE.
		r := h.raw()
		for i := 0; i < 6; i++ {
			r.send(fmt.Sprintf("a%d LOGIN alpha wrong\r\n", i))
			if l, _ := r.tagged(fmt.Sprintf("a%d", i)); !strings.HasPrefix(l, fmt.Sprintf("a%d NO [AUTHENTICATIONFAILED]", i)) {
				t.Fatalf("attempt %d: %q", i, l)
			}
		}
		r.send("b LOGIN alpha " + h.password("alpha") + "\r\n")
		var sawBye bool
		for {
			l, err := r.line()
			if err != nil {
				break
			}
			sawBye = sawBye || strings.HasPrefix(l, "* BYE")
		}
		if !sawBye {
			t.Fatal("a throttled login was not told BYE")
		}
	})
}

// A literal larger than the SMTP message limit is refused before its
// continuation, and so is a literal over 4 KiB in any command but APPEND; an
// APPEND within the limit is stored as a received message with its flags.
func TestLiteralLimits(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		h := newHarness(t, db, Config{MaxMessageBytes: 2048})
		r := h.raw()
		r.send("a LOGIN {5000}\r\n")
		if l, before := r.tagged("a"); !strings.HasPrefix(l, "a NO [TOOBIG]") || len(before) != 0 {
			t.Fatalf("oversized LOGIN literal: %q after %q", l, before)
		}
		if !r.closed() {
			t.Fatal("the connection stayed open after an oversized literal")
		}
		r = h.raw()
		r.send("a0 LOGIN alpha {5000+}\r\n" + strings.Repeat("x", 5000) + "\r\n")
		r.expect("* BYE")
		if !r.closed() {
			t.Fatal("the connection stayed open after an oversized non-synchronising literal")
		}
		r = h.raw()
		r.send("b LOGIN alpha " + h.password("alpha") + "\r\n")
		if l, _ := r.tagged("b"); !strings.HasPrefix(l, "b OK") {
			t.Fatalf("login: %q", l)
		}
		r.send("c APPEND INBOX {4096}\r\n")
		if l, before := r.tagged("c"); !strings.HasPrefix(l, "c NO [TOOBIG]") || len(before) != 0 {
			t.Fatalf("oversized APPEND: %q after %q", l, before)
		}
		msg := message("seeded@alpha.localhost", "appended", "seeded by APPEND")
		r.send(fmt.Sprintf("d APPEND INBOX (\\Seen) {%d}\r\n", len(msg)))
		r.expect("+")
		r.send(msg + "\r\n")
		l, _ := r.tagged("d")
		if !strings.HasPrefix(l, "d OK [APPENDUID ") {
			t.Fatalf("APPEND: %q", l)
		}
		res, err := h.searcher.Search(context.Background(), inbox.Query{NamespaceID: h.ns["alpha"].ID, Limit: 10})
		if err != nil || res.Total != 1 || res.Emails[0].Subject != "appended" {
			t.Fatalf("after APPEND: %+v %v", res, err)
		}
		r.send("e SELECT INBOX\r\ne FETCH 1 (FLAGS)\r\n")
		r.tagged("e")
		if _, before := r.tagged("e"); len(before) != 1 || !strings.Contains(before[0], `\Seen`) {
			t.Fatalf("flags of the appended message: %q", before)
		}
	})
}

// A client that never sends is closed after CommandTimeout, one logged in
// and silent after IdleTimeout, with BYE or without.
func TestSilentClients(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		h := newHarness(t, db, Config{CommandTimeout: 200 * time.Millisecond, IdleTimeout: 400 * time.Millisecond})
		if r := h.raw(); !r.closed() {
			t.Fatal("a client that never sent stayed connected")
		}
		r := h.raw()
		r.send("a LOGIN alpha " + h.password("alpha") + "\r\n")
		r.tagged("a")
		r.send("b IDLE\r\n")
		r.expect("+")
		if !r.closed() {
			t.Fatal("an idle client past the idle timeout stayed connected")
		}
	})
}

// EXPUNGE racing with retention: while a client expunges every message, the
// reaper deletes the same expired ones; both succeed, every message goes
// once, the namespace's count stays right, and another idle client is told
// of each.
func TestExpungeRacesRetention(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		h := newHarness(t, db, Config{})
		for round := 0; round < 3; round++ {
			for i := 0; i < 20; i++ {
				h.send("r@beta.localhost", message("r@beta.localhost", fmt.Sprint("race ", i), "x"))
			}
			var expunged sync.WaitGroup
			expunged.Add(20)
			watcher := h.login("beta", &imapclient.Options{UnilateralDataHandler: &imapclient.UnilateralDataHandler{
				Expunge: func(uint32) { expunged.Done() },
			}})
			idle, err := watcher.Idle()
			if err != nil {
				t.Fatal(err)
			}
			c := h.login("beta", nil)
			if err := c.Store(imap.SeqSet{{Start: 1, Stop: 0}}, &imap.StoreFlags{Op: imap.StoreFlagsAdd, Flags: []imap.Flag{imap.FlagDeleted}, Silent: true}, nil).Close(); err != nil {
				t.Fatal(err)
			}
			var wg sync.WaitGroup
			var expungeErr, reapErr error
			wg.Add(2)
			go func() { defer wg.Done(); _, expungeErr = c.Expunge().Collect() }()
			go func() {
				defer wg.Done()
				_, reapErr = inbox.Reap(context.Background(), db, time.Now().Add(48*time.Hour))
			}()
			wg.Wait()
			if expungeErr != nil || reapErr != nil {
				t.Fatalf("round %d: expunge %v, reap %v", round, expungeErr, reapErr)
			}
			expunged.Wait()
			idle.Close()
			idle.Wait()
			if n, err := h.searcher.Count(context.Background(), h.ns["beta"].ID); err != nil || n != 0 {
				t.Fatalf("round %d: %d emails left (%v)", round, n, err)
			}
			c.Logout().Wait()
			watcher.Logout().Wait()
		}
		h.send("r@beta.localhost", message("r@beta.localhost", "after", "x"))
		if n, _ := h.searcher.Count(context.Background(), h.ns["beta"].ID); n != 1 {
			t.Fatalf("count %d after one more message, want 1: the deletions were counted twice", n)
		}
	})
}

// A message that expires is told to an idle client as EXPUNGE at its expiry,
// before the reaper runs.
func TestExpiryToIdleClient(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		h := newHarness(t, db, Config{})
		// Received 59.5 s ago with the minimum retention (60 s): it expires
		// half a second from now.
		h.ingester.SetClock(func() time.Time { return time.Now().Add(-59500 * time.Millisecond) })
		retention := tenant.MinRetention
		if _, err := h.tenants.UpsertNamespace(context.Background(), h.ns["beta"].OrgID, "beta", tenant.Settings{RetentionTime: &retention}); err != nil {
			t.Fatal(err)
		}
		h.send("e@beta.localhost", message("e@beta.localhost", "short-lived", "x"))
		expunged := make(chan uint32, 1)
		c, sel := h.loginSelect("beta", &imapclient.Options{UnilateralDataHandler: &imapclient.UnilateralDataHandler{
			Expunge: func(seq uint32) { expunged <- seq },
		}})
		if sel.NumMessages != 1 {
			t.Skipf("the message expired before the client selected it (%d messages): the machine is too slow for this test", sel.NumMessages)
		}
		idle, err := c.Idle()
		if err != nil {
			t.Fatal(err)
		}
		if seq := <-expunged; seq != 1 {
			t.Fatalf("EXPUNGE %d", seq)
		}
		idle.Close()
	})
}

// Connections over the per-address cap are told BYE and closed; one that
// closes frees its slot.
func TestConnectionsPerAddress(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		h := newHarness(t, db, Config{MaxConnsPerIP: 2})
		first, _ := h.raw(), h.raw()
		nc, err := net.Dial("tcp", h.imapAddr)
		if err != nil {
			t.Fatal(err)
		}
		defer nc.Close()
		nc.SetDeadline(time.Now().Add(30 * time.Second))
		third := &raw{t: t, nc: nc, r: bufio.NewReader(nc)}
		third.expect("* BYE Too many connections from your address")
		if !third.closed() {
			t.Fatal("the connection over the cap stayed open")
		}
		first.send("a LOGOUT\r\n")
		first.closed()
		// The slot is freed once the server has closed that connection.
		testkit.Await(t, "a connection admitted after one closed", func() (string, bool) {
			nc, err := net.Dial("tcp", h.imapAddr)
			if err != nil {
				t.Fatal(err)
			}
			nc.SetDeadline(time.Now().Add(30 * time.Second))
			l, _ := bufio.NewReader(nc).ReadString('\n')
			nc.Close()
			return l, strings.HasPrefix(l, "* OK")
		})
	})
}
