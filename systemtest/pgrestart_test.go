package systemtest

import (
	"context"
	"net/http"
	"net/url"
	"testing"
	"time"

	"github.com/catchbox/catchbox/internal/testkit"
)

// TestPostgresRestart stops PostgreSQL (immediate mode, like a crash) while
// SMTP clients send continuously, keeps sending while it is down, and starts it
// again. While it is down clients must be told to try later (4xx) or lose the
// connection, never get a 5xx, and never get a 250 for a message that was not
// committed; once it is back the service must resume by itself; and every
// message answered 250 before, during or after must be stored.
func TestPostgresRestart(t *testing.T) {
	skipShort(t)
	pg := startPGCluster(t)
	srv := startServer(t, "catchbox", map[string]string{
		"CATCHBOX_DATA_DIR":     t.TempDir(),
		"CATCHBOX_DATABASE_URL": pg.URL(),
		"CATCHBOX_SECRET_KEY":   sharedSecret,
		"CATCHBOX_WAIT_HOLD":    "60s",
	})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()

	addrs := []string{srv.SMTP, srv.SMTP, srv.SMTP, srv.SMTP}
	l := startLoad(t, "pgrestart", addrs, 5000)
	if !testkit.Eventually(testkit.Patience, func() bool { return l.ackedCount() >= 100 }) {
		l.stop()
		t.Fatalf("the load did not reach 100 acknowledged messages: %s", summarize(l.results()))
	}

	// A wait held across the outage: what it gets is reported, not asserted
	// (the outage may end it with an error the client retries).
	waitMsg := newMessage("wait-across", false)
	type answer struct {
		res searchResult
		err error
		at  time.Time
	}
	waitDone := make(chan answer, 1)
	go func() {
		r, err := search(ctx, srv.HTTP, url.Values{"subject_includes": {waitMsg.Subject}, "wait": {"true"}})
		waitDone <- answer{r, err, time.Now()}
	}()
	testkit.Await(t, "the wait held before the outage", func() (float64, bool) {
		n := metric(t, ctx, srv.HTTP, "catchbox_held_waits", nil)
		return n, n > 0
	})

	downAt := time.Now()
	pg.stopImmediate()
	// Keep sending while the database is down; meanwhile ask the API too.
	status, apiErr := apiStatus(ctx, srv.HTTP, "/api/emails/"+namespace+"/inbox")
	t.Logf("an inbox search while PostgreSQL is down: status %d, error %v", status, apiErr)
	time.Sleep(3 * time.Second)
	pg.start()
	upAt := time.Now()

	// The service must resume by itself: new mail is acknowledged again.
	if !testkit.Eventually(2*time.Minute, func() bool { return l.ackedSince("", upAt) >= 50 }) {
		l.stop()
		t.Fatalf("the service did not resume after PostgreSQL came back: since then %s\n(catchbox running: %v)",
			summarize(since(l.results(), upAt)), running(srv))
	}
	l.stop()
	as := l.results()

	// Cross-replica wake-ups resume too: the listener reconnects by itself.
	if testkit.Eventually(testkit.Patience, func() bool { return srv.logs.count(listenerBack) > 0 }) {
		t.Logf("the wake-up listener was back %.1fs after the restart", time.Since(upAt).Seconds())
	} else {
		t.Errorf("the wake-up listener did not reconnect after PostgreSQL came back")
	}
	sendOne(t, srv.SMTP, waitMsg)

	var during []attempt
	firstAck := time.Time{}
	for _, a := range as {
		if a.At.After(downAt) && a.At.Before(upAt) {
			during = append(during, a)
		}
		if a.Outcome == acked && a.At.After(upAt) && (firstAck.IsZero() || a.At.Before(firstAck)) {
			firstAck = a.At
		}
	}
	t.Logf("whole load: %s", summarize(as))
	t.Logf("while PostgreSQL was down (%.1fs): %s", upAt.Sub(downAt).Seconds(), summarize(during))
	t.Logf("after it was back: %s; first 250 %.0fms after the restart", summarize(since(as, upAt)), firstAck.Sub(upAt).Seconds()*1000)
	if len(during) == 0 {
		t.Errorf("no message was tried while PostgreSQL was down: the test proves nothing")
	}
	for _, a := range as {
		if a.Outcome == rejected && a.Code >= 500 {
			t.Errorf("%s got a permanent %d reply (%s); a database outage must be answered 4xx", a.Msg.Token, a.Code, a.Err)
		}
	}

	select {
	case w := <-waitDone:
		t.Logf("the wait held across the outage ended %.1fs after PostgreSQL stopped: total_count %d, error %v",
			w.at.Sub(downAt).Seconds(), w.res.TotalCount, w.err)
	case <-time.After(30 * time.Second):
		t.Logf("the wait held across the outage was still open 30s after its mail was sent")
	}

	verifyAcked(t, srv.HTTP, as)
	got := checkIntegrity(t, pg.URL())
	t.Logf("stored: %d emails (%d attachments)", got.Emails, got.Attachments)
	if !running(srv) {
		t.Errorf("catchbox exited during the test")
	}
}

// listenerBack is logged by the PostgreSQL wake-up listener when it has
// reconnected (internal/notify).
const listenerBack = "Wake-up listener is back; waiting requests re-check once"

// since keeps the attempts whose outcome was known after t0.
func since(as []attempt, t0 time.Time) []attempt {
	var out []attempt
	for _, a := range as {
		if a.At.After(t0) {
			out = append(out, a)
		}
	}
	return out
}

// running reports whether the server process is still alive.
func running(s *server) bool {
	select {
	case <-s.exited:
		return false
	default:
		return true
	}
}

// apiStatus makes one API call and returns its status code.
func apiStatus(ctx context.Context, base, path string) (int, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+path, nil)
	if err != nil {
		return 0, err
	}
	req.Header.Set("X-Api-Key", testAPIKey)
	res, err := httpClient.Do(req)
	if err != nil {
		return 0, err
	}
	res.Body.Close()
	return res.StatusCode, nil
}
