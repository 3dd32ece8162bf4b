package web_test

import (
	"io"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/catchbox/catchbox/internal/store"
	"github.com/catchbox/catchbox/internal/store/storetest"
)

// phish is text a link might try to make the dashboard say.
const phish = "Your session expired: call 555-0100"

// No page shows text taken from its address: the flash parameter of old, a
// share link, a key, or any other made-up parameter.
func TestNoTextFromTheAddress(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		e := newEnv(t, db, nil)
		id := e.deliver("default", mail("Hello", "body"))
		q := url.QueryEscape(phish)
		anon := e.browser()
		for _, path := range []string{"/signin?flash=" + q, "/?flash=" + q, "/signin?next=%2F&flash=" + q + "&message=" + q} {
			p := anon.get(path)
			if p.status != http.StatusOK {
				t.Fatalf("GET %s: %d", path, p.status)
			}
			mustLack(t, p, "555-0100")
		}
		b := e.browser()
		b.signIn("alice@example.com")
		for _, path := range []string{
			"/inboxes?flash=" + q, "/inboxes/default?flash=" + q, "/inboxes/default/settings?flash=" + q,
			"/emails/" + id + "?flash=" + q + "&share=" + q, "/emails/" + id + "?tab=raw&share=https%3A%2F%2Fevil.example%2F555-0100",
			"/organisation?flash=" + q + "&key=cbx_555-0100&new_key=" + q, "/authenticators?flash=" + q, "/sms?flash=" + q,
			"/outbound?flash=" + q, "/?flash=" + q,
		} {
			p := b.get(path)
			if p.status != http.StatusOK {
				t.Fatalf("GET %s: %d", path, p.status)
			}
			mustLack(t, p, "555-0100", `class="flash"`)
		}
	})
}

// A form's message is shown once, on the page the form redirects to, from a
// cookie sealed by the server: not in the address, not again on reload, not
// to a script's fetch of rows, not once it is a minute old, and not when it
// was not made by this server.
func TestMessagesShowOnce(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		e := newEnv(t, db, nil)
		b := e.browser()
		b.signIn("alice@example.com")
		flash := `<p class="flash" role="status">Deleted 0 emails.</p>`

		p := b.post("/inboxes/default/clear", nil)
		if p.status != http.StatusSeeOther || p.header.Get("Location") != "/inboxes/default" {
			t.Fatalf("clear: %d %q", p.status, p.header.Get("Location"))
		}
		var c *http.Cookie
		for _, k := range (&http.Response{Header: p.header}).Cookies() {
			if k.Name == "catchbox_note" {
				c = k
			}
		}
		if c == nil || !c.HttpOnly || c.SameSite != http.SameSiteLaxMode || c.MaxAge <= 0 || c.MaxAge > 60 || strings.Contains(c.Value, "Deleted") {
			t.Fatalf("the message's cookie: %+v", c)
		}
		// A script's fetch of the rows and the event stream leave it for the page.
		mustLack(t, b.do(http.MethodGet, "/inboxes/default/rows", nil, map[string]string{"Sec-Fetch-Dest": "empty"}), "Deleted 0 emails.")
		mustContain(t, b.do(http.MethodGet, "/inboxes/default", nil, map[string]string{"Sec-Fetch-Dest": "document"}), flash)
		mustLack(t, b.get("/inboxes/default"), "Deleted 0 emails.")

		// A minute on, a message not followed is gone.
		b.post("/inboxes/default/clear", nil)
		e.clock.Add(2 * time.Minute)
		mustLack(t, b.get("/inboxes/default"), "Deleted 0 emails.")

		// A forged or damaged cookie shows nothing.
		u, _ := url.Parse(e.base)
		for _, v := range []string{"forged", c.Value[:len(c.Value)-4] + "AAAA", strings.Repeat("A", 20000)} {
			b.jar.SetCookies(u, []*http.Cookie{{Name: "catchbox_note", Value: v, Path: "/"}})
			p := b.get("/inboxes/default")
			if p.status != http.StatusOK {
				t.Fatalf("with a forged note: %d", p.status)
			}
			mustLack(t, p, `class="flash"`)
		}

		// Signing out says so on the sign-in page, once.
		if p := b.post("/signout", nil); p.status != http.StatusSeeOther {
			t.Fatalf("sign out: %d", p.status)
		}
		mustContain(t, b.get("/signin"), "You are signed out.")
		mustLack(t, b.get("/signin"), "You are signed out.")
	})
}

// Creating an API key answers with a redirect: the organisation page shows
// the key once, a reload neither shows it again nor creates another, and the
// key's note opens for the session that created it only.
func TestKeyCreationRedirects(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		e := newEnv(t, db, nil)
		b := e.browser()
		b.signIn("alice@example.com")
		keys := func() int {
			n, err := e.svc.Tenants.ListKeys(t.Context(), e.org.ID, true)
			if err != nil {
				t.Fatal(err)
			}
			return len(n)
		}
		before := keys()
		p := b.post("/organisation/keys", url.Values{"label": {"deploy"}})
		if p.status != http.StatusSeeOther || p.header.Get("Location") != "/organisation" {
			t.Fatalf("create key: %d %q", p.status, p.header.Get("Location"))
		}
		var note *http.Cookie
		for _, k := range (&http.Response{Header: p.header}).Cookies() {
			if k.Name == "catchbox_note" {
				note = k
			}
		}
		if note == nil || strings.Contains(note.Value, "cbx_") {
			t.Fatalf("the key's note: %+v", note)
		}
		// The note planted in another user's session does not open there.
		bob := e.browser()
		bob.signIn("bob@example.com")
		u, _ := url.Parse(e.base)
		bob.jar.SetCookies(u, []*http.Cookie{{Name: note.Name, Value: note.Value, Path: "/"}})
		mustLack(t, bob.get("/organisation"), "cbx_", `id="new-key"`)

		page := b.get("/organisation")
		key := regexp.MustCompile(`<code class="secret" id="new-key">(cbx_[a-z0-9]+)</code>`).FindStringSubmatch(page.body)
		if key == nil {
			t.Fatalf("the new key is not shown:\n%s", page.body)
		}
		req, _ := http.NewRequest(http.MethodGet, e.base+"/api/test", nil)
		req.Header.Set("X-Api-Key", key[1])
		if resp, err := http.DefaultClient.Do(req); err != nil || resp.StatusCode != http.StatusOK {
			t.Fatalf("the new key on the API: %v %v", resp, err)
		}
		mustLack(t, b.get("/organisation"), key[1], `id="new-key"`)
		if got := keys(); got != before+1 {
			t.Fatalf("%d keys after one creation and two reloads, want %d", got, before+1)
		}
	})
}

// A share link is shown on the email's page once, after the form's redirect;
// the address carries nothing.
func TestShareLinkShownOnce(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		e := newEnv(t, db, nil)
		id := e.deliver("default", mail("Share me", "body"))
		other := e.deliver("default", mail("Another", "body"))
		b := e.browser()
		b.signIn("alice@example.com")
		p := b.post("/emails/"+id+"/share", nil)
		if p.status != http.StatusSeeOther || p.header.Get("Location") != "/emails/"+id {
			t.Fatalf("share: %d %q", p.status, p.header.Get("Location"))
		}
		// Shown on that email's page only.
		mustLack(t, b.get("/emails/"+other), "/api/share/email/")
		b.post("/emails/"+id+"/share", nil)
		page := b.get("/emails/" + id)
		mustContain(t, page, `<code id="share-url">`+e.base+`/api/share/email/`, "Share link created.")
		mustLack(t, b.get("/emails/"+id), "/api/share/email/")
	})
}

// Every page's title says what the page is, not only a name.
func TestPageTitles(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		e := newEnv(t, db, nil)
		id := e.deliver("default", mail("Quarterly numbers", "body"))
		untitled := e.deliver("default", "From: a@example.com\nTo: b@default.localhost\n\nno subject\n")
		b := e.browser()
		b.signIn("alice@example.com")
		title := regexp.MustCompile(`<title>([^<]*)</title>`)
		for path, want := range map[string]string{
			"/":                          "Inboxes · Catchbox",
			"/inboxes":                   "Inboxes · Catchbox",
			"/inboxes/default":           "Inbox default · Catchbox",
			"/inboxes/default/settings":  "Inbox default settings · Catchbox",
			"/emails/" + id:              "Email: Quarterly numbers · Catchbox",
			"/emails/" + id + "?tab=raw": "Email: Quarterly numbers · Catchbox",
			"/emails/" + untitled:        "Email (no subject) · Catchbox",
			"/organisation":              "Organisation default · Catchbox",
			"/authenticators":            "Authenticators · Catchbox",
			"/sms":                       "SMS numbers · Catchbox",
			"/outbound":                  "Outbound email · Catchbox",
			"/inboxes/nosuch":            "Not Found · Catchbox",
		} {
			m := title.FindStringSubmatch(b.get(path).body)
			if m == nil || m[1] != want {
				t.Errorf("%s: title %q, want %q", path, m, want)
			}
		}
	})
}

// The raw source: in a box the keyboard can reach (it scrolls), and
// downloadable from the page, the exact bytes received, through the API's
// signed link.
func TestRawSourceDownload(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		e := newEnv(t, db, nil)
		raw := mail("Raw please", "line one\nline two")
		id := e.deliver("default", raw)
		b := e.browser()
		b.signIn("alice@example.com")
		p := b.get("/emails/" + id + "?tab=raw")
		mustContain(t, p, `<pre class="raw" tabindex="0" role="region" aria-label="Raw source">`, "Download .eml")
		m := regexp.MustCompile(`<a class="btn" href="([^"]+)" download="` + id + `.eml">Download .eml</a>`).FindStringSubmatch(p.body)
		if m == nil {
			t.Fatalf("no download link:\n%s", p.body)
		}
		link := strings.ReplaceAll(m[1], "&amp;", "&")
		if !strings.HasPrefix(link, e.base+"/download/raw/"+id+"?") {
			t.Fatalf("download link %q", link)
		}
		resp, err := http.Get(link) // a signed link: no cookie, no key
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK || string(body) != strings.ReplaceAll(raw, "\n", "\r\n") ||
			resp.Header.Get("Content-Disposition") != `attachment; filename="`+id+`.eml"` {
			t.Fatalf("download: %d %q %q", resp.StatusCode, resp.Header.Get("Content-Disposition"), body)
		}
		mustContain(t, b.get("/emails/"+id+"?tab=text"), `<pre class="text" tabindex="0" role="region"`)
	})
}

// The inbox's search works with any subset of its fields: the form sends the
// empty ones too.
func TestInboxSearchEmptyFields(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		e := newEnv(t, db, nil)
		e.deliver("default", mail("Welcome aboard", "x"))
		e.deliver("default", mail("Invoice 42", "y"))
		b := e.browser()
		b.signIn("alice@example.com")
		empty := "to_addr_prefix=&from_addr_includes=&subject_includes=&from_timestamp=&to_timestamp="
		for query, want := range map[string][]string{
			strings.Replace(empty, "subject_includes=", "subject_includes=welcome", 1):    {"Welcome aboard"},
			strings.Replace(empty, "from_addr_includes=", "from_addr_includes=sender", 1): {"Welcome aboard", "Invoice 42"},
			strings.Replace(empty, "to_addr_prefix=", "to_addr_prefix=nobody", 1):         nil,
			empty: {"Welcome aboard", "Invoice 42"},
		} {
			p := b.get("/inboxes/default?" + query)
			if p.status != http.StatusOK {
				t.Fatalf("%s: %d %s", query, p.status, p.body)
			}
			for _, s := range []string{"Welcome aboard", "Invoice 42"} {
				if strings.Contains(p.body, s) != contains(want, s) {
					t.Errorf("%s: shows %q: %v", query, s, !contains(want, s))
				}
			}
		}
	})
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

// List times carry their date and zone: the machine-readable time, and a
// text in UTC (named) that the browser's script turns into its own zone.
func TestListTimes(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		e := newEnv(t, db, nil)
		e.deliver("default", mail("Timed", "x"))
		b := e.browser()
		b.signIn("alice@example.com")
		stamp := regexp.MustCompile(`<time datetime="(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ)" data-local="seconds">(\d{1,2} [A-Z][a-z]{2} \d{4}, \d\d:\d\d:\d\d UTC)</time>`)
		for _, path := range []string{"/inboxes/default", "/inboxes/default/rows"} {
			m := stamp.FindStringSubmatch(b.get(path).body)
			if m == nil {
				t.Fatalf("%s: no time with date and zone", path)
			}
			at, _ := time.Parse(time.RFC3339, m[1])
			if m[2] != at.Format("2 Jan 2006, 15:04:05 UTC") || time.Since(at) > time.Hour {
				t.Fatalf("%s: %q shown as %q", path, m[1], m[2])
			}
		}
		mustContain(t, b.get("/organisation"), `data-local="minutes">`)
	})
}
