package sms_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/catchbox/catchbox/internal/sms"
	"github.com/catchbox/catchbox/internal/store"
	"github.com/catchbox/catchbox/internal/store/storetest"
	"github.com/catchbox/catchbox/internal/testkit"
)

type held struct {
	status int
	r      searchResp
	err    error
}

// holdSearch starts a search with the default key in the background, ended
// when the test ends.
func (e *env) holdSearch(path string) <-chan held {
	return e.holdSearchCtx(e.t.Context(), path)
}

// holdSearchCtx is holdSearch ended when ctx ends.
func (e *env) holdSearchCtx(ctx context.Context, path string) <-chan held {
	done := make(chan held, 1)
	go func() {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, e.srv.URL+path, nil)
		req.Header.Set("X-Api-Key", e.key)
		resp, err := noRedirects.Do(req)
		if err != nil {
			done <- held{err: err}
			return
		}
		defer resp.Body.Close()
		var h held
		h.status = resp.StatusCode
		if resp.StatusCode == 200 {
			h.err = json.NewDecoder(resp.Body).Decode(&h.r)
		}
		done <- h
	}()
	return done
}

// waitForWaiters blocks until a search is held (its subscription is open).
func (e *env) waitForWaiters() {
	e.t.Helper()
	testkit.WaitFor(e.t, "the search held", func() bool { return e.hub.Waiters() > 0 })
}

func TestWaitIsAnsweredByVirtualSMS(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		e := newEnv(t, db)
		e.api.WaitHold = time.Minute
		const search = "/api/sms/15550001111/messages?body=code"
		done := e.holdSearch(search + "&wait=true")
		e.waitForWaiters()
		// Neither a non-matching message nor one on another number answers
		// it: both are stored, and the held search's own terms find neither,
		// so the wait's answer below can hold only the match.
		e.virtual("+15551230001", activePhone, "unrelated")
		e.do(http.MethodPost, e.otherKey, "/api/sms/virtual", map[string]string{"from_number": "+15551230001", "to_number": otherPhone, "body": "code 1"}, nil)
		var r searchResp
		if e.get(e.key, "/api/sms/15550001111/messages?body=unrelated", &r); r.TotalCount != 1 {
			t.Fatalf("the non-matching message was not stored: %+v", r)
		}
		if e.get(e.otherKey, "/api/sms/"+strings.TrimPrefix(otherPhone, "+")+"/messages?body=code", &r); r.TotalCount != 1 {
			t.Fatalf("the other number's message was not stored: %+v", r)
		}
		if e.get(e.key, search, &r); r.TotalCount != 0 {
			t.Fatalf("the held search's terms match a message that is not its: %+v", r)
		}
		select {
		case h := <-done:
			t.Fatalf("wait answered early: %+v", h)
		default:
		}
		m := e.virtual("+15551230001", activePhone, "Your code is 424242")
		h := testkit.Receive(t, "the wait's answer", done)
		if h.err != nil || h.status != 200 || h.r.TotalCount != 1 || h.r.Data[0].ID != m.ID {
			t.Fatalf("wait answered %+v", h)
		}
		if h.r.Options["wait"] != true || h.r.Options["body"] != "code" {
			t.Errorf("options %v", h.r.Options)
		}
		if e.hub.Waiters() != 0 {
			t.Errorf("%d subscriptions left open", e.hub.Waiters())
		}
	})
}

func TestWaitRedirectsAfterHold(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		e := newEnv(t, db)
		path := "/api/sms/%2B15550001111/messages?body=never&wait=1&limit=3&from_date=2026-01-01T00:00:00Z"
		resp := e.get(e.key, path, nil)
		if resp.StatusCode != http.StatusTemporaryRedirect {
			t.Fatalf("status %d, want 307", resp.StatusCode)
		}
		if loc := resp.Header.Get("Location"); loc != path {
			t.Fatalf("Location %q, want %q", loc, path)
		}
		// A match already present is answered at once.
		e.virtual("+15551230001", activePhone, "never say never")
		var r searchResp
		if resp := e.get(e.key, path, &r); resp.StatusCode != 200 || r.TotalCount != 1 {
			t.Fatalf("status %d total %d", resp.StatusCode, r.TotalCount)
		}
		// Without wait an empty result is answered, not held.
		if resp := e.get(e.key, "/api/sms/+15550001111/messages?body=nothing", &r); resp.StatusCode != 200 || r.TotalCount != 0 {
			t.Fatalf("no wait: status %d total %d", resp.StatusCode, r.TotalCount)
		}
	})
}

// TestWaitRechecksWhileDegraded stores a message whose wake-up never arrives (as
// when another replica's notification is lost): a held search finds it by
// re-checking while Degraded reports true.
func TestWaitRechecksWhileDegraded(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		e := newEnv(t, db)
		e.api.WaitHold = time.Minute
		e.api.Degraded = func() bool { return true }
		done := e.holdSearch("/api/sms/+15550001111/messages?wait=true")
		e.waitForWaiters()
		silent := sms.NewService(db, nil, 0, nil)
		if _, _, err := silent.Receive(context.Background(), e.active, sms.Inbound{From: "+15551230001", Body: "lost wake-up"}); err != nil {
			t.Fatal(err)
		}
		h := <-done
		if h.err != nil || h.status != 200 || h.r.TotalCount != 1 || h.r.Data[0].Body != "lost wake-up" {
			t.Fatalf("wait answered %+v", h)
		}
	})
}

func TestWaitEndsWhenClientLeaves(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		e := newEnv(t, db)
		e.api.WaitHold = time.Minute
		ctx, cancel := context.WithCancel(context.Background())
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, e.srv.URL+"/api/sms/+15550001111/messages?wait=true", nil)
		req.Header.Set("X-Api-Key", e.key)
		errc := make(chan error, 1)
		go func() {
			resp, err := http.DefaultClient.Do(req)
			if err == nil {
				resp.Body.Close()
			}
			errc <- err
		}()
		e.waitForWaiters()
		cancel()
		if err := <-errc; err == nil {
			t.Fatal("request completed after cancel")
		}
		testkit.WaitFor(t, "the held search's subscription closed after the client left", func() bool { return e.hub.Waiters() == 0 })
	})
}

// TestHeldSMSWaitsNeverMissAMatch holds searches with wait=true on one
// number, each woken only by the messages its filters may match, then sends
// virtual SMS one by one. After each, every held search that the same search
// without wait now finds a match for must be answered 200; the others stay
// held.
func TestHeldSMSWaitsNeverMissAMatch(t *testing.T) {
	queries := []string{
		"body=code", "body=CODE", "body=c", "body=%C3%BCnicode", "body=never+sent",
		"from_number=%2B1555123", "from_number=1555123", "from_number=%2B1666", "from_number=ACME", "from_number=acme",
		"direction=inbound", "direction=outbound",
		"",
		"body=code&from_number=%2B1555", "body=ok&from_number=%2B1555",
	}
	messages := []struct{ from, body string }{
		{"+15551230001", "Your CODE is 424242"},
		{"ACMEBANK", "Ünicode ok"},
		{"+16665550000", "plain"},
	}
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		e := newEnv(t, db)
		e.api.WaitHold = 5 * time.Minute
		base := e.hub.Waiters()
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel() // the searches still held end before the server closes
		done := make([]<-chan held, len(queries))
		for i, q := range queries {
			done[i] = e.holdSearchCtx(ctx, "/api/sms/15550001111/messages?wait=true&"+q)
		}
		testkit.Await(t, fmt.Sprintf("%d searches held", len(queries)), func() (int, bool) {
			n := e.hub.Waiters() - base
			return n, n == len(queries)
		})
		answered := map[int]bool{}
		for n, m := range messages {
			if strings.HasPrefix(m.from, "+") {
				e.virtual(m.from, activePhone, m.body)
			} else if _, _, err := e.svc.Receive(context.Background(), e.active, sms.Inbound{From: m.from, Body: m.body, ProviderMessageID: "SM" + m.from}); err != nil {
				t.Fatal(err) // a provider's message from a sender id
			}
			for i, q := range queries {
				if answered[i] {
					continue
				}
				var r searchResp
				if resp := e.get(e.key, "/api/sms/15550001111/messages?"+q, &r); resp.StatusCode != 200 {
					t.Fatalf("search %q: %d", q, resp.StatusCode)
				}
				if r.TotalCount == 0 {
					continue
				}
				h := testkit.Receive(t, fmt.Sprintf("held %q answered after message %d (%q), which the search finds", q, n, m.body), done[i])
				if h.err != nil || h.status != 200 || h.r.TotalCount == 0 {
					t.Fatalf("after message %d, held %q answered %+v", n, q, h)
				}
				answered[i] = true
			}
		}
		for i, q := range queries {
			if answered[i] {
				continue
			}
			select {
			case h := <-done[i]:
				t.Errorf("held %q answered %+v with no match", q, h)
			default:
			}
		}
		if len(answered) < len(queries)/2 || len(answered) == len(queries) {
			t.Fatalf("%d of %d searches answered", len(answered), len(queries))
		}
	})
}
