package sms_test

import (
	"regexp"
	"testing"

	"github.com/catchbox/catchbox/internal/sms"
)

func TestNormalizePhone(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"+15551234567", "+15551234567"},
		{"15551234567", "+15551234567"},
		{"+1 555 123 4567", "+15551234567"},
		{"1 (555) 123-4567", "+15551234567"},
		{"+1.555.123.4567", "+15551234567"},
		{"%2B15551234567", "+15551234567"},
		{"%2b15551234567", "+15551234567"},
		{"%2B1%20555%20123%204567", "+15551234567"},
		{" 15551234567", "+15551234567"}, // a '+' decoded from a query string
		{"  +44 20 7946 0000\t", "+442079460000"},
		{"+4930123", ""},                         // 7 digits: too short
		{"+49301234", "+49301234"},               // 8 digits
		{"+123456789012345", "+123456789012345"}, // 15 digits: the E.164 maximum
		{"+1234567890123456", ""},                // 16 digits
		{"+0123456789", ""},                      // no country code starts with 0
		{"0044 20 7946 0000", ""},                // an international prefix is not a '+'
		{"", ""},
		{"+", ""},
		{"++15551234567", ""},
		{"1+5551234567", ""},
		{"+1555123456x", ""},
		{"+1555１２３4567", ""}, // full-width digits
		{"%2G15551234567", ""},
		{"%", ""},
		{"tel:+15551234567", ""},
	} {
		got, err := sms.NormalizePhone(c.in)
		if got != c.want || (err == nil) != (c.want != "") {
			t.Errorf("NormalizePhone(%q) = %q, %v; want %q", c.in, got, err, c.want)
		}
	}
}

var e164 = regexp.MustCompile(`^\+[1-9][0-9]{7,14}$`)

// FuzzNormalizePhone checks that whatever is accepted comes out as E.164 and
// that normalising is idempotent.
func FuzzNormalizePhone(f *testing.F) {
	for _, s := range []string{"+15551234567", "1 (555) 123-4567", "%2B15551234567", " 15551234567", "+0", "%", "++1", "+44 20 7946 0000"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got, err := sms.NormalizePhone(s)
		if err != nil {
			if got != "" {
				t.Fatalf("NormalizePhone(%q) = %q with error %v", s, got, err)
			}
			return
		}
		if !e164.MatchString(got) {
			t.Fatalf("NormalizePhone(%q) = %q, not E.164", s, got)
		}
		if again, err := sms.NormalizePhone(got); err != nil || again != got {
			t.Fatalf("NormalizePhone(%q) = %q, %v; not idempotent", got, again, err)
		}
	})
}
