package inbox_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/catchbox/catchbox/internal/store"
	"github.com/catchbox/catchbox/internal/store/storetest"
	"github.com/catchbox/catchbox/internal/tenant"
	"github.com/catchbox/catchbox/internal/testkit"
)

// TestHeldWaitsNeverMissAMatch holds many searches with wait=true, each
// woken only by the emails its filters may match, then delivers emails one by
// one. After each, every held search that the same search without wait now
// finds a match for must be answered 200; the others stay held. The filters
// cover recipient prefixes in any case, Cc and envelope-only recipients,
// senders, subject words (short, long, in another case, beyond ASCII), the
// catch-alls that wait for any email, and combinations.
func TestHeldWaitsNeverMissAMatch(t *testing.T) {
	queries := []string{
		"to_addr_prefix=order-42",
		"to_addr_prefix=ORDER-42@Default",
		"to_addr_prefix=order-42@default.localhost",
		"to_addr_prefix=order-4",
		"to_addr_prefix=order-420",
		"to_addr_prefix=o",
		"to_addr_prefix=cc-only",
		"to_addr_prefix=bcc-env",
		"to_addr_prefix=BCC-ENV@",
		"to_addr_prefix=nobody",
		"to_addr_prefix=%C3%BCser", // üser
		"subject_includes=Password+Reset",
		"subject_includes=reset+code",
		"subject_includes=re",
		"subject_includes=e",
		"subject_includes=invoice",
		"subject_includes=istanbul",
		"subject_includes=%C4%B0stanbul", // İstanbul
		"subject_includes=%C3%BCnicode",  // ünicode
		"subject_includes=kelvin",
		"subject_includes=never+sent",
		"from_addr_includes=shop@",
		"from_addr_includes=SHOP",
		"from_addr_includes=traveler",
		"from_addr_includes=%C3%BC",
		"",               // any email
		"to_timestamp=1", // only emails of 1970: never
		"to_addr_prefix=order-42&subject_includes=invoice",
		"to_addr_prefix=order-42&subject_includes=password",
		"to_addr_prefix=cc&from_addr_includes=shop",
		"from_addr_includes=shop&subject_includes=code",
	}
	emails := []msg{
		{from: "Shop <shop@example.org>", to: "order-42@default.localhost", subject: "Your invoice", body: "x"},
		{from: "noreply@example.net", to: "someone@example.com", cc: "cc-only@default.localhost", subject: "PASSWORD RESET CODE", body: "x"},
		{from: "a@example.net", to: "someone@example.com", subject: "hi", body: "x",
			rcpts: []string{"BCC-Env@Default.Localhost"}},
		{from: "Traveler@Example.org", to: "trips@default.localhost", subject: "İSTANBUL trip", body: "x"},
		{from: "üser@example.org", to: "üser@default.localhost", subject: "=?utf-8?q?=C3=9Cnicode_test?=", body: "x"},
		{from: "lab@example.org", to: "lab@default.localhost", subject: "300 \u212Aelvin", body: "x"}, // Kelvin sign
		{from: "shop@example.org", to: "order-420@default.localhost", subject: "Your code", body: "x"},
	}
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		e := newEnv(t, db)
		e.api.WaitHold = 5 * time.Minute
		hub := e.api.Notifier.(interface{ Waiters() int })
		base := hub.Waiters()
		type waiter struct {
			query string
			done  chan int // the answer's status and its total_count
			total int
		}
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		waiters := make([]*waiter, len(queries))
		for i, q := range queries {
			w := &waiter{query: q, done: make(chan int, 1)}
			waiters[i] = w
			go func() {
				req, _ := http.NewRequestWithContext(ctx, http.MethodGet, e.srv.URL+"/api/emails/default/inbox?wait=true&"+q, nil)
				req.Header.Set("X-Api-Key", e.key)
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					w.done <- -1
					return
				}
				defer resp.Body.Close()
				var r searchResp
				json.NewDecoder(resp.Body).Decode(&r)
				w.total = r.TotalCount
				w.done <- resp.StatusCode
			}()
		}
		testkit.Await(t, fmt.Sprintf("%d searches held", len(queries)), func() (int, bool) {
			n := hub.Waiters() - base
			return n, n == len(queries)
		})
		answered := map[*waiter]bool{}
		for n, m := range emails {
			e.deliver(e.ns, m)
			for _, w := range waiters {
				if answered[w] {
					continue
				}
				var r searchResp
				if resp := e.get(e.key, "/api/emails/default/inbox?"+w.query, &r); resp.StatusCode != 200 {
					t.Fatalf("search %q: %d", w.query, resp.StatusCode)
				}
				if r.TotalCount == 0 {
					continue
				}
				status := testkit.Receive(t, fmt.Sprintf("held %q answered after email %d (%q), which the search finds", w.query, n, m.subject), w.done)
				if status != 200 || w.total == 0 {
					t.Fatalf("after email %d, held %q answered %d with %d matches", n, w.query, status, w.total)
				}
				answered[w] = true
			}
		}
		for _, w := range waiters {
			if answered[w] {
				continue
			}
			select {
			case status := <-w.done:
				t.Errorf("held %q answered %d with no match", w.query, status)
			default:
			}
		}
		// The test must see both kinds: searches answered and searches that
		// stay held (which prove nothing was answered without a match).
		if len(answered) < len(queries)/2 || len(answered) == len(queries) {
			t.Fatalf("%d of %d searches answered", len(answered), len(queries))
		}
	})
}

// TestHeldWaitsOfOtherNamespaces: an email wakes only its namespace's waits,
// and a held search answered on one namespace leaves those of another held.
func TestHeldWaitsOfOtherNamespaces(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		e := newEnv(t, db)
		e.api.WaitHold = 5 * time.Minute
		other, err := e.tenants.CreateNamespace(context.Background(), e.ns.OrgID, "second", tenant.Settings{})
		if err != nil {
			t.Fatal(err)
		}
		hub := e.api.Notifier.(interface{ Waiters() int })
		base := hub.Waiters()
		hold := func(ns string) chan int {
			done := make(chan int, 1)
			go func() {
				req, _ := http.NewRequestWithContext(t.Context(), http.MethodGet, e.srv.URL+"/api/emails/"+ns+"/inbox?wait=true&to_addr_prefix="+url.QueryEscape("x@"), nil) // ended with the test
				req.Header.Set("X-Api-Key", e.key)
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					done <- -1
					return
				}
				resp.Body.Close()
				done <- resp.StatusCode
			}()
			return done
		}
		first, second := hold("default"), hold("second")
		testkit.WaitFor(t, "both searches held", func() bool { return hub.Waiters() == base+2 })
		e.deliver(other, msg{from: "a@b.c", to: "x@second.localhost", subject: "s", body: "x"})
		if status := <-second; status != 200 {
			t.Fatalf("second answered %d", status)
		}
		select {
		case status := <-first:
			t.Fatalf("default's search answered %d by mail to another namespace", status)
		default:
		}
		e.deliver(e.ns, msg{from: "a@b.c", to: strings.ToUpper("x@default.localhost"), subject: "s", body: "x"})
		if status := <-first; status != 200 {
			t.Fatalf("default answered %d", status)
		}
	})
}
