package web_test

import (
	"bufio"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/catchbox/catchbox/internal/config"
	"github.com/catchbox/catchbox/internal/store"
	"github.com/catchbox/catchbox/internal/store/storetest"
)

// A person signs in, sees their inboxes with counts, creates one, finds mail
// in it newest first and filtered, opens an email and deletes it, and clears
// the inbox.
func TestDashboardInbox(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		e := newEnv(t, db, nil)
		b := e.browser()
		p := b.get("/")
		if p.status != http.StatusOK {
			t.Fatalf("GET / signed out: %d", p.status)
		}
		mustContain(t, p, `action="/signin"`, `type="password"`)
		if p := b.get("/inboxes"); p.status != http.StatusSeeOther || p.header.Get("Location") != "/signin?next=%2Finboxes" {
			t.Fatalf("GET /inboxes signed out: %d %q", p.status, p.header.Get("Location"))
		}
		b.signIn("alice@example.com")
		e.deliver("default", mail("Welcome aboard", "hello"))
		mustContain(t, b.get("/"), "default", "<strong>1</strong> email", "alice@example.com")

		if p := b.post("/inboxes", url.Values{"namespace": {"Signup"}}); p.status != http.StatusSeeOther || p.header.Get("Location") != "/inboxes/signup" {
			t.Fatalf("create namespace: %d %q %s", p.status, p.header.Get("Location"), p.body)
		}
		mustContain(t, b.get("/inboxes/signup"), `<p class="flash" role="status">Created inbox signup.</p>`)
		mustLack(t, b.get("/inboxes/signup"), "Created inbox signup.")
		if p := b.post("/inboxes", url.Values{"namespace": {"elsewhere"}}); p.status != http.StatusConflict {
			t.Fatalf("create a taken name: %d", p.status)
		}
		if p := b.post("/inboxes", url.Values{"namespace": {"-bad-"}}); p.status != http.StatusBadRequest {
			t.Fatalf("create a bad name: %d", p.status)
		}
		first := e.deliver("signup", mail("Your code is 482913", "Use 482913 to sign in."))
		second := e.deliver("signup", mail("Reset your password", "Follow the link."))
		p = b.get("/inboxes/signup")
		mustContain(t, p, "Reset your password", "Your code is 482913", `data-live-events="/inboxes/signup/events"`, "482913")
		if strings.Index(p.body, "Reset your password") > strings.Index(p.body, "Your code is") {
			t.Fatal("inbox is not newest first")
		}
		p = b.get("/inboxes/signup?subject_includes=code")
		mustContain(t, p, "Your code is 482913")
		mustLack(t, p, "Reset your password")
		if p := b.get("/inboxes/signup?limit=99"); p.status != http.StatusBadRequest {
			t.Fatalf("limit out of range: %d", p.status)
		}
		p = b.get("/inboxes/signup/rows")
		mustContain(t, p, "Reset your password")
		mustLack(t, p, "<html")

		p = b.get("/emails/" + first)
		mustContain(t, p, "Your code is 482913", "Sender &lt;sender@example.com&gt;", `<code class="otp" id="code-0">482913</code>`)
		mustContain(t, b.get("/emails/"+first+"?tab=headers"), "content-type", "subject")
		mustContain(t, b.get("/emails/"+first+"?tab=raw"), "Use 482913 to sign in.")

		if p := b.post("/emails/"+first+"/delete", nil); p.status != http.StatusSeeOther {
			t.Fatalf("delete email: %d", p.status)
		}
		if p := b.get("/emails/" + first); p.status != http.StatusNotFound {
			t.Fatalf("deleted email: %d", p.status)
		}
		mustContain(t, b.get("/inboxes/signup"), "Reset your password")
		if p := b.post("/inboxes/signup/clear", nil); p.status != http.StatusSeeOther {
			t.Fatalf("clear: %d", p.status)
		}
		if p := b.get("/emails/" + second); p.status != http.StatusNotFound {
			t.Fatalf("email after clear: %d", p.status)
		}
		mustContain(t, b.get("/inboxes/signup"), "No mail yet")
	})
}

// An email's HTML is served alone for a sandboxed frame, with a policy that
// runs no script and loads no remote image until the person allows images.
func TestEmailBodyPolicy(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		e := newEnv(t, db, nil)
		b := e.browser()
		b.signIn("alice@example.com")
		id := e.deliver("default", "From: a@example.com\nTo: b@default.localhost\nSubject: html\nContent-Type: text/html\n\n"+
			`<p>Hi</p><script>alert(1)</script><img src="http://tracker.example/p.gif"><img src="cid:logo">`+"\n")
		p := b.get("/emails/" + id)
		mustContain(t, p, `<iframe class="body"`, `sandbox="allow-popups allow-popups-to-escape-sandbox"`, `src="/emails/`+id+`/body"`)
		p = b.get("/emails/" + id + "/body")
		csp := p.header.Get("Content-Security-Policy")
		for _, want := range []string{"default-src 'none'", "img-src data:;", "sandbox"} {
			if !strings.Contains(csp, want) {
				t.Fatalf("body CSP %q lacks %q", csp, want)
			}
		}
		if strings.Contains(csp, "script-src") || strings.Contains(csp, "allow-scripts") {
			t.Fatalf("body CSP %q allows scripts", csp)
		}
		mustContain(t, p, "<p>Hi</p>")
		mustLack(t, p, "cid:logo")
		p = b.get("/emails/" + id + "/body?images=1")
		if csp := p.header.Get("Content-Security-Policy"); !strings.Contains(csp, "img-src data: https: http:") || strings.Contains(csp, "allow-scripts") {
			t.Fatalf("body CSP with images %q", csp)
		}
		if csp := b.get("/inboxes").header.Get("Content-Security-Policy"); !strings.Contains(csp, "script-src 'self'") || strings.Contains(csp, "unsafe-inline") {
			t.Fatalf("page CSP %q", csp)
		}
	})
}

// The inbox's event stream sends "mail" when mail lands in the namespace
// (subscribed before the first byte is sent, so none is missed).
func TestInboxEvents(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		e := newEnv(t, db, nil)
		b := e.browser()
		b.signIn("alice@example.com")
		req, _ := http.NewRequest(http.MethodGet, e.base+"/inboxes/default/events", nil)
		resp, err := b.client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		if ct := resp.Header.Get("Content-Type"); resp.StatusCode != http.StatusOK || ct != "text/event-stream" {
			t.Fatalf("events: %d %q", resp.StatusCode, ct)
		}
		r := bufio.NewReader(resp.Body)
		for { // the opening comment: the subscription is in place
			line, err := r.ReadString('\n')
			if err != nil {
				t.Fatal(err)
			}
			if strings.HasPrefix(line, ": live") {
				break
			}
		}
		e.deliver("default", mail("for default", "x"))
		var got []string
		for len(got) < 2 {
			line, err := r.ReadString('\n')
			if err != nil {
				t.Fatal(err)
			}
			if line = strings.TrimSpace(line); line != "" {
				got = append(got, line)
			}
		}
		if got[0] != "event: mail" || got[1] != "data: {}" {
			t.Fatalf("events: %q", got)
		}
	})
}

// The inbox's time filters take the form's date and time (UTC) or the API's
// Unix seconds, and bound the emails as the API's search does.
func TestInboxTimeFilter(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		e := newEnv(t, db, nil)
		b := e.browser()
		b.signIn("alice@example.com")
		e.deliver("default", mail("Arrived now", "x"))
		now := time.Now().UTC()
		past := now.Add(-2 * time.Hour).Format("2006-01-02T15:04")
		future := now.Add(2 * time.Hour).Format("2006-01-02T15:04")
		mustContain(t, b.get("/inboxes/default?from_timestamp="+past), "Arrived now", `value="`+past+`"`)
		mustLack(t, b.get("/inboxes/default?from_timestamp="+future), "Arrived now")
		mustLack(t, b.get("/inboxes/default?to_timestamp="+past), "Arrived now")
		mustContain(t, b.get(fmt.Sprintf("/inboxes/default?from_timestamp=%d", now.Add(-time.Hour).Unix())), "Arrived now")
		if p := b.get("/inboxes/default?from_timestamp=2026-13-45T99:00"); p.status != http.StatusBadRequest {
			t.Fatalf("bad date: %d", p.status)
		}
	})
}

// The inbox settings page shows how to read the inbox with a mail client: the
// IMAP port when IMAP is on, nothing for POP3 when it is off.
func TestSettingsShowMailboxPorts(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		e := newEnv(t, db, func(c *config.Serve) { c.IMAPAddr, c.POP3Addr = "127.0.0.1:1143", "" })
		alice := e.browser()
		alice.signIn("alice@example.com")
		p := alice.get("/inboxes/default/settings")
		mustContain(t, p, "IMAP and POP3", `<code id="imap-port">1143</code>`, `<code id="smtp-user">default</code>`)
		mustLack(t, p, `id="pop3-port"`)
	})
}
