package totp_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/catchbox/catchbox/internal/problem"
	"github.com/catchbox/catchbox/internal/problem/problemtest"
	"github.com/catchbox/catchbox/internal/store"
	"github.com/catchbox/catchbox/internal/store/storetest"
	"github.com/catchbox/catchbox/internal/tenant"
	"github.com/catchbox/catchbox/internal/totp"
)

// principal is an API key's principal of the organisation.
func principal(org tenant.Org) tenant.Principal {
	return tenant.Principal{Org: org, KeyID: "key-of-" + org.Name, Orgs: []tenant.Org{org}}
}

// devices is how many active devices the organisation has.
func (e *env) devices(org tenant.Org) int {
	e.t.Helper()
	total, _, err := e.svc.List(context.Background(), org.ID, totp.Filter{Limit: 100})
	if err != nil {
		e.t.Fatal(err)
	}
	return total
}

// TestAddDevice calls the operation in each of its forms as the API and the
// dashboard do, without HTTP: the Base32 secret read as people paste it, the
// otpauth URL's parameters winning over the request's, the shared-secret
// form's fixed defaults; every invalid field named at once in the form's
// order; the organisation's switch and limit; nothing saved when refused.
func TestAddDevice(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		e := newEnv(t, db)
		ctx := context.Background()
		owner := principal(e.org)
		secret, _ := totp.DecodeSecret(testSecret)

		d, err := e.svc.AddDevice(ctx, owner, totp.AddDeviceRequest{Source: totp.SourceBase32SecretKey,
			Secret: "jbsw y3dp-ehpk3pxp==", Name: "  Bank ", Digits: 8, Period: 60, Algorithm: "sha256", ExpiresAt: start.Add(time.Hour)})
		if err != nil {
			t.Fatal(err)
		}
		want := totp.Params{Digits: 8, Period: 60, Algorithm: totp.SHA256}
		if d.OrgID != e.org.ID || d.Name != "Bank" || d.Params != want || d.Source != totp.SourceBase32SecretKey ||
			!d.ExpiresAt.Equal(start.Add(time.Hour)) || d.Username != "" || d.Issuer != "" {
			t.Fatalf("Base32 device %+v", d)
		}
		otp, err := e.svc.DeviceCode(ctx, owner, totp.DeviceCodeRequest{ID: d.ID})
		if err != nil || otp != totp.Generate(secret, want, start) {
			t.Fatalf("code of the Base32 device: %+v, %v; want %+v", otp, err, totp.Generate(secret, want, start))
		}

		url := "otpauth://totp/Acme:alice?secret=" + testSecret + "&digits=8&issuer=Acme"
		d, err = e.svc.AddDevice(ctx, owner, totp.AddDeviceRequest{Source: totp.SourceOtpauthURL, OtpauthURL: url,
			Username: "bob", Issuer: "Other", Digits: 6, Period: 60})
		if err != nil {
			t.Fatal(err)
		}
		if d.Name != "Acme (alice)" || d.Issuer != "Acme" || d.Username != "alice" || d.Source != totp.SourceOtpauthURL ||
			d.Params != (totp.Params{Digits: 8, Period: 60, Algorithm: totp.SHA1}) || !d.ExpiresAt.IsZero() {
			t.Fatalf("otpauth device %+v", d)
		}
		d, err = e.svc.AddDevice(ctx, owner, totp.AddDeviceRequest{Source: totp.SourceSharedSecret, Secret: testSecret, Digits: 8, Algorithm: "SHA512"})
		if err != nil || d.Params != totp.DefaultParams || d.Name != totp.DefaultName {
			t.Fatalf("shared-secret device %+v, %v", d, err)
		}
		if n := e.devices(e.org); n != 3 {
			t.Fatalf("%d devices, want 3", n)
		}

		for _, c := range []struct {
			name   string
			req    totp.AddDeviceRequest
			code   string
			fields []string
		}{
			{"every field of the Base32 form", totp.AddDeviceRequest{Source: totp.SourceBase32SecretKey, Secret: "!!",
				Name: strings.Repeat("x", 256), Username: "a\x00b", ExpiresAt: start, Digits: 7, Period: 9, Algorithm: "MD5"},
				"invalid_secret", []string{"base32_secret_key", "name", "username", "expires_at", "digits", "period", "algorithm"}},
			{"an empty secret", totp.AddDeviceRequest{Source: totp.SourceCustom}, "invalid_secret", []string{"secret"}},
			{"a period too long", totp.AddDeviceRequest{Source: totp.SourceCustom, Secret: testSecret, Period: 301}, "invalid_parameter", []string{"period"}},
			{"a shared secret not Base32, an issuer too long", totp.AddDeviceRequest{Source: totp.SourceSharedSecret, Secret: "JBSWY3DPEHPK3PX1",
				Issuer: strings.Repeat("é", 256)}, "invalid_secret", []string{"shared_secret", "issuer"}},
			{"the request's digits beside a URL", totp.AddDeviceRequest{Source: totp.SourceOtpauthURL, OtpauthURL: "https://example.com/?secret=" + testSecret,
				Digits: 7}, "invalid_parameter", []string{"digits", "otp_auth_url"}},
			{"an HOTP URL", totp.AddDeviceRequest{Source: totp.SourceOtpauthURL, OtpauthURL: "otpauth://hotp/x?secret=" + testSecret + "&counter=1"},
				"hotp_not_supported", []string{"otp_auth_url"}},
			{"an empty URL", totp.AddDeviceRequest{Source: totp.SourceOtpauthURL}, "invalid_otpauth_url", []string{"otp_auth_url"}},
		} {
			_, err := e.svc.AddDevice(ctx, owner, c.req)
			pe := problemtest.WantFields(t, err, c.code, c.fields...)
			if c.name == "an empty secret" && pe.Message != "secret "+totp.ErrSecretEmpty.Error() {
				t.Errorf("%s: %q", c.name, pe.Message)
			}
		}
		if _, err := e.svc.AddDevice(ctx, owner, totp.AddDeviceRequest{Source: "qr", Secret: testSecret}); err == nil || errors.As(err, new(*problem.Error)) {
			t.Errorf("an unknown source: %v, want an internal error", err)
		}
		_, err = e.svc.AddDevice(ctx, tenant.Principal{}, totp.AddDeviceRequest{Source: totp.SourceCustom, Secret: testSecret})
		problemtest.Want(t, err, problem.NotFound, "not_found")
		if n := e.devices(e.org); n != 3 {
			t.Fatalf("%d devices after refused requests, want 3", n)
		}

		limited, _ := e.newOrg("limited", 1, true)
		if _, err := e.svc.AddDevice(ctx, principal(limited), totp.AddDeviceRequest{Source: totp.SourceCustom, Secret: testSecret}); err != nil {
			t.Fatal(err)
		}
		_, err = e.svc.AddDevice(ctx, principal(limited), totp.AddDeviceRequest{Source: totp.SourceCustom, Secret: testSecret})
		problemtest.Want(t, err, problem.Forbidden, "device_limit_reached")
		off, _ := e.newOrg("off", 10, false)
		_, err = e.svc.AddDevice(ctx, principal(off), totp.AddDeviceRequest{Source: totp.SourceBase32SecretKey, Secret: testSecret})
		problemtest.Want(t, err, problem.Forbidden, "totp_disabled")
		if e.devices(limited) != 1 || e.devices(off) != 0 {
			t.Fatalf("devices after refusals: %d limited, %d off", e.devices(limited), e.devices(off))
		}
	})
}

// TestDeviceCodeAndDelete: the code of a device, the next one when the
// current would not stay valid long enough, a minimum not below the period
// refused; another organisation's principal (and none) can neither read a
// device's code nor delete it; an expired device gives no code and is
// deleted all the same.
func TestDeviceCodeAndDelete(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		e := newEnv(t, db)
		ctx := context.Background()
		owner := principal(e.org)
		otherOrg, _ := e.newOrg("globex", 10, true)
		other := principal(otherOrg)
		secret, _ := totp.DecodeSecret(testSecret)
		d, err := e.svc.AddDevice(ctx, owner, totp.AddDeviceRequest{Source: totp.SourceCustom, Secret: testSecret, Period: 10,
			ExpiresAt: start.Add(time.Minute)})
		if err != nil {
			t.Fatal(err)
		}
		params := totp.Params{Digits: 6, Period: 10, Algorithm: totp.SHA1}
		e.clock.Set(start.Add(3 * time.Second)) // 10 s periods: this one ends at start + 10 s
		otp, err := e.svc.DeviceCode(ctx, owner, totp.DeviceCodeRequest{ID: d.ID})
		if err != nil || otp != totp.Generate(secret, params, start) {
			t.Fatalf("code: %+v, %v", otp, err)
		}
		next, err := e.svc.DeviceCode(ctx, owner, totp.DeviceCodeRequest{ID: d.ID, MinValid: 8 * time.Second})
		if err != nil || next != totp.Generate(secret, params, start.Add(10*time.Second)) {
			t.Fatalf("code valid 8 s: %+v, %v", next, err)
		}
		if slept := e.clock.Slept(); len(slept) != 1 || slept[0] != 7*time.Second {
			t.Fatalf("slept %v, want the 7 s to the next period", slept)
		}
		_, err = e.svc.DeviceCode(ctx, owner, totp.DeviceCodeRequest{ID: d.ID, MinValid: 10 * time.Second})
		problemtest.WantFields(t, err, "min_seconds_not_below_period", "min_seconds_until_expire")
		_, err = e.svc.DeviceCode(ctx, owner, totp.DeviceCodeRequest{ID: d.ID, MinValid: -time.Second})
		problemtest.WantFields(t, err, "invalid_parameter", "min_seconds_until_expire")

		for name, c := range map[string]struct {
			p  tenant.Principal
			id string
		}{
			"another organisation": {other, d.ID},
			"no principal":         {tenant.Principal{}, d.ID},
			"an unknown device":    {owner, tenant.NewID()},
			"a malformed id":       {owner, "otp"},
		} {
			_, err := e.svc.DeviceCode(ctx, c.p, totp.DeviceCodeRequest{ID: c.id})
			if pe := problemtest.Want(t, err, problem.NotFound, "not_found"); pe.Message != "device not found" {
				t.Errorf("%s: code refused with %q", name, pe.Message)
			}
			err = e.svc.DeleteDevice(ctx, c.p, totp.DeleteDeviceRequest{ID: c.id})
			if pe := problemtest.Want(t, err, problem.NotFound, "not_found"); pe.Message != "device not found" {
				t.Errorf("%s: delete refused with %q", name, pe.Message)
			}
		}
		if _, err := e.svc.DeviceCode(ctx, owner, totp.DeviceCodeRequest{ID: d.ID}); err != nil {
			t.Fatalf("the device after refused deletes: %v", err)
		}

		e.clock.Set(start.Add(time.Minute))
		_, err = e.svc.DeviceCode(ctx, owner, totp.DeviceCodeRequest{ID: d.ID})
		problemtest.Want(t, err, problem.Gone, "device_expired")
		if err := e.svc.DeleteDevice(ctx, owner, totp.DeleteDeviceRequest{ID: d.ID}); err != nil {
			t.Fatalf("delete an expired device: %v", err)
		}
		err = e.svc.DeleteDevice(ctx, owner, totp.DeleteDeviceRequest{ID: d.ID})
		problemtest.Want(t, err, problem.NotFound, "not_found")
		if _, err := e.svc.Get(ctx, e.org.ID, d.ID); !errors.Is(err, totp.ErrNotFound) {
			t.Fatalf("the deleted device: %v", err)
		}
	})
}
