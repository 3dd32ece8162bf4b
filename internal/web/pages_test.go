package web_test

import (
	"bufio"
	"context"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/catchbox/catchbox/internal/sms"
	"github.com/catchbox/catchbox/internal/store"
	"github.com/catchbox/catchbox/internal/store/storetest"
	"github.com/catchbox/catchbox/internal/totp"
)

// The organisation page: a key created is shown once and works with the API,
// the list shows its label and last use, and revoking it ends it.
func TestOrganisationKeys(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		e := newEnv(t, db, nil)
		b := e.browser()
		b.signIn("alice@example.com")
		p := b.post("/organisation/keys", url.Values{"label": {"ci pipeline"}})
		if p.status != http.StatusSeeOther || p.header.Get("Location") != "/organisation" {
			t.Fatalf("create key: %d %q %s", p.status, p.header.Get("Location"), p.body)
		}
		mustLack(t, p, "cbx_")
		p = b.get("/organisation")
		key := regexp.MustCompile(`<code class="secret" id="new-key">(cbx_[a-z0-9]+)</code>`).FindStringSubmatch(p.body)
		if key == nil {
			t.Fatalf("new key not shown:\n%s", p.body)
		}
		api := func() int {
			req, _ := http.NewRequest(http.MethodGet, e.base+"/api/test", nil)
			req.Header.Set("X-Api-Key", key[1])
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			return resp.StatusCode
		}
		if s := api(); s != http.StatusOK {
			t.Fatalf("new key on the API: %d", s)
		}
		p = b.get("/organisation")
		mustContain(t, p, "ci pipeline", "alice@example.com", "messages with an external recipient")
		mustLack(t, p, key[1])
		if strings.Count(p.body, "badge ok\">active") != 2 {
			t.Fatalf("want two active keys:\n%s", p.body)
		}
		id := regexp.MustCompile(`<tr data-key="([0-9a-f-]+)">\s*<td data-label="Label"><div>ci pipeline`).FindStringSubmatch(p.body)
		if id == nil {
			t.Fatal("key row not found")
		}
		if p := b.post("/organisation/keys/"+id[1]+"/revoke", nil); p.status != http.StatusSeeOther {
			t.Fatalf("revoke: %d", p.status)
		}
		if s := api(); s != http.StatusUnauthorized {
			t.Fatalf("revoked key on the API: %d", s)
		}
		mustContain(t, b.get("/organisation"), "revoked")
	})
}

// Authenticators: added by secret or otpauth URL, shown with the current code
// (RFC 6238, the same as totp.Generate gives) and its expiry; bad input is a
// 400 naming the field; deleted.
func TestAuthenticators(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		e := newEnv(t, db, nil)
		b := e.browser()
		b.signIn("alice@example.com")
		if p := b.post("/authenticators", url.Values{"secret": {"JBSWY3DPEHPK3PXP"}, "name": {"GitHub"}}); p.status != http.StatusSeeOther {
			t.Fatalf("add by secret: %d %s", p.status, p.body)
		}
		if p := b.post("/authenticators", url.Values{"otpauth_url": {"otpauth://totp/Acme:alice?secret=GEZDGNBVGY3TQOJQ&issuer=Acme"}}); p.status != http.StatusSeeOther {
			t.Fatalf("add by URL: %d %s", p.status, p.body)
		}
		p := b.post("/authenticators", url.Values{"secret": {"not base32!"}})
		if p.status != http.StatusBadRequest {
			t.Fatalf("bad secret: %d", p.status)
		}
		mustContain(t, p, "secret")
		p = b.get("/authenticators")
		secret, _ := totp.DecodeSecret("JBSWY3DPEHPK3PXP")
		now := time.Now()
		want := totp.Generate(secret, totp.DefaultParams, now).Code
		if !strings.Contains(p.body, ">"+want+"<") && !strings.Contains(p.body, ">"+totp.Generate(secret, totp.DefaultParams, now.Add(-30*time.Second)).Code+"<") {
			t.Fatalf("current code %s not shown:\n%s", want, p.body)
		}
		mustContain(t, p, "GitHub", "Acme (alice)", "data-expires=")
		id := regexp.MustCompile(`data-device="([0-9a-f-]+)"`).FindStringSubmatch(p.body)
		if p := b.post("/authenticators/"+id[1]+"/delete", nil); p.status != http.StatusSeeOther {
			t.Fatalf("delete: %d", p.status)
		}
		if strings.Contains(b.get("/authenticators").body, id[1]) {
			t.Fatal("deleted device still listed")
		}
	})
}

// SMS: numbers listed, a virtual SMS sent from the page shows in the
// number's messages with its code; another organisation's number is 404.
func TestSMSPages(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		e := newEnv(t, db, nil)
		if _, err := e.svc.SMS.Service.AddNumber(context.Background(), e.org.ID, sms.NumberSpec{Phone: "+15550001000", Status: sms.StatusActive, IsTest: true}); err != nil {
			t.Fatal(err)
		}
		b := e.browser()
		b.signIn("alice@example.com")
		mustContain(t, b.get("/sms"), `href="/sms/&#43;15550001000"`)
		if p := b.post("/sms/+15550001000/virtual", url.Values{"from_number": {"+15550002222"}, "body": {"Your code is 913370"}}); p.status != http.StatusSeeOther {
			t.Fatalf("virtual SMS: %d %s", p.status, p.body)
		}
		if p := b.post("/sms/+15550001000/virtual", url.Values{"from_number": {"nope"}, "body": {"x"}}); p.status != http.StatusBadRequest {
			t.Fatalf("virtual SMS from a bad number: %d", p.status)
		}
		p := b.get("/sms/+15550001000")
		mustContain(t, p, "Your code is 913370", `<span class="code-chip">913370</span>`, `data-live-events="/sms/&#43;15550001000/events"`)
		mustContain(t, b.get("/sms/+15550001000/rows"), "913370")
		bob := e.browser()
		bob.signIn("bob@example.com")
		for _, path := range []string{"/sms/+15550001000", "/sms/+15550001000/rows", "/sms/+15550001000/events"} {
			if p := bob.get(path); p.status != http.StatusNotFound {
				t.Fatalf("bob GET %s: %d", path, p.status)
			}
		}
		if p := bob.post("/sms/+15550001000/virtual", url.Values{"from_number": {"+15550002222"}, "body": {"x"}}); p.status != http.StatusNotFound {
			t.Fatalf("bob sends to alice's number: %d", p.status)
		}
		mustLack(t, bob.get("/sms"), "15550001000")
	})
}

// Outbound: a send form to the namespace's own address is accepted and shown
// with its recipients; the list filters; a reply from the email page is sent;
// a refused send names the rule; a deliverability report can be requested.
func TestOutboundPages(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		e := newEnv(t, db, nil)
		b := e.browser()
		b.signIn("alice@example.com")
		p := b.post("/outbound/send", url.Values{"namespace": {"default"}, "from": {"app@default.localhost"},
			"to": {"inbox@default.localhost"}, "subject": {"Hello from the form"}, "text": {"body"}})
		if p.status != http.StatusSeeOther || !strings.HasPrefix(p.header.Get("Location"), "/outbound/") {
			t.Fatalf("send: %d %q %s", p.status, p.header.Get("Location"), p.body)
		}
		loc, _, _ := strings.Cut(p.header.Get("Location"), "?")
		mustContain(t, b.get(loc), "Hello from the form", "inbox@default.localhost", "Timeline")
		mustContain(t, b.get("/outbound"), "Hello from the form")
		mustLack(t, b.get("/outbound?type=reply"), "Hello from the form")
		if p := b.get("/outbound?status=nope"); p.status != http.StatusBadRequest {
			t.Fatalf("bad status filter: %d", p.status)
		}
		p = b.post("/outbound/send", url.Values{"namespace": {"default"}, "from": {"app@elsewhere.localhost"},
			"to": {"inbox@default.localhost"}, "subject": {"x"}, "text": {"y"}})
		if p.status != http.StatusForbidden {
			t.Fatalf("send from another namespace's address: %d %s", p.status, p.body)
		}

		id := e.deliver("default", "From: colleague@default.localhost\nTo: someone@default.localhost\nSubject: Please reply\n\nhi\n")
		mustContain(t, b.get("/emails/"+id+"?tab=reply"), `action="/emails/`+id+`/reply"`)
		p = b.post("/emails/"+id+"/reply", url.Values{"from": {"reply@default.localhost"}, "text": {"thanks"}})
		if p.status != http.StatusSeeOther {
			t.Fatalf("reply: %d %s", p.status, p.body)
		}
		mustContain(t, b.get("/outbound?type=reply"), "Re: Please reply")

		mustContain(t, b.get("/emails/"+id+"?tab=report"), "Request a report")
		if p := b.post("/emails/"+id+"/report", nil); p.status != http.StatusSeeOther {
			t.Fatalf("request report: %d %s", p.status, p.body)
		}
		mustContain(t, b.get("/emails/"+id+"?tab=report"), "Report <span class=\"badge\">")

		bob := e.browser()
		bob.signIn("bob@example.com")
		if p := bob.get(loc); p.status != http.StatusNotFound {
			t.Fatalf("bob reads alice's outbound email: %d", p.status)
		}
		mustLack(t, bob.get("/outbound"), "Hello from the form")
	})
}

// A user of two organisations switches between them from the top bar; the
// pages then act for the one chosen, and a forged choice is refused.
func TestSwitchOrganisation(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		e := newEnv(t, db, nil)
		if err := e.svc.Tenants.AddMember(context.Background(), e.alice.ID, e.other.ID); err != nil {
			t.Fatal(err)
		}
		b := e.browser()
		b.signIn("alice@example.com")
		p := b.get("/inboxes")
		mustContain(t, p, `id="org-switch"`, `href="/inboxes/default"`)
		mustLack(t, p, `href="/inboxes/elsewhere"`)
		if p := b.post("/organisation/switch", url.Values{"org": {e.other.ID}}); p.status != http.StatusSeeOther {
			t.Fatalf("switch: %d", p.status)
		}
		p = b.get("/inboxes")
		mustContain(t, p, `href="/inboxes/elsewhere"`)
		mustLack(t, p, `href="/inboxes/default"`)
		mustContain(t, b.get("/organisation"), "<h1>other</h1>")
		// Removed from the organisation: the pages fall back to the one left.
		if err := e.svc.Tenants.RemoveMember(context.Background(), e.alice.ID, e.other.ID); err != nil {
			t.Fatal(err)
		}
		mustContain(t, b.get("/inboxes"), `href="/inboxes/default"`)
		if p := b.get("/inboxes/elsewhere"); p.status != http.StatusNotFound {
			t.Fatalf("elsewhere after leaving other: %d", p.status)
		}
	})
}

// A number's event stream sends "sms" when the number receives a message.
func TestSMSEvents(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		e := newEnv(t, db, nil)
		if _, err := e.svc.SMS.Service.AddNumber(context.Background(), e.org.ID, sms.NumberSpec{Phone: "+15550001000", Status: sms.StatusActive}); err != nil {
			t.Fatal(err)
		}
		b := e.browser()
		b.signIn("alice@example.com")
		req, _ := http.NewRequest(http.MethodGet, e.base+"/sms/+15550001000/events", nil)
		resp, err := b.client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		r := bufio.NewReader(resp.Body)
		for {
			line, err := r.ReadString('\n')
			if err != nil {
				t.Fatal(err)
			}
			if strings.HasPrefix(line, ": live") {
				break
			}
		}
		if p := b.post("/sms/+15550001000/virtual", url.Values{"from_number": {"+15550002222"}, "body": {"code 123456"}}); p.status != http.StatusSeeOther {
			t.Fatalf("virtual SMS: %d", p.status)
		}
		for {
			line, err := r.ReadString('\n')
			if err != nil {
				t.Fatal(err)
			}
			if line = strings.TrimSpace(line); line != "" {
				if line != "event: sms" {
					t.Fatalf("event %q", line)
				}
				return
			}
		}
	})
}
