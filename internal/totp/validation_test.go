package totp_test

import (
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/catchbox/catchbox/internal/httpx"
	"github.com/catchbox/catchbox/internal/store"
	"github.com/catchbox/catchbox/internal/store/storetest"
)

const testSecret = "JBSWY3DPEHPK3PXP"

// TestValidation sends every kind of bad request and checks the status, the error
// code and the field the error body names.
func TestValidation(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		e := newEnv(t, db)
		dev := e.create("/api/devices", map[string]any{"shared_secret": testSecret})["id"].(string)
		dev10 := e.create("/api/devices/custom", map[string]any{"secret": testSecret, "period": 10})["id"].(string)
		past := httpx.Time(start.Add(-time.Second))
		now := httpx.Time(start)
		long := strings.Repeat("x", 256)

		cases := []struct {
			name, method, path string
			body               any
			status             int
			code, field        string
		}{
			{"digits 7", "POST", "/api/devices/custom", map[string]any{"secret": testSecret, "digits": 7}, 400, "invalid_parameter", "digits"},
			{"digits 6.5", "POST", "/api/devices/custom", map[string]any{"secret": testSecret, "digits": 6.5}, 400, "invalid_parameter", "digits"},
			{"digits as string", "POST", "/api/devices/custom", `{"secret":"` + testSecret + `","digits":"6"}`, 400, "invalid_parameter", "digits"},
			{"period 9", "POST", "/api/devices/custom", map[string]any{"secret": testSecret, "period": 9}, 400, "invalid_parameter", "period"},
			{"period 301", "POST", "/api/devices/base32-secret-key", map[string]any{"base32_secret_key": testSecret, "period": 301}, 400, "invalid_parameter", "period"},
			{"period 0", "POST", "/api/devices/custom", map[string]any{"secret": testSecret, "period": 0}, 400, "invalid_parameter", "period"},
			{"algorithm MD5", "POST", "/api/devices/custom", map[string]any{"secret": testSecret, "algorithm": "MD5"}, 400, "invalid_parameter", "algorithm"},
			{"bad Base32 custom", "POST", "/api/devices/custom", map[string]any{"secret": "NOT-BASE32-18"}, 400, "invalid_secret", "secret"},
			{"bad Base32 shared", "POST", "/api/devices", map[string]any{"shared_secret": "JBSWY3DPEHPK3PX1"}, 400, "invalid_secret", "shared_secret"},
			{"bad Base32 base32", "POST", "/api/devices/base32-secret-key", map[string]any{"base32_secret_key": "ABC"}, 400, "invalid_secret", "base32_secret_key"},
			{"bad Base32 otp", "POST", "/api/devices/otp", map[string]any{"shared_secret": "!!!!"}, 400, "invalid_secret", "shared_secret"},
			{"empty secret", "POST", "/api/devices", map[string]any{"shared_secret": "  "}, 400, "invalid_secret", "shared_secret"},
			{"secret too long", "POST", "/api/devices", map[string]any{"shared_secret": strings.Repeat("A", 1032)}, 400, "invalid_secret", "shared_secret"},
			{"secret missing", "POST", "/api/devices", map[string]any{"name": "x"}, 400, "invalid_parameter", "shared_secret"},
			{"secret null", "POST", "/api/devices/custom", `{"secret":null}`, 400, "invalid_parameter", "secret"},
			{"custom wants secret", "POST", "/api/devices/custom", map[string]any{"shared_secret": testSecret}, 400, "invalid_parameter", "secret"},
			{"secret not a string", "POST", "/api/devices", `{"shared_secret":12}`, 400, "invalid_parameter", "shared_secret"},
			{"name too long", "POST", "/api/devices", map[string]any{"shared_secret": testSecret, "name": long}, 400, "invalid_parameter", "name"},
			{"username too long", "POST", "/api/devices/custom", map[string]any{"secret": testSecret, "username": long}, 400, "invalid_parameter", "username"},
			{"issuer with NUL", "POST", "/api/devices/custom", map[string]any{"secret": testSecret, "issuer": "a\x00b"}, 400, "invalid_parameter", "issuer"},
			{"expires_at in the past", "POST", "/api/devices", map[string]any{"shared_secret": testSecret, "expires_at": past}, 400, "invalid_parameter", "expires_at"},
			{"expires_at now", "POST", "/api/devices/custom", map[string]any{"secret": testSecret, "expires_at": now}, 400, "invalid_parameter", "expires_at"},
			{"expires_at not a date", "POST", "/api/devices", map[string]any{"shared_secret": testSecret, "expires_at": "tomorrow"}, 400, "invalid_parameter", "expires_at"},
			{"expiresAt in the past", "POST", "/api/devices/otpauth-url", map[string]any{"otpAuthUrl": "otpauth://totp/x?secret=" + testSecret, "expiresAt": past}, 400, "invalid_parameter", "expires_at"},
			{"digits in otp body", "POST", "/api/devices/otp", map[string]any{"shared_secret": testSecret, "digits": 8}, 400, "field_not_allowed", "digits"},
			{"period in otp body", "POST", "/api/devices/otp", map[string]any{"shared_secret": testSecret, "period": 30}, 400, "field_not_allowed", "period"},
			{"algorithm in otp body", "POST", "/api/devices/otp", map[string]any{"shared_secret": testSecret, "algorithm": "SHA1"}, 400, "field_not_allowed", "algorithm"},
			{"min seconds equal to the period", "POST", "/api/devices/otp", map[string]any{"shared_secret": testSecret, "min_seconds_until_expire": 30}, 400, "min_seconds_not_below_period", "min_seconds_until_expire"},
			{"min seconds huge", "POST", "/api/devices/otp", map[string]any{"shared_secret": testSecret, "minSecondsUntilExpire": 1e300}, 400, "min_seconds_not_below_period", "min_seconds_until_expire"},
			{"min seconds negative", "POST", "/api/devices/otp", map[string]any{"shared_secret": testSecret, "min_seconds_until_expire": -1}, 400, "invalid_parameter", "min_seconds_until_expire"},
			{"min seconds equal to device period", "GET", "/api/devices/" + dev + "/otp?min_seconds_until_expire=30", nil, 400, "min_seconds_not_below_period", "min_seconds_until_expire"},
			{"min seconds equal to a 10 s period", "GET", "/api/devices/" + dev10 + "/otp?min_seconds_until_expire=10", nil, 400, "min_seconds_not_below_period", "min_seconds_until_expire"},
			{"min seconds not a number", "GET", "/api/devices/" + dev + "/otp?min_seconds_until_expire=soon", nil, 400, "invalid_parameter", "min_seconds_until_expire"},
			{"min seconds negative query", "GET", "/api/devices/" + dev + "/otp?min_seconds_until_expire=-5", nil, 400, "invalid_parameter", "min_seconds_until_expire"},
			{"otpauth hotp", "POST", "/api/devices/otpauth-url", map[string]any{"otp_auth_url": "otpauth://hotp/x?secret=" + testSecret + "&counter=1"}, 400, "hotp_not_supported", "otp_auth_url"},
			{"otpauth without secret", "POST", "/api/devices/otpauth-url", map[string]any{"otp_auth_url": "otpauth://totp/Acme:alice?issuer=Acme"}, 400, "invalid_otpauth_url", "otp_auth_url"},
			{"otpauth bad secret", "POST", "/api/devices/otpauth-url", map[string]any{"otp_auth_url": "otpauth://totp/x?secret=189"}, 400, "invalid_otpauth_url", "otp_auth_url"},
			{"otpauth digits 7", "POST", "/api/devices/otpauth-url", map[string]any{"otp_auth_url": "otpauth://totp/x?digits=7&secret=" + testSecret}, 400, "invalid_otpauth_url", "otp_auth_url"},
			{"otpauth period 9", "POST", "/api/devices/otpauth-url", map[string]any{"otp_auth_url": "otpauth://totp/x?period=9&secret=" + testSecret}, 400, "invalid_otpauth_url", "otp_auth_url"},
			{"otpauth not otpauth", "POST", "/api/devices/otpauth-url", map[string]any{"otp_auth_url": "https://example.com/?secret=" + testSecret}, 400, "invalid_otpauth_url", "otp_auth_url"},
			{"otpauth missing", "POST", "/api/devices/otpauth-url", map[string]any{"name": "x"}, 400, "invalid_parameter", "otp_auth_url"},
			{"body digits 7 beside a URL", "POST", "/api/devices/otpauth-url", map[string]any{"otp_auth_url": "otpauth://totp/x?secret=" + testSecret, "digits": 7}, 400, "invalid_parameter", "digits"},
			{"not JSON", "POST", "/api/devices", `{"shared_secret":`, 400, "invalid_json", ""},
			{"JSON array", "POST", "/api/devices", `[1,2]`, 400, "invalid_json", ""},
			{"limit 0", "GET", "/api/devices?limit=0", nil, 400, "invalid_parameter", "limit"},
			{"limit 101", "GET", "/api/devices?limit=101", nil, 400, "invalid_parameter", "limit"},
			{"offset -1", "GET", "/api/devices?offset=-1", nil, 400, "invalid_parameter", "offset"},
			{"username filter 241", "GET", "/api/devices?username=" + strings.Repeat("a", 241), nil, 400, "invalid_parameter", "username"},
			{"issuer filter 241", "GET", "/api/devices?issuer=" + strings.Repeat("é", 241), nil, 400, "invalid_parameter", "issuer"},
			{"issuer filter NUL", "GET", "/api/devices?issuer=" + url.QueryEscape("a\x00"), nil, 400, "invalid_parameter", "issuer"},
			{"unknown device", "GET", "/api/devices/0193a8c2-7d1e-7000-8000-000000000000", nil, 404, "not_found", ""},
			{"non-UUID device", "GET", "/api/devices/not-a-uuid/otp", nil, 404, "not_found", ""},
			{"delete non-UUID", "DELETE", "/api/devices/not-a-uuid", nil, 404, "not_found", ""},
			{"delete a path word", "DELETE", "/api/devices/otp", nil, 405, "method_not_allowed", ""},
			{"no key", "GET", "/api/devices", nil, 401, "missing_api_key", ""},
		}
		for _, c := range cases {
			t.Run(c.name, func(t *testing.T) {
				key := e.key
				if c.status == http.StatusUnauthorized {
					key = ""
				}
				r := e.call(c.method, c.path, key, c.body)
				if r.status != c.status {
					t.Fatalf("status %d, want %d; body %s", r.status, c.status, r.body)
				}
				code, field := r.errorCode(t)
				if code != c.code || field != c.field {
					t.Fatalf("code %q field %q, want %q %q; body %s", code, field, c.code, c.field, r.body)
				}
			})
		}

		// Every field of a body is checked at once: one errors entry per field.
		r := e.call("POST", "/api/devices/custom", e.key, map[string]any{"secret": "1", "digits": 7, "period": 9, "algorithm": "x"})
		if got := len(r.json(t)["errors"].([]any)); got != 4 {
			t.Fatalf("%d errors entries, want 4: %s", got, r.body)
		}

		// Nothing was saved by a rejected request.
		list := e.call("GET", "/api/devices", e.key, nil).json(t)
		if list["total_count"] != 2.0 {
			t.Fatalf("total_count %v after rejected creates, want 2", list["total_count"])
		}
	})
}

// POST /api/devices reads shared_secret, name, username, issuer and
// expires_at; any other field is ignored, whatever its value, as the contract
// says of unknown fields (digits, period and algorithm included: the device
// has the fixed 6 digits, 30 seconds, SHA1). Only POST /api/devices/otp
// refuses those three.
func TestSharedSecretDeviceIgnoresOtherFields(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		e := newEnv(t, db)
		d := e.create("/api/devices", map[string]any{"shared_secret": testSecret, "name": "Fixed",
			"digits": 8, "period": 60, "algorithm": "SHA512", "secret": 12, "otp_auth_url": false,
			"min_seconds_until_expire": "soon", "colour": "blue"})
		if d["digits"] != 6.0 || d["period"] != 30.0 || d["algorithm"] != "SHA1" || d["source"] != "shared_secret" || d["name"] != "Fixed" {
			t.Fatalf("device %v, want 6 digits, 30 s, SHA1 from shared_secret", d)
		}
		// The same fields of the wrong type on the endpoints that read them are refused.
		for path, body := range map[string]map[string]any{
			"/api/devices/custom": {"secret": testSecret, "digits": "eight"},
			"/api/devices/otp":    {"shared_secret": testSecret, "digits": 8},
		} {
			if r := e.call("POST", path, e.key, body); r.status != http.StatusBadRequest {
				t.Errorf("%s %v: %d %s", path, body, r.status, r.body)
			}
		}
	})
}
