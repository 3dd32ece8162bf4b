package totp_test

import (
	"bytes"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/catchbox/catchbox/internal/httpx"
	"github.com/catchbox/catchbox/internal/store"
	"github.com/catchbox/catchbox/internal/store/storetest"
	"github.com/catchbox/catchbox/internal/totp"
)

// The seeds of RFC 6238 appendix B: the ASCII digits "1234567890" repeated to the
// hash's output size (the reference code's seed, seed32 and seed64).
var rfcSeeds = map[totp.Algorithm][]byte{
	totp.SHA1:   []byte("12345678901234567890"),
	totp.SHA256: []byte("12345678901234567890123456789012"),
	totp.SHA512: []byte("1234567890123456789012345678901234567890123456789012345678901234"),
}

// rfcVectors is the table of RFC 6238 appendix B: 8 digits, 30 second steps.
var rfcVectors = []struct {
	unix int64
	want map[totp.Algorithm]string
}{
	{59, map[totp.Algorithm]string{totp.SHA1: "94287082", totp.SHA256: "46119246", totp.SHA512: "90693936"}},
	{1111111109, map[totp.Algorithm]string{totp.SHA1: "07081804", totp.SHA256: "68084774", totp.SHA512: "25091201"}},
	{1111111111, map[totp.Algorithm]string{totp.SHA1: "14050471", totp.SHA256: "67062674", totp.SHA512: "99943326"}},
	{1234567890, map[totp.Algorithm]string{totp.SHA1: "89005924", totp.SHA256: "91819424", totp.SHA512: "93441116"}},
	{2000000000, map[totp.Algorithm]string{totp.SHA1: "69279037", totp.SHA256: "90698825", totp.SHA512: "38618901"}},
	{20000000000, map[totp.Algorithm]string{totp.SHA1: "65353130", totp.SHA256: "77737706", totp.SHA512: "47863826"}},
}

func periodEnd(unix int64, period int64) string {
	return httpx.Time(time.Unix((unix/period+1)*period, 0))
}

func TestGenerateRFC6238Vectors(t *testing.T) {
	for _, v := range rfcVectors {
		for alg, want := range v.want {
			p := totp.Params{Digits: 8, Period: 30, Algorithm: alg}
			got := totp.Generate(rfcSeeds[alg], p, time.Unix(v.unix, 0))
			if got.Code != want {
				t.Errorf("%s at %d: code %s, want %s", alg, v.unix, got.Code, want)
			}
			if httpx.Time(got.Expires) != periodEnd(v.unix, 30) {
				t.Errorf("%s at %d: expires %s, want %s", alg, v.unix, httpx.Time(got.Expires), periodEnd(v.unix, 30))
			}
		}
	}
}

// TestRFC6238VectorsThroughAPI saves one device per algorithm from the RFC's seeds
// and asks the API for its code at each instant of the table.
func TestRFC6238VectorsThroughAPI(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		e := newEnv(t, db)
		e.clock.Set(time.Unix(1, 0)) // before every instant of the table
		ids := map[totp.Algorithm]string{}
		for alg, seed := range rfcSeeds {
			d := e.create("/api/devices/custom", map[string]any{
				"secret": strings.ToLower(totp.EncodeSecret(seed)), "digits": 8, "algorithm": string(alg), "issuer": "RFC 6238"})
			ids[alg] = d["id"].(string)
		}
		for _, v := range rfcVectors {
			e.clock.Set(time.Unix(v.unix, 0))
			for alg, want := range v.want {
				code, expires := e.otp(ids[alg], "")
				if code != want || expires != periodEnd(v.unix, 30) {
					t.Errorf("%s at %d: got %s until %s, want %s until %s", alg, v.unix, code, expires, want, periodEnd(v.unix, 30))
				}
			}
			// The stateless endpoint is SHA1 with 6 digits: the last six of the RFC's.
			r := e.call("POST", "/api/devices/otp", e.key, map[string]any{"shared_secret": totp.EncodeSecret(rfcSeeds[totp.SHA1])})
			if r.status != http.StatusOK {
				t.Fatalf("POST otp: %d %s", r.status, r.body)
			}
			m := r.json(t)
			if want := v.want[totp.SHA1][2:]; m["code"] != want || m["expires"] != periodEnd(v.unix, 30) {
				t.Errorf("POST otp at %d: %v, want %s until %s", v.unix, m, want, periodEnd(v.unix, 30))
			}
		}
	})
}

func TestExpiresIsEndOfPeriod(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		e := newEnv(t, db)
		d := e.create("/api/devices/custom", map[string]any{"secret": "JBSWY3DPEHPK3PXP", "period": 45})
		// 1795317830 = 45 * 39895951 + 35: the step ends 10 seconds later.
		e.clock.Set(time.Unix(1795317830, 250e6))
		_, expires := e.otp(d["id"].(string), "")
		if want := "2026-11-22T03:24:00.000Z"; expires != want {
			t.Fatalf("expires %s, want %s", expires, want)
		}
	})
}

func TestDecodeSecret(t *testing.T) {
	want := []byte("Hello!\xde\xad\xbe\xef")
	for _, in := range []string{"JBSWY3DPEHPK3PXP", "jbswy3dpehpk3pxp", "JBSW Y3DP EHPK 3PXP", "jbsw-y3dp-ehpk-3pxp", "JBSWY3DPEHPK3PXP====", " JBSWY3DPEHPK3PXP\n"} {
		got, err := totp.DecodeSecret(in)
		if err != nil || !bytes.Equal(got, want) {
			t.Errorf("DecodeSecret(%q) = %x, %v", in, got, err)
		}
	}
	bad := map[string]error{
		"":                                   totp.ErrSecretEmpty,
		" - ":                                totp.ErrSecretEmpty,
		"====":                               totp.ErrSecretEmpty,
		"JBSWY3DPEHPK3PX1":                   totp.ErrSecretBase32, // 1 is not Base32
		"JBSWY3DPEHPK3PX0":                   totp.ErrSecretBase32,
		"JBSWY3D=PEHPK3PXP":                  totp.ErrSecretBase32, // padding inside
		"A":                                  totp.ErrSecretBase32, // no whole byte
		"JBSWY3DPEHPK3PXPé":                  totp.ErrSecretBase32,
		strings.Repeat("A", 1025):            totp.ErrSecretTooLong,
		"JBSWY3DPEHPK3PXP" + "\x00":          totp.ErrSecretBase32,
		strings.Repeat("A", 1016) + "BBBBBB": totp.ErrSecretBase32, // 1022 characters: 6 mod 8 is not a whole byte count
	}
	for in, wantErr := range bad {
		if _, err := totp.DecodeSecret(in); !errors.Is(err, wantErr) {
			t.Errorf("DecodeSecret(%.20q...) error %v, want %v", in, err, wantErr)
		}
	}
}

func TestDeriveName(t *testing.T) {
	cases := []struct{ issuer, username, want string }{
		{"Acme", "alice@example.com", "Acme (alice@example.com)"},
		{"Acme", "", "Acme"},
		{"", "alice", "alice"},
		{"", "", "Authenticator"},
		{strings.Repeat("é", 200), strings.Repeat("x", 200), strings.Repeat("é", 200) + " (" + strings.Repeat("x", 53)},
	}
	for _, c := range cases {
		if got := totp.DeriveName(c.issuer, c.username); got != c.want {
			t.Errorf("DeriveName(%q, %q) = %q, want %q", c.issuer, c.username, got, c.want)
		}
	}
}
