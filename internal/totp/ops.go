package totp

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/catchbox/catchbox/internal/problem"
	"github.com/catchbox/catchbox/internal/tenant"
)

// AddDeviceRequest is a device to add, in one of the forms of the API's
// create endpoints, which Source names: a Base32 secret (SourceSharedSecret,
// SourceCustom, SourceBase32SecretKey; the secret's field is shared_secret,
// secret or base32_secret_key) or an otpauth:// URL (SourceOtpauthURL).
type AddDeviceRequest struct {
	Source string
	// Secret is the Base32 secret of the secret forms, read as people paste
	// it (DecodeSecret).
	Secret string
	// OtpauthURL is the URL of SourceOtpauthURL. Its issuer, account,
	// digits, period and algorithm win over the request's; the request's
	// fill what the URL lacks.
	OtpauthURL string
	// Name, Username and Issuer are trimmed; "" is none. A device without a
	// name is named after its issuer and username (DeriveName).
	Name     string
	Username string
	Issuer   string
	// ExpiresAt is when the device stops giving codes; zero is never.
	ExpiresAt time.Time
	// Digits, Period (seconds) and Algorithm (SHA1, SHA256 or SHA512, in any
	// case) are the generator's; zero values are the defaults. A
	// SourceSharedSecret device has the defaults whatever they say, as
	// POST /api/devices ignores them.
	Digits    int
	Period    int
	Algorithm string
}

// DeleteDeviceRequest names the device to delete.
type DeleteDeviceRequest struct {
	ID string
}

// DeviceCodeRequest names the device whose code is wanted, and how long the
// code must stay valid at least (the seed's min_seconds_until_expire): below
// the device's period, 0 for any.
type DeviceCodeRequest struct {
	ID       string
	MinValid time.Duration
}

// secretFields name the secret's field in each secret form.
var secretFields = map[string]string{
	SourceSharedSecret:    "shared_secret",
	SourceCustom:          "secret",
	SourceBase32SecretKey: "base32_secret_key",
}

// The details of the parameters refused, which the HTTP adapter also gives a
// value that JSON holds and the request cannot (6.5 digits).
var (
	digitsDetail    = "must be 6 or 8"
	periodDetail    = fmt.Sprintf("must be a whole number of seconds between %d and %d", MinPeriod, MaxPeriod)
	algorithmDetail = "must be SHA1, SHA256 or SHA512"
	expiresDetail   = "must be in the future"
)

// AddDevice saves a device for the principal's organisation and returns it.
// Every invalid field is named at once, in the order of the form's fields;
// an organisation with TOTP off is Forbidden (totp_disabled), as is one at
// its limit of active devices (device_limit_reached).
func (s *Service) AddDevice(ctx context.Context, p tenant.Principal, req AddDeviceRequest) (Device, error) {
	return s.addDevice(ctx, p, req, nil)
}

// addDevice is AddDevice with the fields the caller could not read into req
// (unread, by field: a missing secret, a date that is not one), each refused
// in its field's place among the request's other mistakes, so that the API
// names a body's mistakes in one order whoever found them.
func (s *Service) addDevice(ctx context.Context, p tenant.Principal, req AddDeviceRequest, unread map[string]problem.FieldError) (Device, error) {
	var fields problem.Fields
	// check refuses field with the caller's reason when it could not read it,
	// else with what why finds wrong with it (a detail of "" is nothing);
	// the fields are checked in the order the form lists them.
	check := func(field string, why func() (code, detail string)) {
		if fe, ok := unread[field]; ok {
			fields = append(fields, fe)
		} else if code, detail := why(); detail != "" {
			fields.AddCode(field, code, detail)
		}
	}
	in := NewDevice{Source: req.Source}
	secretField, secretForm := secretFields[req.Source]
	if !secretForm && req.Source != SourceOtpauthURL {
		return Device{}, fmt.Errorf("add a TOTP device: unknown source %q", req.Source)
	}
	if secretForm {
		check(secretField, func() (string, string) {
			key, err := DecodeSecret(req.Secret)
			if err != nil {
				return "invalid_secret", err.Error()
			}
			in.Secret = key
			return "", ""
		})
	}
	for _, t := range []struct {
		field string
		v     string
		dst   *string
	}{{"name", req.Name, &in.Name}, {"username", req.Username, &in.Username}, {"issuer", req.Issuer, &in.Issuer}} {
		*t.dst = strings.TrimSpace(t.v)
		check(t.field, func() (string, string) { return "invalid_parameter", CheckText(*t.dst) })
	}
	check("expires_at", func() (string, string) {
		if !req.ExpiresAt.IsZero() && !req.ExpiresAt.After(s.Now()) {
			return "invalid_parameter", expiresDetail
		}
		in.ExpiresAt = req.ExpiresAt
		return "", ""
	})
	if req.Source == SourceSharedSecret {
		in.Params = DefaultParams
	} else {
		in.Params = params(check, req)
	}
	if req.Source == SourceOtpauthURL {
		check("otp_auth_url", func() (string, string) {
			k, err := ParseOtpauthURL(req.OtpauthURL)
			if err != nil {
				ue, _ := asURLError(err)
				return ue.Code, ue.Detail
			}
			in = MergeOtpauth(k, in)
			return "", ""
		})
	}
	in.Params = in.Params.withDefaults()
	if err := fields.Err(); err != nil {
		return Device{}, err
	}
	if p.Org.ID == "" {
		return Device{}, problem.NotFoundf("organisation")
	}
	d, err := s.Create(ctx, p.Org.ID, in)
	if err != nil {
		return Device{}, deviceError(err)
	}
	return d, nil
}

// params reads the request's digits, period and algorithm; a zero one stays
// zero (the default, or the otpauth URL's).
func params(check func(string, func() (string, string)), req AddDeviceRequest) Params {
	var pr Params
	check("digits", func() (string, string) {
		if req.Digits != 0 && req.Digits != 6 && req.Digits != 8 {
			return "invalid_parameter", digitsDetail
		}
		pr.Digits = req.Digits
		return "", ""
	})
	check("period", func() (string, string) {
		if req.Period != 0 && (req.Period < MinPeriod || req.Period > MaxPeriod) {
			return "invalid_parameter", periodDetail
		}
		pr.Period = req.Period
		return "", ""
	})
	check("algorithm", func() (string, string) {
		if req.Algorithm == "" {
			return "", ""
		}
		alg, ok := ParseAlgorithm(req.Algorithm)
		if !ok {
			return "invalid_parameter", algorithmDetail
		}
		pr.Algorithm = alg
		return "", ""
	})
	return pr
}

// DeleteDevice removes one of the principal organisation's devices, expired
// or not. Another organisation's device, and an id that is not one, are not
// found.
func (s *Service) DeleteDevice(ctx context.Context, p tenant.Principal, req DeleteDeviceRequest) error {
	if p.Org.ID == "" {
		return problem.NotFoundf("device")
	}
	return deviceError(s.Delete(ctx, p.Org.ID, req.ID))
}

// DeviceCode returns the current code of one of the principal organisation's
// devices, or, when that code stays valid for less than req.MinValid, waits
// for the next period and returns its code (the wait ends early with ctx).
// Another organisation's device is not found; an expired one is Gone
// (device_expired); a MinValid not below the device's period is refused
// (min_seconds_not_below_period).
func (s *Service) DeviceCode(ctx context.Context, p tenant.Principal, req DeviceCodeRequest) (OTP, error) {
	if p.Org.ID == "" {
		return OTP{}, problem.NotFoundf("device")
	}
	otp, err := s.DeviceOTP(ctx, p.Org.ID, req.ID, req.MinValid)
	if err != nil {
		return OTP{}, deviceError(err)
	}
	return otp, nil
}

// deviceError is the problem of each of the device service's errors, in the
// contract's codes; any other error is returned as it is.
func deviceError(err error) error {
	var fe *problem.FieldError
	switch {
	case err == nil:
		return nil
	case errors.As(err, &fe):
		return problem.Fields{*fe}.Error()
	case errors.Is(err, ErrNotFound):
		return problem.NotFoundf("device")
	case errors.Is(err, ErrExpired):
		return problem.Errorf(problem.Gone, "device_expired", "the device has expired; it gives no more codes")
	case errors.Is(err, ErrDisabled):
		return problem.Errorf(problem.Forbidden, "totp_disabled", "TOTP devices are disabled for this organisation")
	case errors.Is(err, ErrLimitReached):
		return problem.Errorf(problem.Forbidden, "device_limit_reached",
			"the organisation has reached its limit of active devices; delete one or let one expire")
	}
	return err
}
