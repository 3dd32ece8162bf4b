package tenant_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/catchbox/catchbox/internal/secret"
	"github.com/catchbox/catchbox/internal/store"
	"github.com/catchbox/catchbox/internal/store/storetest"
	"github.com/catchbox/catchbox/internal/tenant"
)

// TestSignInLinks: EnsureOwner makes the default organisation's owner, with
// no password; a sign-in link signs a browser in as them once, within
// its lifetime, and is dead after its use, after its lifetime, and after the
// user's password changes. The store never holds the token.
func TestSignInLinks(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		svc := tenant.NewService(db, secret.New([]byte("0123456789abcdef0123456789abcdef")), 24*time.Hour)
		if _, err := svc.Bootstrap(ctx, ""); err != nil {
			t.Fatal(err)
		}
		if _, err := svc.EnsureOwner(ctx); err != nil {
			t.Fatal(err)
		}
		owner, err := svc.UserByEmail(ctx, tenant.OwnerEmail)
		if err != nil {
			t.Fatalf("EnsureOwner made no owner: %v", err)
		}
		if _, err := svc.CheckUser(ctx, tenant.OwnerEmail, ""); !errors.Is(err, tenant.ErrBadPassword) {
			t.Errorf("the owner signs in with an empty password: %v", err)
		}
		def, _ := svc.OrgByName(ctx, tenant.DefaultName)
		if orgs, err := svc.UserOrgs(ctx, owner.ID); err != nil || len(orgs) != 1 || orgs[0].ID != def.ID {
			t.Errorf("the owner's organisations: %+v, %v", orgs, err)
		}
		// EnsureOwner finds them again, and puts a removed membership back.
		if err := svc.RemoveMember(ctx, owner.ID, def.ID); err != nil {
			t.Fatal(err)
		}
		if again, err := svc.EnsureOwner(ctx); err != nil || again.ID != owner.ID {
			t.Errorf("EnsureOwner = %+v, %v; want the same owner", again, err)
		}
		if orgs, _ := svc.UserOrgs(ctx, owner.ID); len(orgs) != 1 {
			t.Errorf("EnsureOwner did not make the owner a member again: %+v", orgs)
		}

		now := time.Now()
		sessions := tenant.NewSessions(svc, false, nil)
		sessions.SetClock(func() time.Time { return now })
		use := func(token string) (*http.Cookie, error) {
			w := httptest.NewRecorder()
			_, err := sessions.SignInWithLink(w, httptest.NewRequest("GET", "/signin/link", nil), token)
			for _, c := range w.Result().Cookies() {
				if c.Name == tenant.SessionCookie && c.Value != "" {
					return c, err
				}
			}
			return nil, err
		}

		token, expires, err := svc.CreateSignInLink(ctx, owner.ID, now)
		if err != nil || len(token) < 40 || !expires.After(now.Add(tenant.SignInLinkTTL-time.Second)) {
			t.Fatalf("CreateSignInLink = %q, %v, %v", token, expires, err)
		}
		var stored int
		db.QueryRow(ctx, "SELECT COUNT(*) FROM signin_links WHERE token_hash = ?", token).Scan(&stored)
		if stored != 0 {
			t.Error("the store holds the token itself")
		}
		cookie, err := use(token)
		if err != nil || cookie == nil || !cookie.HttpOnly {
			t.Fatalf("first use: cookie %+v, %v", cookie, err)
		}
		req := httptest.NewRequest("GET", "/", nil)
		req.AddCookie(cookie)
		if p, ok, err := sessions.Authenticate(req); err != nil || !ok || p.User.ID != owner.ID || p.Org.ID != def.ID {
			t.Errorf("the link's session: %+v, %v, %v", p, ok, err)
		}
		if c, err := use(token); !errors.Is(err, tenant.ErrLinkInvalid) || c != nil {
			t.Errorf("second use: %v, %v; want ErrLinkInvalid and no session", c, err)
		}
		if _, err := use("no-such-token"); !errors.Is(err, tenant.ErrLinkInvalid) {
			t.Errorf("unknown token: %v", err)
		}

		// Expired: the moment its lifetime is over.
		late, _, _ := svc.CreateSignInLink(ctx, owner.ID, now.Add(-tenant.SignInLinkTTL))
		if _, err := use(late); !errors.Is(err, tenant.ErrLinkInvalid) {
			t.Errorf("expired link: %v", err)
		}
		// A new password ends the links not yet used.
		pending, _, _ := svc.CreateSignInLink(ctx, owner.ID, now)
		if err := svc.SetPassword(ctx, owner.ID, "a long enough password"); err != nil {
			t.Fatal(err)
		}
		if _, err := use(pending); !errors.Is(err, tenant.ErrLinkInvalid) {
			t.Errorf("link after a password change: %v", err)
		}
		// The reaper removes expired links.
		svc.CreateSignInLink(ctx, owner.ID, now.Add(-time.Hour))
		if _, err := tenant.ReapSessions(ctx, db, now); err != nil {
			t.Fatal(err)
		}
		var left int
		db.QueryRow(ctx, "SELECT COUNT(*) FROM signin_links").Scan(&left)
		if left != 0 {
			t.Errorf("%d expired links left after the reaper", left)
		}
	})
}
