package routing_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/catchbox/catchbox/internal/routing"
	"github.com/catchbox/catchbox/internal/secret"
	"github.com/catchbox/catchbox/internal/store"
	"github.com/catchbox/catchbox/internal/store/storetest"
	"github.com/catchbox/catchbox/internal/tenant"
)

func TestParse(t *testing.T) {
	rule := routing.New("LocalHost.", nil)
	for _, tc := range []struct {
		in        string
		address   string
		namespace string
		err       error
	}{
		{"a@alpha.localhost", "a@alpha.localhost", "alpha", nil},
		{"User.Name+tag@Alpha.LocalHost", "User.Name+tag@Alpha.LocalHost", "alpha", nil},
		{"a@alpha.localhost.", "a@alpha.localhost", "alpha", nil},
		{"first last@alpha.localhost", "first last@alpha.localhost", "alpha", nil},
		{"a@b@alpha.localhost", "a@b@alpha.localhost", "alpha", nil}, // quoted "a@b" local part
		{"a@x-1.localhost", "a@x-1.localhost", "x-1", nil},
		{"josé@alpha.localhost", "josé@alpha.localhost", "alpha", nil},
		{"a@" + strings.Repeat("n", 63) + ".localhost", "a@" + strings.Repeat("n", 63) + ".localhost", strings.Repeat("n", 63), nil},

		{"a@localhost", "", "", routing.ErrElsewhere},
		{"a@example.com", "", "", routing.ErrElsewhere},
		{"a@alpha.localhost.example", "", "", routing.ErrElsewhere},
		{"a@x.alpha.localhost", "", "", routing.ErrElsewhere},
		{"a@share.localhost", "", "", routing.ErrElsewhere},
		{"a@[127.0.0.1]", "", "", routing.ErrElsewhere},
		{"a@[IPv6:::1]", "", "", routing.ErrElsewhere},
		{"a@bücher.localhost", "", "", routing.ErrElsewhere},
		{"a@xlocalhost", "", "", routing.ErrElsewhere},

		{"", "", "", routing.ErrSyntax},
		{"postmaster", "", "", routing.ErrSyntax},
		{"@alpha.localhost", "", "", routing.ErrSyntax},
		{"a@", "", "", routing.ErrSyntax},
		{"a@.", "", "", routing.ErrSyntax},
		{"a@alpha..localhost", "", "", routing.ErrSyntax},
		{"a@.alpha.localhost", "", "", routing.ErrSyntax},
		{"a@alpha.localhost..", "", "", routing.ErrSyntax},
		{"a@-alpha.localhost", "", "", routing.ErrSyntax},
		{"a@alpha-.localhost", "", "", routing.ErrSyntax},
		{"a@al_pha.localhost", "", "", routing.ErrSyntax},
		{"a@alpha.localhost:25", "", "", routing.ErrSyntax},
		{"a@[127.0.0.1", "", "", routing.ErrSyntax},
		{"a@[]", "", "", routing.ErrSyntax},
		{"a\x00b@alpha.localhost", "", "", routing.ErrSyntax},
		{"a\x7f@alpha.localhost", "", "", routing.ErrSyntax},
		{"a@alpha\xff.localhost", "", "", routing.ErrSyntax},
		{"a@" + strings.Repeat("n", 64) + ".localhost", "", "", routing.ErrSyntax},
		{strings.Repeat("l", 250) + "@a.localhost", "", "", routing.ErrSyntax},
	} {
		got, err := rule.Parse(tc.in)
		if !errors.Is(err, tc.err) && !(err == nil && tc.err == nil) {
			t.Errorf("Parse(%q): error %v, want %v", tc.in, err, tc.err)
			continue
		}
		if tc.err == nil && (got.Mailbox != tc.address || got.Namespace != tc.namespace) {
			t.Errorf("Parse(%q) = %+v, want %q in %q", tc.in, got, tc.address, tc.namespace)
		}
	}
}

// FuzzParse checks that whatever a client sends, an accepted
// recipient names a valid namespace under the mail domain.
func FuzzParse(f *testing.F) {
	rule := routing.New("localhost", nil)
	for _, s := range []string{
		"a@alpha.localhost", "A@ALPHA.LOCALHOST.", "a@b@alpha.localhost", "a@[1.2.3.4]", "a@x.y.localhost",
		"a@share.localhost", "a@", "@", "josé@alpha.localhost", "a@alpha..localhost", "a@alpha.localhost..",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, addr string) {
		got, err := rule.Parse(addr)
		if err != nil {
			if !errors.Is(err, routing.ErrSyntax) && !errors.Is(err, routing.ErrElsewhere) {
				t.Fatalf("Parse(%q): unexpected error %v", addr, err)
			}
			return
		}
		if ns, nerr := tenant.NormalizeNamespaceName(got.Namespace); nerr != nil || ns != got.Namespace {
			t.Fatalf("Parse(%q) accepted namespace %q", addr, got.Namespace)
		}
		if !strings.HasSuffix(strings.ToLower(got.Mailbox), "@"+got.Namespace+".localhost") {
			t.Fatalf("Parse(%q) = %q, not in namespace %q", addr, got.Mailbox, got.Namespace)
		}
		if len(got.Mailbox) > routing.MaxAddressLength {
			t.Fatalf("Parse(%q) accepted %d octets", addr, len(got.Mailbox))
		}
	})
}

// TestRoute finds the namespace an address names, with its owner, in both
// stores; a valid name without a namespace is ErrNoNamespace, and an address
// is In its own namespace only.
func TestRoute(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		tenants := tenant.NewService(db, secret.New([]byte("routing-test-secret-0123456789")), 24*time.Hour)
		org, err := tenants.CreateOrg(ctx, "acme", 10, true)
		if err != nil {
			t.Fatal(err)
		}
		alpha, err := tenants.CreateNamespace(ctx, org.ID, "alpha", tenant.Settings{})
		if err != nil {
			t.Fatal(err)
		}
		beta, err := tenants.CreateNamespace(ctx, org.ID, "beta", tenant.Settings{})
		if err != nil {
			t.Fatal(err)
		}
		rule := routing.New("mail.test", tenants)

		a, ns, err := rule.Route(ctx, "Someone@ALPHA.Mail.Test.")
		if err != nil {
			t.Fatal(err)
		}
		if a.Mailbox != "Someone@ALPHA.Mail.Test" || a.Namespace != "alpha" || ns.ID != alpha.ID || ns.OrgID != org.ID {
			t.Errorf("Route = %+v, %+v; want alpha of %s", a, ns, org.ID)
		}
		if !a.In(alpha) || a.In(beta) {
			t.Errorf("%+v: In(alpha) = %v, In(beta) = %v", a, a.In(alpha), a.In(beta))
		}

		_, _, err = rule.Route(ctx, "x@gamma.mail.test")
		if !errors.Is(err, routing.ErrNoNamespace) || !errors.Is(err, tenant.ErrNotFound) {
			t.Errorf("Route to a missing namespace: %v, want ErrNoNamespace", err)
		}
		for addr, want := range map[string]error{"x@alpha.other.test": routing.ErrElsewhere, "x@@": routing.ErrSyntax} {
			if _, _, err := rule.Route(ctx, addr); !errors.Is(err, want) {
				t.Errorf("Route(%q): %v, want %v", addr, err, want)
			}
		}
	})
}
