package totp_test

import (
	"bytes"
	"errors"
	"testing"
	"time"

	"github.com/catchbox/catchbox/internal/store"
	"github.com/catchbox/catchbox/internal/store/storetest"
	"github.com/catchbox/catchbox/internal/totp"
)

// TestOtpauthPrecedence checks, through the API, which of the URL and the body
// decides each field: the URL for username, issuer, digits, period and algorithm;
// the body where the URL is silent; the body's name over the derived one.
func TestOtpauthPrecedence(t *testing.T) {
	const s = testSecret
	cases := []struct {
		name string
		body map[string]any
		want map[string]any
	}{
		{"label with issuer prefix and parameter",
			map[string]any{"otp_auth_url": "otpauth://totp/Acme:alice@example.com?secret=" + s + "&issuer=Acme"},
			map[string]any{"issuer": "Acme", "username": "alice@example.com", "name": "Acme (alice@example.com)", "digits": 6.0, "period": 30.0, "algorithm": "SHA1"}},
		{"issuer parameter wins over the label prefix",
			map[string]any{"otp_auth_url": "otpauth://totp/Old:alice?secret=" + s + "&issuer=New"},
			map[string]any{"issuer": "New", "username": "alice", "name": "New (alice)"}},
		{"label prefix when no issuer parameter",
			map[string]any{"otp_auth_url": "otpauth://totp/Prefix:alice?secret=" + s},
			map[string]any{"issuer": "Prefix", "username": "alice"}},
		{"URL-encoded label and separator",
			map[string]any{"otp_auth_url": "otpauth://totp/ACME%20Co%3Ajohn.doe%40email.com?secret=" + s + "&issuer=ACME%20Co"},
			map[string]any{"issuer": "ACME Co", "username": "john.doe@email.com", "name": "ACME Co (john.doe@email.com)"}},
		{"spaces after the colon",
			map[string]any{"otp_auth_url": "otpauth://totp/Acme:%20%20alice?secret=" + s},
			map[string]any{"issuer": "Acme", "username": "alice"}},
		{"URL values win over the body",
			map[string]any{"otp_auth_url": "otpauth://totp/Acme:alice?secret=" + s + "&digits=8&period=60&algorithm=SHA256",
				"username": "bob", "issuer": "Other", "digits": 6, "period": 30, "algorithm": "SHA512"},
			map[string]any{"issuer": "Acme", "username": "alice", "digits": 8.0, "period": 60.0, "algorithm": "SHA256", "name": "Acme (alice)"}},
		{"body fills what the URL lacks",
			map[string]any{"otp_auth_url": "otpauth://totp/?secret=" + s,
				"username": "bob", "issuer": "Other", "digits": 8, "period": 45, "algorithm": "sha512"},
			map[string]any{"issuer": "Other", "username": "bob", "digits": 8.0, "period": 45.0, "algorithm": "SHA512", "name": "Other (bob)"}},
		{"label account with body issuer",
			map[string]any{"otp_auth_url": "otpauth://totp/alice?secret=" + s, "issuer": "BodyCo"},
			map[string]any{"issuer": "BodyCo", "username": "alice", "name": "BodyCo (alice)"}},
		{"body name overrides the derived name",
			map[string]any{"otp_auth_url": "otpauth://totp/Acme:alice?secret=" + s, "name": "Staging admin"},
			map[string]any{"name": "Staging admin", "issuer": "Acme", "username": "alice"}},
		{"nothing known",
			map[string]any{"otp_auth_url": "otpauth://totp/?secret=" + s},
			map[string]any{"name": "Authenticator", "issuer": nil, "username": nil}},
		{"type and algorithm in other cases, camelCase field",
			map[string]any{"otpAuthUrl": "OTPAUTH://TOTP/x?secret=" + s + "&algorithm=sha-512"},
			map[string]any{"algorithm": "SHA512", "username": "x", "source": "otpauth_url"}},
		{"otpauth_url spelling",
			map[string]any{"otpauth_url": "otpauth://totp/y?secret=" + s},
			map[string]any{"username": "y"}},
	}
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		e := newEnv(t, db)
		for _, c := range cases {
			t.Run(c.name, func(t *testing.T) {
				d := e.create("/api/devices/otpauth-url", c.body)
				for k, want := range c.want {
					if d[k] != want {
						t.Errorf("%s = %#v, want %#v (device %v)", k, d[k], want, d)
					}
				}
				if d["source"] != "otpauth_url" {
					t.Errorf("source %v", d["source"])
				}
			})
		}

		// The device makes the codes its URL describes.
		d := e.create("/api/devices/otpauth-url", map[string]any{
			"otp_auth_url": "otpauth://totp/A:b?secret=" + totp.EncodeSecret(rfcSeeds[totp.SHA256]) + "&digits=8&algorithm=SHA256"})
		e.clock.Set(time.Unix(1234567890, 0))
		if code, _ := e.otp(d["id"].(string), ""); code != "91819424" {
			t.Fatalf("code %s, want the RFC's 91819424", code)
		}
	})
}

func TestParseOtpauthURL(t *testing.T) {
	k, err := totp.ParseOtpauthURL("otpauth://totp/Example:alice@google.com?secret=JBSWY3DPEHPK3PXP&issuer=Example&period=60&digits=8&algorithm=SHA256")
	if err != nil {
		t.Fatal(err)
	}
	want := totp.Key{Secret: []byte("Hello!\xde\xad\xbe\xef"), Issuer: "Example", Account: "alice@google.com", Digits: 8, Period: 60, Algorithm: totp.SHA256}
	if !keysEqual(k, want) {
		t.Fatalf("got %+v, want %+v", k, want)
	}
	// Parameters left out stay zero so the body can fill them.
	k, err = totp.ParseOtpauthURL("otpauth://totp/alice?secret=JBSWY3DPEHPK3PXP")
	if err != nil || k.Digits != 0 || k.Period != 0 || k.Algorithm != "" || k.Issuer != "" || k.Account != "alice" {
		t.Fatalf("got %+v, %v", k, err)
	}

	bad := map[string]string{
		"": "invalid_otpauth_url",
		"otpauth://hotp/x?secret=JBSWY3DPEHPK3PXP":               "hotp_not_supported",
		"otpauth://totp/x":                                       "invalid_otpauth_url",
		"otpauth://totp/x?secret=":                               "invalid_otpauth_url",
		"otpauth://totp/x?secret=JBSWY3DPEHPK3PXP&digits=six":    "invalid_otpauth_url",
		"otpauth://totp/x?secret=JBSWY3DPEHPK3PXP&period=301":    "invalid_otpauth_url",
		"otpauth://totp/x?secret=JBSWY3DPEHPK3PXP&algorithm=MD5": "invalid_otpauth_url",
		"otpauth://steam/x?secret=JBSWY3DPEHPK3PXP":              "invalid_otpauth_url",
		"otpauth:totp/x?secret=JBSWY3DPEHPK3PXP":                 "invalid_otpauth_url",
		"otpauth://u@totp/x?secret=JBSWY3DPEHPK3PXP":             "invalid_otpauth_url",
		"otpauth://totp/%ZZ?secret=JBSWY3DPEHPK3PXP":             "invalid_otpauth_url",
		"otpauth://totp/a%00b?secret=JBSWY3DPEHPK3PXP":           "invalid_otpauth_url",
		"otpauth://totp/a%FFb?secret=JBSWY3DPEHPK3PXP":           "invalid_otpauth_url",
	}
	for in, code := range bad {
		_, err := totp.ParseOtpauthURL(in)
		var ue *totp.URLError
		if !errors.As(err, &ue) || ue.Code != code {
			t.Errorf("ParseOtpauthURL(%q) = %v, want code %s", in, err, code)
		}
	}
}

func keysEqual(a, b totp.Key) bool {
	return bytes.Equal(a.Secret, b.Secret) && a.Issuer == b.Issuer && a.Account == b.Account &&
		a.Digits == b.Digits && a.Period == b.Period && a.Algorithm == b.Algorithm
}

// FuzzParseOtpauthURL: the parser never panics; what it accepts is within the
// limits a device takes; and the URL built from an accepted key parses back to it.
func FuzzParseOtpauthURL(f *testing.F) {
	for _, s := range []string{
		"otpauth://totp/Example:alice@google.com?secret=JBSWY3DPEHPK3PXP&issuer=Example",
		"otpauth://totp/ACME%20Co:john.doe@email.com?secret=HXDMVJECJJWSRB3HWIZR4IFUGFTMXBOZ&issuer=ACME%20Co&algorithm=SHA1&digits=6&period=30",
		"otpauth://totp/ACME%20Co%3Ajohn?secret=hxdm-vjec-jjws&issuer=&algorithm=sha256&digits=8&period=10",
		"otpauth://TOTP/:a:b?secret=MZXW6===&period=300",
		"otpauth://totp/a%3Ab:c?issuer=x%3Ay&secret=MZXW6YQ",
		"otpauth://hotp/x?secret=JBSWY3DPEHPK3PXP&counter=0",
		"otpauth://totp/x?secret=JBSWY3DPEHPK3PXP&digits=7",
		"otpauth://totp/%E2%82%AC:%F0%9F%94%91?secret=GEZDGNBV",
		"otpauth://totp/x?secret=%20G%20E%20Z%20D",
		"otpauth://totp/x#frag?secret=GEZDGNBV",
		"otpauth:totp",
		"otpauth://",
		"",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		k, err := totp.ParseOtpauthURL(raw)
		if err != nil {
			var ue *totp.URLError
			if !errors.As(err, &ue) || ue.Code == "" {
				t.Fatalf("error %v is not a *URLError with a code", err)
			}
			return
		}
		if len(k.Secret) == 0 {
			t.Fatal("accepted without a secret")
		}
		if k.Digits != 0 && k.Digits != 6 && k.Digits != 8 {
			t.Fatalf("digits %d accepted", k.Digits)
		}
		if k.Period != 0 && (k.Period < totp.MinPeriod || k.Period > totp.MaxPeriod) {
			t.Fatalf("period %d accepted", k.Period)
		}
		if k.Algorithm != "" && k.Algorithm != totp.SHA1 && k.Algorithm != totp.SHA256 && k.Algorithm != totp.SHA512 {
			t.Fatalf("algorithm %q accepted", k.Algorithm)
		}
		for _, s := range []string{k.Issuer, k.Account} {
			if d := totp.CheckText(s); d != "" {
				t.Fatalf("text %q accepted: %s", s, d)
			}
		}
		back, err := totp.ParseOtpauthURL(k.URL())
		if err != nil {
			t.Fatalf("URL %q of an accepted key does not parse: %v", k.URL(), err)
		}
		want := k
		if want.Digits == 0 {
			want.Digits = totp.DefaultDigits
		}
		if want.Period == 0 {
			want.Period = totp.DefaultPeriod
		}
		if want.Algorithm == "" {
			want.Algorithm = totp.DefaultAlgorithm
		}
		if !keysEqual(back, want) {
			t.Fatalf("round trip of %q through %q: got %+v, want %+v", raw, k.URL(), back, want)
		}
	})
}
