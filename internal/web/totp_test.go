package web_test

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/catchbox/catchbox/internal/store"
	"github.com/catchbox/catchbox/internal/store/storetest"
	"github.com/catchbox/catchbox/internal/tenant"
	"github.com/catchbox/catchbox/internal/totp"
)

// The authenticator forms show totp.AddDevice's and totp.DeleteDevice's
// refusals in their own words: every invalid field at once, the
// organisation's device limit, a device that is not the organisation's; and
// the list leaves out a device once it has expired.
func TestAuthenticatorFormRefusals(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		e := newEnv(t, db, nil)
		ctx := context.Background()
		b := e.browser()
		b.signIn("alice@example.com")
		p := b.post("/authenticators", url.Values{"secret": {"not base32!"}, "name": {strings.Repeat("x", 300)}})
		if p.status != http.StatusBadRequest {
			t.Fatalf("a bad secret and a long name: %d %s", p.status, p.body)
		}
		mustContain(t, p, "base32_secret_key must be Base32 (", "padding are ignored); name must be at most 255 characters")
		p = b.post("/authenticators", url.Values{"otpauth_url": {"otpauth://hotp/x?secret=JBSWY3DPEHPK3PXP&counter=1"}})
		if p.status != http.StatusBadRequest {
			t.Fatalf("an HOTP URL: %d %s", p.status, p.body)
		}
		mustContain(t, p, "otp_auth_url is an HOTP (counter-based) URL")

		bob := e.browser()
		bob.signIn("bob@example.com")
		one := 1
		if _, err := e.svc.Tenants.UpdateOrg(ctx, "other", &one, nil); err != nil {
			t.Fatal(err)
		}
		if p := bob.post("/authenticators", url.Values{"secret": {"JBSWY3DPEHPK3PXP"}, "name": {"Bob's"}}); p.status != http.StatusSeeOther {
			t.Fatalf("bob adds a device: %d %s", p.status, p.body)
		}
		p = bob.post("/authenticators", url.Values{"secret": {"JBSWY3DPEHPK3PXP"}})
		if p.status != http.StatusForbidden {
			t.Fatalf("a device past the limit: %d %s", p.status, p.body)
		}
		mustContain(t, p, "the organisation has reached its limit of active devices")

		secret, _ := totp.DecodeSecret("JBSWY3DPEHPK3PXP")
		soon, err := e.svc.TOTP.Create(ctx, e.org.ID, totp.NewDevice{Secret: secret, Name: "Short-lived", Params: totp.DefaultParams,
			ExpiresAt: time.Now().Add(time.Hour)})
		if err != nil {
			t.Fatal(err)
		}
		mustContain(t, b.get("/authenticators"), "Short-lived")
		for _, id := range []string{soon.ID, tenant.NewID(), "not-an-id"} {
			p := bob.post("/authenticators/"+id+"/delete", nil)
			if p.status != http.StatusNotFound {
				t.Fatalf("bob deletes %s: %d", id, p.status)
			}
			mustContain(t, p, "Authenticator not found")
		}
		e.svc.TOTP.Now = func() time.Time { return time.Now().Add(2 * time.Hour) }
		mustLack(t, b.get("/authenticators"), "Short-lived")
	})
}
