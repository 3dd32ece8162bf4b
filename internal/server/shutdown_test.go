package server_test

import (
	"bytes"
	"net/http"
	"net/smtp"
	"strings"
	"testing"
	"time"

	"github.com/catchbox/catchbox/internal/server/servertest"
	"github.com/catchbox/catchbox/internal/store"
	"github.com/catchbox/catchbox/internal/store/storetest"
	"github.com/catchbox/catchbox/internal/testkit"
)

// TestShutdownAnswersHeldWaits checks graceful shutdown with a wait=true
// search held for an hour (CATCHBOX_WAIT_HOLD): stopping the server answers
// it at once with its 307 to the identical URL, so the client asks again
// elsewhere, instead of cutting it; Run then returns. (Without the drain the
// request stays held past the shutdown's time limit and its connection is
// cut with no answer.)
func TestShutdownAnswersHeldWaits(t *testing.T) {
	for _, d := range []store.Dialect{store.SQLite, store.Postgres} {
		t.Run(d.String(), func(t *testing.T) {
			cfg := servertest.Config(t)
			cfg.DatabaseURL = storetest.URL(t, d)
			cfg.HTTPAddr, cfg.SMTPAddr = "127.0.0.1:0", "127.0.0.1:0"
			cfg.WaitHold = time.Hour
			var out bytes.Buffer
			run := start(t, cfg, &out)
			key := regexpKey(t, out.String())

			path := "/api/emails/default/inbox?subject_includes=never-sent&wait=true"
			type answer struct {
				status   int
				location string
				err      error
			}
			answered := make(chan answer, 1)
			go func() {
				req, _ := http.NewRequest("GET", run.ready.PublicURL+path, nil)
				req.Header.Set("X-Api-Key", key)
				client := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
				resp, err := client.Do(req)
				if err != nil {
					answered <- answer{err: err}
					return
				}
				resp.Body.Close()
				answered <- answer{status: resp.StatusCode, location: resp.Header.Get("Location")}
			}()
			// Wait until the request is held (the gauge of /metrics says so);
			// a message for another search proves the hold is not a match.
			testkit.Await(t, "the wait request held", func() (string, bool) {
				line := metricLine(run.fetch(t, run.ready.PublicURL+"/metrics"), "catchbox_held_waits")
				return line, line == "catchbox_held_waits 1"
			})
			if err := smtp.SendMail(run.ready.SMTPAddrs[0], nil, "a@example.org", []string{"x@default.localhost"}, message("x@default.localhost", "other")); err != nil {
				t.Fatal(err)
			}

			run.cancel()
			if err := run.wait(t); err != nil {
				t.Fatalf("Run returned %v", err)
			}
			// The answer was written before Run returned; the bound only keeps
			// a broken drain from hanging the suite (the request is held for
			// an hour).
			a := testkit.Receive(t, "the held wait's answer", answered)
			if a.err != nil || a.status != http.StatusTemporaryRedirect || a.location != path {
				t.Fatalf("held wait at shutdown: %+v, want 307 to %s", a, path)
			}
		})
	}
}

// metricLine is the line of a /metrics page that gives the value of the
// unlabelled metric name, or a note that it is absent.
func metricLine(page, name string) string {
	for line := range strings.Lines(page) {
		if rest, ok := strings.CutPrefix(line, name+" "); ok {
			return name + " " + strings.TrimSpace(rest)
		}
	}
	return name + " is absent"
}
