package web_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/catchbox/catchbox/internal/config"
	"github.com/catchbox/catchbox/internal/store"
	"github.com/catchbox/catchbox/internal/store/storetest"
	"github.com/catchbox/catchbox/internal/tenant"
)

func sessionCookie(t *testing.T, p page) *http.Cookie {
	t.Helper()
	for _, c := range (&http.Response{Header: p.header}).Cookies() {
		if c.Name == tenant.SessionCookie {
			return c
		}
	}
	t.Fatalf("no session cookie in %v", p.header.Values("Set-Cookie"))
	return nil
}

// The session cookie is HttpOnly, SameSite=Lax, for the whole site, and
// Secure when the service is served over https.
func TestSessionCookieFlags(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		e := newEnv(t, db, nil)
		c := sessionCookie(t, e.browser().signIn("alice@example.com"))
		if !c.HttpOnly || c.SameSite != http.SameSiteLaxMode || c.Path != "/" || c.Secure || c.MaxAge <= 0 || len(c.Value) < 40 {
			t.Fatalf("cookie over http: %+v", c)
		}
		e = newEnv(t, storetest.Open(t, db.Dialect), func(cfg *config.Serve) { cfg.PublicURL = "https://catchbox.example" })
		c = sessionCookie(t, e.browser().signIn("alice@example.com"))
		if !c.Secure || !c.HttpOnly || c.SameSite != http.SameSiteLaxMode {
			t.Fatalf("cookie behind https: %+v", c)
		}
	})
}

// A form posted from another site is refused, signed in or not, on the
// pages and on the API reached with the session cookie; the same post from
// the dashboard itself goes through.
func TestCrossOriginPostRefused(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		e := newEnv(t, db, nil)
		b := e.browser()
		b.signIn("alice@example.com")
		id := e.deliver("default", mail("keep me", "x"))
		evil := map[string]string{"Sec-Fetch-Site": "cross-site", "Origin": "https://evil.example"}
		for _, path := range []string{"/inboxes", "/emails/" + id + "/delete", "/inboxes/default/clear", "/signout", "/signin"} {
			if p := b.do(http.MethodPost, path, url.Values{"namespace": {"planted"}}, evil); p.status != http.StatusForbidden {
				t.Fatalf("cross-site POST %s: %d", path, p.status)
			}
		}
		// An old browser without Sec-Fetch-Site: Origin against Host decides.
		old := map[string]string{"Sec-Fetch-Site": "", "Origin": "https://evil.example"}
		if p := b.do(http.MethodPost, "/emails/"+id+"/delete", url.Values{}, old); p.status != http.StatusForbidden {
			t.Fatalf("cross-origin POST without Sec-Fetch-Site: %d", p.status)
		}
		if p := b.do(http.MethodDelete, "/api/emails/"+id, nil, evil); p.status != http.StatusForbidden {
			t.Fatalf("cross-site DELETE through the API with the session: %d", p.status)
		}
		if p := b.get("/emails/" + id); p.status != http.StatusOK {
			t.Fatalf("the email after refused deletes: %d", p.status)
		}
		if _, err := e.svc.Tenants.NamespaceByName(context.Background(), "planted"); err == nil {
			t.Fatal("a cross-site form created a namespace")
		}
		if p := b.post("/emails/"+id+"/delete", nil); p.status != http.StatusSeeOther {
			t.Fatalf("same-origin delete: %d", p.status)
		}
	})
}

// A session token planted in the browser before sign-in signs nobody in, and
// signing in always starts a new session: the token from before is dead.
func TestSessionFixation(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		e := newEnv(t, db, nil)
		attacker := e.browser()
		attacker.signIn("bob@example.com")
		planted := attacker.session()

		victim := e.browser()
		u, _ := url.Parse(e.base)
		victim.jar.SetCookies(u, []*http.Cookie{{Name: tenant.SessionCookie, Value: planted, Path: "/"}})
		victim.signIn("alice@example.com")
		if got := victim.session(); got == planted || got == "" {
			t.Fatalf("the session after sign-in is the planted one")
		}
		// The planted token is ended by the sign-in: the attacker is out too.
		if p := attacker.get("/inboxes"); p.status != http.StatusSeeOther {
			t.Fatalf("planted session after the victim signed in: %d", p.status)
		}
		// A made-up token is no session.
		forged := e.browser()
		forged.jar.SetCookies(u, []*http.Cookie{{Name: tenant.SessionCookie, Value: "made-up-token", Path: "/"}})
		if p := forged.get("/inboxes"); p.status != http.StatusSeeOther {
			t.Fatalf("made-up session: %d", p.status)
		}
		before := victim.session()
		victim.signIn("alice@example.com")
		if victim.session() == before {
			t.Fatal("a second sign-in kept the session id")
		}
	})
}

// Wrong passwords are throttled per account and client address, and per
// client address: once the budget is spent, even the right password is
// refused with 429 until time passes.
func TestSignInThrottled(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		e := newEnv(t, db, nil)
		b := e.browser()
		wrong := url.Values{"email": {"alice@example.com"}, "password": {"wrong password"}}
		for i := 0; i < 5; i++ {
			if p := b.post("/signin", wrong); p.status != http.StatusUnauthorized {
				t.Fatalf("attempt %d: %d", i, p.status)
			}
		}
		p := b.post("/signin", url.Values{"email": {"alice@example.com"}, "password": {password}})
		if p.status != http.StatusTooManyRequests || p.header.Get("Retry-After") == "" || b.session() != "" {
			t.Fatalf("right password after 5 failures: %d %q", p.status, p.header.Get("Retry-After"))
		}
		mustContain(t, p, "Too many failed attempts")
		// Another address from the same client is not locked by alice's bucket.
		b.signIn("bob@example.com")
		// Per client address: 20 failures over many addresses lock the client.
		c := e.browser()
		for i := 0; i < 20; i++ {
			c.post("/signin", url.Values{"email": {"nobody" + string(rune('a'+i)) + "@example.com"}, "password": {"x"}})
		}
		if p := c.post("/signin", url.Values{"email": {"bob@example.com"}, "password": {password}}); p.status != http.StatusTooManyRequests {
			t.Fatalf("sign-in after 20 failures from one address: %d", p.status)
		}
		e.clock.Add(2 * time.Minute)
		b.signIn("alice@example.com")
	})
}

// Nobody locks a user out by failing to sign in as them. A guesser at one
// address is refused after 5 wrong passwords and then gets one a minute,
// while the right password from other addresses signs in every time without
// delay. Guessers spread over many addresses empty the account's own budget:
// their attempts, and a right one from a new browser, then wait for the
// account's next token instead of being refused, and a browser that signed in
// as the user before (its device cookie) does not wait at all.
func TestNoLockoutByOthers(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		e := newEnv(t, db, nil)
		var mu sync.Mutex
		var waits int
		e.svc.Sessions.Sleep = func(_ context.Context, d time.Duration) error {
			mu.Lock()
			waits++
			mu.Unlock()
			e.clock.Add(d)
			return nil
		}
		waited := func() int { mu.Lock(); defer mu.Unlock(); return waits }
		wrong := url.Values{"email": {"alice@example.com"}, "password": {"wrong password"}}

		attacker := e.browserFrom("127.0.0.2")
		for i := 0; i < 5; i++ {
			if p := attacker.post("/signin", wrong); p.status != http.StatusUnauthorized {
				t.Fatalf("guess %d: %d", i, p.status)
			}
		}
		var known *browser
		for round := 0; round < 3; round++ {
			if p := attacker.post("/signin", wrong); p.status != http.StatusTooManyRequests {
				t.Fatalf("round %d: guess over the budget: %d", round, p.status)
			}
			alice := e.browserFrom(fmt.Sprintf("127.0.0.%d", 10+round))
			alice.signIn("alice@example.com")
			known = alice
			e.clock.Add(time.Minute)
			if p := attacker.post("/signin", wrong); p.status != http.StatusUnauthorized {
				t.Fatalf("round %d: the guess a minute later: %d", round, p.status)
			}
		}
		if waited() != 0 {
			t.Fatalf("%d sign-ins waited while one address guessed", waited())
		}

		// Seven addresses, five guesses each: more than the account's 30.
		for a := 0; a < 7; a++ {
			g := e.browserFrom(fmt.Sprintf("127.0.2.%d", a+1))
			for i := 0; i < 5; i++ {
				if p := g.post("/signin", wrong); p.status != http.StatusUnauthorized {
					t.Fatalf("address %d, guess %d: %d", a, i, p.status)
				}
			}
		}
		if waited() == 0 {
			t.Fatal("35 guesses over seven addresses never waited for the account's budget")
		}
		before := waited()
		known.signIn("alice@example.com")
		if waited() != before {
			t.Fatal("a browser that signed in before waited for the account's budget")
		}
		e.browserFrom("127.0.0.60").signIn("alice@example.com")
		if waited() == before {
			t.Fatal("a new browser did not wait while the account's budget was empty")
		}
	})
}

// A removed user's session ends at its next request, on the pages and the
// API; so does a session idle too long, and one whose password was changed.
func TestSessionEnds(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		e := newEnv(t, db, nil)
		ctx := context.Background()
		b := e.browser()
		b.signIn("alice@example.com")
		if p := b.get("/api/namespaces"); p.status != http.StatusOK {
			t.Fatalf("API with the session: %d %s", p.status, p.body)
		}
		if err := e.svc.Tenants.RemoveUser(ctx, e.alice.ID); err != nil {
			t.Fatal(err)
		}
		if p := b.get("/inboxes"); p.status != http.StatusSeeOther || !strings.HasPrefix(p.header.Get("Location"), "/signin") {
			t.Fatalf("page after the user was removed: %d", p.status)
		}
		if p := b.get("/api/namespaces"); p.status != http.StatusUnauthorized {
			t.Fatalf("API after the user was removed: %d", p.status)
		}
		if p := b.post("/signin", url.Values{"email": {"alice@example.com"}, "password": {password}}); p.status != http.StatusUnauthorized {
			t.Fatalf("removed user signs in: %d", p.status)
		}

		b = e.browser()
		b.signIn("bob@example.com")
		e.clock.Add(tenant.DefaultSessionIdle + time.Minute)
		if p := b.get("/inboxes"); p.status != http.StatusSeeOther {
			t.Fatalf("idle session: %d", p.status)
		}
		b.signIn("bob@example.com")
		if err := e.svc.Tenants.SetPassword(ctx, e.bob.ID, "a new password"); err != nil {
			t.Fatal(err)
		}
		if p := b.get("/inboxes"); p.status != http.StatusSeeOther {
			t.Fatalf("session after a password change: %d", p.status)
		}
		if p := e.browser().post("/signin", url.Values{"email": {"bob@example.com"}, "password": {password}}); p.status != http.StatusUnauthorized {
			t.Fatalf("old password after the change: %d", p.status)
		}
	})
}

// Signing out ends the session on the server, not only in the browser.
func TestSignOut(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		e := newEnv(t, db, nil)
		b := e.browser()
		b.signIn("alice@example.com")
		token := b.session()
		if p := b.post("/signout", nil); p.status != http.StatusSeeOther {
			t.Fatalf("sign out: %d", p.status)
		}
		replay := e.browser()
		u, _ := url.Parse(e.base)
		replay.jar.SetCookies(u, []*http.Cookie{{Name: tenant.SessionCookie, Value: token, Path: "/"}})
		if p := replay.get("/inboxes"); p.status != http.StatusSeeOther {
			t.Fatalf("signed-out token replayed: %d", p.status)
		}
	})
}

// The API reached with a session cookie: the outbound list needs
// organisation_id (400 without), and only one the user belongs to (403).
func TestSessionAPIOrganisation(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		e := newEnv(t, db, nil)
		b := e.browser()
		b.signIn("alice@example.com")
		p := b.get("/api/emails/outbound")
		if p.status != http.StatusBadRequest || !strings.Contains(p.body, `"field":"organisation_id"`) {
			t.Fatalf("outbound list without organisation_id: %d %s", p.status, p.body)
		}
		if p := b.get("/api/emails/outbound?organisation_id=" + e.other.ID); p.status != http.StatusForbidden {
			t.Fatalf("outbound list of another organisation: %d %s", p.status, p.body)
		}
		if p := b.get("/api/emails/outbound?organisation_id=" + e.org.ID); p.status != http.StatusOK {
			t.Fatalf("outbound list of the user's organisation: %d %s", p.status, p.body)
		}
		if p := b.get("/api/namespaces?organisation_id=" + e.other.ID); p.status != http.StatusForbidden {
			t.Fatalf("namespaces of another organisation: %d", p.status)
		}
		// A user in two organisations acts for the one named.
		if err := e.svc.Tenants.AddMember(context.Background(), e.alice.ID, e.other.ID); err != nil {
			t.Fatal(err)
		}
		var list struct {
			Data []struct{ Namespace string } `json:"data"`
		}
		p = b.get("/api/namespaces?organisation_id=" + e.other.ID)
		if err := json.Unmarshal([]byte(p.body), &list); err != nil || len(list.Data) != 1 || list.Data[0].Namespace != "elsewhere" {
			t.Fatalf("namespaces of the second organisation: %d %s", p.status, p.body)
		}
		// An API key still answers for its organisation alone.
		req, _ := http.NewRequest(http.MethodGet, e.base+"/api/emails/outbound?organisation_id="+e.other.ID, nil)
		req.Header.Set("X-Api-Key", e.key)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusForbidden {
			t.Fatalf("key naming another organisation: %d", resp.StatusCode)
		}
	})
}
