package smtpd

import (
	"errors"
	"strings"
	"testing"

	"github.com/catchbox/catchbox/internal/tenant"
)

func TestParseRecipient(t *testing.T) {
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

		{"a@localhost", "", "", errAddrElsewhere},
		{"a@example.com", "", "", errAddrElsewhere},
		{"a@alpha.localhost.example", "", "", errAddrElsewhere},
		{"a@x.alpha.localhost", "", "", errAddrElsewhere},
		{"a@share.localhost", "", "", errAddrElsewhere},
		{"a@[127.0.0.1]", "", "", errAddrElsewhere},
		{"a@[IPv6:::1]", "", "", errAddrElsewhere},
		{"a@bücher.localhost", "", "", errAddrElsewhere},
		{"a@xlocalhost", "", "", errAddrElsewhere},

		{"", "", "", errAddrSyntax},
		{"postmaster", "", "", errAddrSyntax},
		{"@alpha.localhost", "", "", errAddrSyntax},
		{"a@", "", "", errAddrSyntax},
		{"a@.", "", "", errAddrSyntax},
		{"a@alpha..localhost", "", "", errAddrSyntax},
		{"a@.alpha.localhost", "", "", errAddrSyntax},
		{"a@alpha.localhost..", "", "", errAddrSyntax},
		{"a@-alpha.localhost", "", "", errAddrSyntax},
		{"a@alpha-.localhost", "", "", errAddrSyntax},
		{"a@al_pha.localhost", "", "", errAddrSyntax},
		{"a@alpha.localhost:25", "", "", errAddrSyntax},
		{"a@[127.0.0.1", "", "", errAddrSyntax},
		{"a@[]", "", "", errAddrSyntax},
		{"a\x00b@alpha.localhost", "", "", errAddrSyntax},
		{"a\x7f@alpha.localhost", "", "", errAddrSyntax},
		{"a@alpha\xff.localhost", "", "", errAddrSyntax},
		{"a@" + strings.Repeat("n", 64) + ".localhost", "", "", errAddrSyntax},
		{strings.Repeat("l", 250) + "@a.localhost", "", "", errAddrSyntax},
	} {
		got, err := parseRecipient(tc.in, "localhost")
		if !errors.Is(err, tc.err) && !(err == nil && tc.err == nil) {
			t.Errorf("parseRecipient(%q): error %v, want %v", tc.in, err, tc.err)
			continue
		}
		if tc.err == nil && (got.Address != tc.address || got.Namespace != tc.namespace) {
			t.Errorf("parseRecipient(%q) = %+v, want %q in %q", tc.in, got, tc.address, tc.namespace)
		}
	}
}

// FuzzParseRecipient checks that whatever a client sends, an accepted
// recipient names a valid namespace under the mail domain.
func FuzzParseRecipient(f *testing.F) {
	for _, s := range []string{
		"a@alpha.localhost", "A@ALPHA.LOCALHOST.", "a@b@alpha.localhost", "a@[1.2.3.4]", "a@x.y.localhost",
		"a@share.localhost", "a@", "@", "josé@alpha.localhost", "a@alpha..localhost", "a@alpha.localhost..",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, addr string) {
		got, err := parseRecipient(addr, "localhost")
		if err != nil {
			if !errors.Is(err, errAddrSyntax) && !errors.Is(err, errAddrElsewhere) {
				t.Fatalf("parseRecipient(%q): unexpected error %v", addr, err)
			}
			return
		}
		if ns, nerr := tenant.NormalizeNamespaceName(got.Namespace); nerr != nil || ns != got.Namespace {
			t.Fatalf("parseRecipient(%q) accepted namespace %q", addr, got.Namespace)
		}
		if !strings.HasSuffix(strings.ToLower(got.Address), "@"+got.Namespace+".localhost") {
			t.Fatalf("parseRecipient(%q) = %q, not in namespace %q", addr, got.Address, got.Namespace)
		}
		if len(got.Address) > maxAddressLength {
			t.Fatalf("parseRecipient(%q) accepted %d octets", addr, len(got.Address))
		}
	})
}
