package routing

import (
	"strings"
	"testing"

	"github.com/catchbox/catchbox/internal/secret"
)

func TestReturnPath(t *testing.T) {
	key := secret.New([]byte("0123456789abcdef0123456789abcdef"))
	r := New("Mail.Example.", nil)
	id := "01a21259-C6D7-7706-be06-9ea19d32b4ba"
	rp := r.ReturnPath(key, id)
	local, domain, _ := strings.Cut(rp, "@")
	if domain != "mail.example" || len(local) > 64 || local != strings.ToLower(local) {
		t.Fatalf("ReturnPath = %q: want a lower-case local part of at most 64 octets on the mail domain", rp)
	}
	for _, addr := range []string{rp, strings.ToUpper(rp), rp + "."} {
		got, ok := r.ParseReturnPath(key, addr)
		if !ok || got != strings.ToLower(id) {
			t.Errorf("ParseReturnPath(%q) = %q, %v; want %q, true", addr, got, ok, strings.ToLower(id))
		}
	}
	other := secret.New([]byte("another key, another server......"))
	forged := strings.Replace(rp, strings.ToLower(id), "01a21259-c6d7-7706-be06-9ea19d32b4bb", 1)
	for _, bad := range []struct{ name, addr string }{
		{"another domain", strings.Replace(rp, "mail.example", "example.org", 1)},
		{"a namespace's address", strings.Replace(rp, "@mail.example", "@ns.mail.example", 1)},
		{"another message's id with this tag", forged},
		{"no tag", "bounce+" + strings.ToLower(id) + "@mail.example"},
		{"no prefix", strings.TrimPrefix(rp, "bounce+")},
		{"empty", ""},
		{"too long", strings.Repeat("a", 300) + rp},
	} {
		if got, ok := r.ParseReturnPath(key, bad.addr); ok {
			t.Errorf("%s: ParseReturnPath(%q) = %q, true; want false", bad.name, bad.addr, got)
		}
	}
	if _, ok := r.ParseReturnPath(other, rp); ok {
		t.Errorf("a return path made with another key was accepted")
	}
}
