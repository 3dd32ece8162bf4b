package web_test

import (
	"net/http"
	"net/url"
	"testing"

	"github.com/catchbox/catchbox/internal/store"
	"github.com/catchbox/catchbox/internal/store/storetest"
)

// isolationCase is one page or form of organisation default's, which a user
// of organisation other must not see nor change.
type isolationCase struct {
	method, path string
	form         url.Values
}

// Nothing of one organisation is visible to another's user: every page and
// form that names a resource of default's answers 404 to bob, whose lists
// show none of it, and nothing changes; alice still sees it all.
func TestIsolation(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		e := newEnv(t, db, nil)
		id := e.deliver("default", mail("Secret of default", "the secret body"))
		alice, bob := e.browser(), e.browser()
		alice.signIn("alice@example.com")
		bob.signIn("bob@example.com")

		cases := []isolationCase{
			{"GET", "/inboxes/default", nil},
			{"GET", "/inboxes/default/rows", nil},
			{"GET", "/inboxes/default/events", nil},
			{"GET", "/inboxes/default/settings", nil},
			{"POST", "/inboxes/default/settings", url.Values{"retention_time": {"120"}}},
			{"POST", "/inboxes/default/clear", nil},
			{"GET", "/emails/" + id, nil},
			{"GET", "/emails/" + id + "?tab=raw", nil},
			{"GET", "/emails/" + id + "/body", nil},
			{"POST", "/emails/" + id + "/delete", nil},
			{"POST", "/emails/" + id + "/share", nil},
		}
		cases = append(cases, extraIsolationCases(t, e)...)
		for _, c := range cases {
			var p page
			if c.method == http.MethodGet {
				p = bob.get(c.path)
			} else {
				p = bob.post(c.path, c.form)
			}
			if p.status != http.StatusNotFound {
				t.Errorf("bob %s %s: %d, want 404", c.method, c.path, p.status)
			}
			mustLack(t, p, "Secret of default", "the secret body")
		}
		p := bob.get("/inboxes")
		mustContain(t, p, "elsewhere")
		mustLack(t, p, `href="/inboxes/default"`)
		if p := bob.post("/organisation/switch", url.Values{"org": {e.org.ID}}); p.status != http.StatusForbidden {
			t.Errorf("bob switches to default: %d", p.status)
		}
		for _, path := range []string{"/organisation", "/authenticators", "/sms", "/outbound"} {
			mustLack(t, bob.get(path), "Secret of default", "alices-key", "15550009999")
			mustContain(t, alice.get(path), map[string]string{"/organisation": "alices-key", "/authenticators": "Secret of default",
				"/sms": "15550009999", "/outbound": "Secret of default"}[path])
		}
		mustContain(t, alice.get("/emails/"+id), "Secret of default")
		mustContain(t, alice.get("/inboxes/default/settings"), `value="86400"`)
	})
}
