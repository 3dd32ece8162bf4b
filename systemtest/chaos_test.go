package systemtest

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/emersion/go-smtp"

	"github.com/catchbox/catchbox/internal/store"
	"github.com/catchbox/catchbox/internal/store/storetest"
	"github.com/catchbox/catchbox/internal/testkit"
)

// apiCall sends a request with the test key and fails the test unless the
// answer has the status.
func apiCall(t *testing.T, ctx context.Context, base, method, path, body string, status int) string {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, method, base+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("X-Api-Key", testAPIKey)
	req.Header.Set("Content-Type", "application/json")
	res, err := httpClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	if res.StatusCode != status {
		t.Fatalf("%s %s: %d %s, want %d", method, path, res.StatusCode, b, status)
	}
	return string(b)
}

// rcptReply is the reply to RCPT TO:<to> on a fresh connection to addr: 250,
// or the code of the SMTP error.
func rcptReply(t *testing.T, addr, to string) int {
	t.Helper()
	c, err := dialSMTP(addr)
	if err != nil {
		t.Fatalf("dial SMTP %s: %v", addr, err)
	}
	defer c.Close()
	if err := c.Mail("app@example.com", nil); err != nil {
		t.Fatalf("MAIL: %v", err)
	}
	err = c.Rcpt(to, nil)
	var se *smtp.SMTPError
	switch {
	case err == nil:
		return 250
	case errors.As(err, &se):
		return se.Code
	}
	t.Fatalf("RCPT %s: %v", to, err)
	return 0
}

// deliverTo sends one message to `to` through addr and returns the code of
// the final reply (250 when stored).
func deliverTo(t *testing.T, addr, to, subject string) int {
	t.Helper()
	c, err := dialSMTP(addr)
	if err != nil {
		t.Fatalf("dial SMTP %s: %v", addr, err)
	}
	defer c.Close()
	msg := "From: app@example.com\r\nTo: " + to + "\r\nSubject: " + subject + "\r\n\r\nbody\r\n"
	err = c.SendMail("app@example.com", []string{to}, strings.NewReader(msg))
	var se *smtp.SMTPError
	switch {
	case err == nil:
		return 250
	case errors.As(err, &se):
		return se.Code
	}
	t.Fatalf("send %q: %v", subject, err)
	return 0
}

// stored counts the emails of the namespace with the subject.
func stored(t *testing.T, ctx context.Context, base, ns, subject string) int {
	t.Helper()
	var r searchResult
	if err := apiGet(ctx, base, "/api/emails/"+ns+"/inbox", url.Values{"subject_includes": {subject}}, &r); err != nil {
		t.Fatal(err)
	}
	return r.TotalCount
}

// TestChaosAcrossReplicas runs two replicas on one PostgreSQL schema: fault
// rules set through one apply on the other, an "every" rule counts the
// messages of both, and another namespace's replies never change on either.
func TestChaosAcrossReplicas(t *testing.T) {
	skipShort(t)
	dbURL := storetest.URL(t, store.Postgres) // skips without a PostgreSQL server
	env := func() map[string]string {
		return map[string]string{"CATCHBOX_DATA_DIR": t.TempDir(), "CATCHBOX_DATABASE_URL": dbURL, "CATCHBOX_SECRET_KEY": sharedSecret}
	}
	a := spawnServer(t, "replica A", env())
	b := spawnServer(t, "replica B", env())
	a.waitReady()
	b.waitReady()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()

	apiCall(t, ctx, a.HTTP, "POST", "/api/namespace/calm/settings", `{}`, 201)
	apiCall(t, ctx, a.HTTP, "PUT", "/api/namespace/default/chaos", `{"rules": [
		{"stage": "rcpt", "match": "refuse@*", "reply": "550 5.1.1 Refused by a rule"},
		{"stage": "after_data", "every": 2, "reply": "451 4.3.0 Every second message"}]}`, 200)
	// A applies them before its answer; B once PostgreSQL's notification
	// reaches it.
	if got := rcptReply(t, a.SMTP, "refuse@default.localhost"); got != 550 {
		t.Fatalf("RCPT on A after PUT on A: %d, want 550", got)
	}
	testkit.Await(t, "replica B to apply the rules set through A (RCPT answered 550)", func() (int, bool) {
		got := rcptReply(t, b.SMTP, "refuse@default.localhost")
		return got, got == 550
	})
	for _, s := range []*server{a, b} {
		if got := rcptReply(t, s.SMTP, "refuse@calm.localhost"); got != 250 {
			t.Fatalf("%s: RCPT to the namespace without rules answered %d", s.name, got)
		}
	}

	// The every-2 rule counts across replicas: A, B, A, B gives stored,
	// refused, stored, refused. Counted per replica, A's second message
	// would be the refused one. Mail to calm between them is never counted
	// nor refused.
	var got []int
	for i, s := range []*server{a, b, a, b} {
		got = append(got, deliverTo(t, s.SMTP, "x@default.localhost", fmt.Sprintf("every-%d", i)))
		if code := deliverTo(t, s.SMTP, "x@calm.localhost", fmt.Sprintf("calm-%d", i)); code != 250 {
			t.Fatalf("%s: mail to calm answered %d", s.name, code)
		}
	}
	if fmt.Sprint(got) != "[250 451 250 451]" {
		t.Fatalf("replies to A, B, A, B: %v, want [250 451 250 451]", got)
	}
	for i, want := range []int{1, 0, 1, 0} {
		if n := stored(t, ctx, b.HTTP, "default", fmt.Sprintf("every-%d", i)); n != want {
			t.Fatalf("every-%d stored %d times, want %d", i, n, want)
		}
		if n := stored(t, ctx, a.HTTP, "calm", fmt.Sprintf("calm-%d", i)); n != 1 {
			t.Fatalf("calm-%d stored %d times", i, n)
		}
	}

	// Cleared through B: A stops applying them.
	apiCall(t, ctx, b.HTTP, "DELETE", "/api/namespace/default/chaos", "", 204)
	if got := rcptReply(t, b.SMTP, "refuse@default.localhost"); got != 250 {
		t.Fatalf("RCPT on B after DELETE on B: %d", got)
	}
	testkit.Await(t, "replica A to drop the rules cleared through B (RCPT answered 250)", func() (int, bool) {
		got := rcptReply(t, a.SMTP, "refuse@default.localhost")
		return got, got == 250
	})
	if body := apiCall(t, ctx, a.HTTP, "GET", "/api/namespace/default/chaos", "", 200); strings.TrimSpace(body) != `{"data":{"rules":[]}}` {
		t.Fatalf("GET on A after DELETE on B: %s", body)
	}
}

// TestChaosSurvivesRestart sets a rule, kills the server and starts it again
// on the same store: the first connection after the restart sees the rule.
func TestChaosSurvivesRestart(t *testing.T) {
	skipShort(t)
	for _, d := range []store.Dialect{store.SQLite, store.Postgres} {
		t.Run(d.String(), func(t *testing.T) {
			env := map[string]string{"CATCHBOX_DATA_DIR": t.TempDir(), "CATCHBOX_SECRET_KEY": sharedSecret}
			if d == store.Postgres {
				env["CATCHBOX_DATABASE_URL"] = storetest.URL(t, store.Postgres)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
			defer cancel()
			s := startServer(t, "before", env)
			apiCall(t, ctx, s.HTTP, "PUT", "/api/namespace/default/chaos", `{"rules": [{"stage": "rcpt", "reply": "421 4.3.2 Down for a test"}]}`, 200)
			s.kill()
			s = startServer(t, "after", env)
			if got := rcptReply(t, s.SMTP, "x@default.localhost"); got != 421 {
				t.Fatalf("RCPT after a restart: %d, want 421", got)
			}
		})
	}
}
