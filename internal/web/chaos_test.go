package web_test

import (
	"context"
	"net/http"
	"net/url"
	"testing"

	"github.com/catchbox/catchbox/internal/chaos"
	"github.com/catchbox/catchbox/internal/store"
	"github.com/catchbox/catchbox/internal/store/storetest"
	"github.com/catchbox/catchbox/internal/tenant"
)

// TestChaosSection adds, edits, removes and clears a namespace's fault rules
// from the settings page, through the operations the API uses: the rules
// read back with chaos.Service are what the page set, a refused change shows
// the page again with the field named and the typed text kept, and another
// organisation can neither see nor change them.
func TestChaosSection(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		e := newEnv(t, db, nil)
		owner := tenant.Principal{Org: e.org, Orgs: []tenant.Org{e.org}}
		rules := func() []chaos.Rule {
			t.Helper()
			list, err := e.svc.Chaos.Rules(context.Background(), owner, chaos.NamespaceRequest{Namespace: "default"})
			if err != nil {
				t.Fatal(err)
			}
			return list.Rules
		}
		b := e.browser()
		b.signIn("alice@example.com")
		p := b.get("/inboxes/default/settings")
		mustContain(t, p, "Fault rules", "No fault rules")

		p = b.post("/inboxes/default/chaos/add", url.Values{"stage": {"rcpt"}, "match": {"Retry-*@*"}, "probability": {"0.5"},
			"reply": {"451 4.3.0 Try again later"}})
		if p.status != http.StatusSeeOther {
			t.Fatalf("add: %d %s", p.status, p.body)
		}
		b.post("/inboxes/default/chaos/add", url.Values{"stage": {"after_data"}, "every": {"3"}, "disconnect": {"on"}})
		got := rules()
		if len(got) != 2 || got[0].Match != "retry-*@*" || *got[0].Probability != 0.5 || got[1].Stage != chaos.StageAfterData || *got[1].Every != 3 || !got[1].Disconnect {
			t.Fatalf("rules after two adds: %+v", got)
		}
		p = b.get("/inboxes/default/settings")
		mustContain(t, p, "Added fault rule 2.", "<code>retry-*@*</code>", "50% of the time", "reply 451 4.3.0 Try again later", "every 3", "disconnect")

		// A refused add names the field and keeps what was typed.
		p = b.post("/inboxes/default/chaos/add", url.Values{"stage": {"rcpt"}, "match": {"typed@*"}, "reply": {"250 fine"}})
		if p.status != http.StatusBadRequest {
			t.Fatalf("a 2xx reply was answered %d", p.status)
		}
		mustContain(t, p, "The rules were not saved", "<code>rules[2].reply</code>", `value="typed@*"`)
		// A refused JSON edit keeps the text and the old rules.
		p = b.post("/inboxes/default/chaos", url.Values{"rules_json": {`{"rules": [{"stage": "helo", "reply": "421"}]}`}})
		if p.status != http.StatusBadRequest {
			t.Fatalf("a helo rule was answered %d", p.status)
		}
		mustContain(t, p, "<code>rules[0].stage</code>", "helo")
		if len(rules()) != 2 {
			t.Fatal("a refused change changed the rules")
		}
		p = b.post("/inboxes/default/chaos", url.Values{"rules_json": {`{"rules": [{"stage": "data", "delay_ms": 10}, {"stage": "mail", "reply": "553 5.7.1 No"}, {"stage": "rcpt", "reply": "550"}]}`}})
		if p.status != http.StatusSeeOther || len(rules()) != 3 {
			t.Fatalf("JSON save: %d, rules %+v", p.status, rules())
		}
		b.post("/inboxes/default/chaos/remove", url.Values{"index": {"1"}})
		if got := rules(); len(got) != 2 || got[0].Stage != chaos.StageData || got[1].Stage != chaos.StageRcpt {
			t.Fatalf("after removing rule 2: %+v", got)
		}
		if p := b.post("/inboxes/default/chaos/remove", url.Values{"index": {"7"}}); p.status != http.StatusBadRequest {
			t.Fatalf("removing a rule that is not there: %d", p.status)
		}

		// Another organisation's user: neither the section nor the forms.
		bob := e.browser()
		bob.signIn("bob@example.com")
		if p := bob.post("/inboxes/default/chaos/clear", nil); p.status != http.StatusNotFound {
			t.Fatalf("bob clearing alice's rules: %d", p.status)
		}
		mustContain(t, bob.get("/inboxes/elsewhere/settings"), "No fault rules")
		if p := bob.get("/inboxes/default/settings"); p.status != http.StatusNotFound {
			t.Fatalf("bob reading alice's settings: %d", p.status)
		}
		if len(rules()) != 2 {
			t.Fatal("another organisation changed the rules")
		}

		b.post("/inboxes/default/chaos/clear", nil)
		if len(rules()) != 0 {
			t.Fatal("clear left rules")
		}
		mustContain(t, b.get("/inboxes/default/settings"), "No fault rules")
	})
}
