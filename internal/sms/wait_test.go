package sms_test

import (
	"context"
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/catchbox/catchbox/internal/sms"
	"github.com/catchbox/catchbox/internal/store"
	"github.com/catchbox/catchbox/internal/store/storetest"
)

type held struct {
	status int
	r      searchResp
	err    error
}

// holdSearch starts a search with the default key in the background.
func (e *env) holdSearch(path string) <-chan held {
	done := make(chan held, 1)
	go func() {
		req, _ := http.NewRequest(http.MethodGet, e.srv.URL+path, nil)
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
	for i := 0; e.hub.Waiters() == 0; i++ {
		if i > 1000 {
			e.t.Fatal("the search was never held")
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func TestWaitIsAnsweredByVirtualSMS(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		e := newEnv(t, db)
		e.api.WaitHold = time.Minute
		done := e.holdSearch("/api/sms/15550001111/messages?wait=true&body=code")
		e.waitForWaiters()
		// Neither a non-matching message nor one on another number answers it.
		e.virtual("+15551230001", activePhone, "unrelated")
		e.do(http.MethodPost, e.otherKey, "/api/sms/virtual", map[string]string{"from_number": "+15551230001", "to_number": otherPhone, "body": "code 1"}, nil)
		select {
		case h := <-done:
			t.Fatalf("wait answered early: %+v", h)
		case <-time.After(100 * time.Millisecond):
		}
		m := e.virtual("+15551230001", activePhone, "Your code is 424242")
		h := <-done
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
		for i := 0; e.hub.Waiters() != 0; i++ {
			if i > 1000 {
				t.Fatal("the held search kept its subscription after the client left")
			}
			time.Sleep(5 * time.Millisecond)
		}
	})
}
