package totp

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"

	"github.com/go-chi/chi/v5"

	"github.com/catchbox/catchbox/internal/httpx"
	"github.com/catchbox/catchbox/internal/tenant"
)

// deviceJSON is the TotpDevice resource. The secret is not a field of it.
type deviceJSON struct {
	ID             string  `json:"id"`
	OrganisationID string  `json:"organisation_id"`
	Name           string  `json:"name"`
	Username       *string `json:"username"`
	Issuer         *string `json:"issuer"`
	Digits         int     `json:"digits"`
	Period         int     `json:"period"`
	Algorithm      string  `json:"algorithm"`
	Source         string  `json:"source"`
	ExpiresAt      *string `json:"expires_at"`
	CreatedAt      string  `json:"created_at"`
	UpdatedAt      string  `json:"updated_at"`
}

func deviceView(d Device) deviceJSON {
	v := deviceJSON{ID: d.ID, OrganisationID: d.OrgID, Name: d.Name, Digits: d.Params.Digits, Period: d.Params.Period,
		Algorithm: string(d.Params.Algorithm), Source: d.Source,
		CreatedAt: httpx.Time(d.CreatedAt), UpdatedAt: httpx.Time(d.UpdatedAt)}
	if d.Username != "" {
		v.Username = &d.Username
	}
	if d.Issuer != "" {
		v.Issuer = &d.Issuer
	}
	if !d.ExpiresAt.IsZero() {
		e := httpx.Time(d.ExpiresAt)
		v.ExpiresAt = &e
	}
	return v
}

// otpJSON is the TotpOtpResponse resource.
type otpJSON struct {
	Code    string `json:"code"`
	Expires string `json:"expires"`
}

// MaxFilterLength caps the username and issuer filters of the device list.
const MaxFilterLength = 240

// ListDevicesHandler answers GET /api/devices: the organisation's active devices,
// newest first.
func (s *Service) ListDevicesHandler(w http.ResponseWriter, r *http.Request) error {
	q := httpx.NewQuery(r)
	f := Filter{Limit: int(q.Int("limit", 100, 1, 100)), Offset: q.Int("offset", 0, 0, -1)}
	f.Username, _ = q.String("username", MaxFilterLength)
	f.Issuer, _ = q.String("issuer", MaxFilterLength)
	if err := q.Err(); err != nil {
		return err
	}
	for _, p := range []struct{ name, v string }{{"username", f.Username}, {"issuer", f.Issuer}} {
		if strings.IndexFunc(p.v, unicode.IsControl) >= 0 {
			return httpx.Invalid(p.name, "must not contain control characters")
		}
	}
	total, devices, err := s.List(r.Context(), tenant.OrgFrom(r.Context()).ID, f)
	if err != nil {
		return err
	}
	options := map[string]any{"limit": f.Limit, "offset": f.Offset}
	if f.Username != "" {
		options["username"] = f.Username
	}
	if f.Issuer != "" {
		options["issuer"] = f.Issuer
	}
	items := make([]deviceJSON, 0, len(devices))
	for _, d := range devices {
		items = append(items, deviceView(d))
	}
	httpx.WriteJSON(w, http.StatusOK, map[string]any{"total_count": total, "options": options, "items": items})
	return nil
}

// body is every field a device endpoint reads. Pointers tell absent (or null)
// from given.
type body struct {
	SharedSecret          *string  `json:"shared_secret"`
	Secret                *string  `json:"secret"`
	Base32SecretKey       *string  `json:"base32_secret_key"`
	OtpAuthURL            *string  `json:"otp_auth_url"`
	Name                  *string  `json:"name"`
	Username              *string  `json:"username"`
	Issuer                *string  `json:"issuer"`
	Digits                *float64 `json:"digits"`
	Period                *float64 `json:"period"`
	Algorithm             *string  `json:"algorithm"`
	ExpiresAt             *string  `json:"expires_at"`
	MinSecondsUntilExpire *float64 `json:"min_seconds_until_expire"`

	present map[string]bool
}

// aliases are spellings accepted besides snake_case and its camelCase.
var aliases = map[string]string{"otpauth_url": "otp_auth_url"}

// Which body fields each endpoint reads; any other is ignored, whatever its
// value, as an unknown field is (contract section 4).
var (
	describing      = []string{"name", "username", "issuer", "expires_at"}
	parameters      = []string{"digits", "period", "algorithm"}
	sharedFields    = append([]string{"shared_secret"}, describing...)
	customFields    = append(append([]string{"secret"}, describing...), parameters...)
	base32Fields    = append(append([]string{"base32_secret_key"}, describing...), parameters...)
	otpauthFields   = append(append([]string{"otp_auth_url"}, describing...), parameters...)
	secretOTPFields = append([]string{"shared_secret", minSecondsField}, parameters...) // parameters to refuse them
)

// decodeBody reads a device request body, keeping only the fields the
// endpoint reads. Fields are snake_case; the camelCase spelling of a field is
// accepted too, the snake_case one winning when a body has both.
func decodeBody(r *http.Request, fields []string) (*body, error) {
	var raw map[string]json.RawMessage
	if err := httpx.DecodeJSON(r, &raw); err != nil {
		return nil, err
	}
	norm := make(map[string]json.RawMessage, len(raw))
	for k, v := range raw {
		if snakeCase(k) == k {
			norm[k] = v
		}
	}
	for k, v := range raw {
		sk := snakeCase(k)
		if a, ok := aliases[sk]; ok {
			sk = a
		}
		if _, ok := norm[sk]; !ok {
			norm[sk] = v
		}
	}
	for k := range norm {
		if !slices.Contains(fields, k) {
			delete(norm, k)
		}
	}
	b := &body{present: map[string]bool{}}
	for k, v := range norm {
		if string(v) != "null" {
			b.present[k] = true
		}
	}
	data, err := json.Marshal(norm)
	if err != nil {
		return nil, fmt.Errorf("re-encode body: %w", err)
	}
	if err := json.Unmarshal(data, b); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) && te.Field != "" {
			return nil, httpx.Invalid(te.Field, httpx.TypeDetail(te))
		}
		return nil, httpx.Errorf(http.StatusBadRequest, "invalid_json", "request body is not a valid JSON object")
	}
	return b, nil
}

// snakeCase turns "otpAuthUrl" into "otp_auth_url"; snake_case is unchanged.
func snakeCase(s string) string {
	var b strings.Builder
	for i, r := range s {
		if r >= 'A' && r <= 'Z' {
			if i > 0 {
				b.WriteByte('_')
			}
			r += 'a' - 'A'
		}
		b.WriteRune(r)
	}
	return b.String()
}

// problems collects the invalid fields of one request, so a client learns of every
// mistake at once. The error's code is that of the first problem.
type problems struct{ fields httpx.Fields }

func (p *problems) add(code, field, detail string) {
	p.fields = append(p.fields, httpx.FieldError{Field: field, Detail: detail, Code: code})
}

func (p *problems) err() error { return p.fields.Err() }

// secret decodes the Base32 secret of field, which is required.
func (p *problems) secret(field string, v *string) []byte {
	if v == nil {
		p.add("invalid_parameter", field, "is required")
		return nil
	}
	key, err := DecodeSecret(*v)
	if err != nil {
		p.add("invalid_secret", field, err.Error())
		return nil
	}
	return key
}

// text returns a trimmed name, username or issuer ("" when absent), checked.
func (p *problems) text(field string, v *string) string {
	if v == nil {
		return ""
	}
	t := strings.TrimSpace(*v)
	if d := CheckText(t); d != "" {
		p.add("invalid_parameter", field, d)
	}
	return t
}

// whole returns a number that must be a whole number, and whether it is one.
func whole(v float64) (int, bool) {
	if v != math.Trunc(v) || v < math.MinInt32 || v > math.MaxInt32 {
		return 0, false
	}
	return int(v), true
}

// notAllowed refuses the fields an endpoint fixes itself.
func (p *problems) notAllowed(b *body, why string, fields ...string) {
	for _, f := range fields {
		if b.present[f] {
			p.add("field_not_allowed", f, why)
		}
	}
}

// describe reads name, username, issuer and expires_at into in.
func (s *Service) describe(p *problems, b *body, in *NewDevice) {
	in.Name = p.text("name", b.Name)
	in.Username = p.text("username", b.Username)
	in.Issuer = p.text("issuer", b.Issuer)
	if b.ExpiresAt != nil {
		t, err := time.Parse(time.RFC3339Nano, strings.TrimSpace(*b.ExpiresAt))
		switch {
		case err != nil:
			p.add("invalid_parameter", "expires_at", "must be an RFC 3339 date-time such as 2030-01-02T15:04:05.000Z")
		case !t.After(s.Now()):
			p.add("invalid_parameter", "expires_at", "must be in the future")
		default:
			in.ExpiresAt = t
		}
	}
}

// params reads digits, period and algorithm; an absent one stays zero.
func (p *problems) params(b *body) Params {
	var pr Params
	if b.Digits != nil {
		if n, ok := whole(*b.Digits); ok && (n == 6 || n == 8) {
			pr.Digits = n
		} else {
			p.add("invalid_parameter", "digits", "must be 6 or 8")
		}
	}
	if b.Period != nil {
		if n, ok := whole(*b.Period); ok && n >= MinPeriod && n <= MaxPeriod {
			pr.Period = n
		} else {
			p.add("invalid_parameter", "period", fmt.Sprintf("must be a whole number of seconds between %d and %d", MinPeriod, MaxPeriod))
		}
	}
	if b.Algorithm != nil {
		if alg, ok := ParseAlgorithm(*b.Algorithm); ok {
			pr.Algorithm = alg
		} else {
			p.add("invalid_parameter", "algorithm", "must be SHA1, SHA256 or SHA512")
		}
	}
	return pr
}

// CreateSharedSecretDeviceHandler answers POST /api/devices: a device with the
// authenticator-app defaults (6 digits, 30 seconds, SHA1). Its body has no
// digits, period or algorithm: given, they are ignored as any unknown field is
// (contract section 4); POST /api/devices/custom chooses them.
func (s *Service) CreateSharedSecretDeviceHandler(w http.ResponseWriter, r *http.Request) error {
	b, err := decodeBody(r, sharedFields)
	if err != nil {
		return err
	}
	var p problems
	in := NewDevice{Source: SourceSharedSecret}
	in.Secret = p.secret("shared_secret", b.SharedSecret)
	s.describe(&p, b, &in)
	in.Params = DefaultParams
	return s.create(w, r, &p, in)
}

// CreateCustomDeviceHandler answers POST /api/devices/custom (secret in "secret").
func (s *Service) CreateCustomDeviceHandler(w http.ResponseWriter, r *http.Request) error {
	return s.createWithParams(w, r, "secret", SourceCustom)
}

// CreateBase32DeviceHandler answers POST /api/devices/base32-secret-key (secret in
// "base32_secret_key").
func (s *Service) CreateBase32DeviceHandler(w http.ResponseWriter, r *http.Request) error {
	return s.createWithParams(w, r, "base32_secret_key", SourceBase32SecretKey)
}

func (s *Service) createWithParams(w http.ResponseWriter, r *http.Request, secretField, source string) error {
	fields := customFields
	if secretField == "base32_secret_key" {
		fields = base32Fields
	}
	b, err := decodeBody(r, fields)
	if err != nil {
		return err
	}
	var p problems
	in := NewDevice{Source: source}
	v := b.Secret
	if secretField == "base32_secret_key" {
		v = b.Base32SecretKey
	}
	in.Secret = p.secret(secretField, v)
	s.describe(&p, b, &in)
	in.Params = p.params(b).withDefaults()
	return s.create(w, r, &p, in)
}

// CreateOtpauthDeviceHandler answers POST /api/devices/otpauth-url. The URL's
// username, issuer, digits, period and algorithm win; the body's fill what the URL
// lacks; a body name replaces the derived one.
func (s *Service) CreateOtpauthDeviceHandler(w http.ResponseWriter, r *http.Request) error {
	b, err := decodeBody(r, otpauthFields)
	if err != nil {
		return err
	}
	var p problems
	in := NewDevice{Source: SourceOtpauthURL}
	s.describe(&p, b, &in)
	in.Params = p.params(b)
	if b.OtpAuthURL == nil {
		p.add("invalid_parameter", "otp_auth_url", "is required")
	} else if k, err := ParseOtpauthURL(*b.OtpAuthURL); err != nil {
		ue, _ := asURLError(err)
		p.add(ue.Code, "otp_auth_url", ue.Detail)
	} else {
		in = MergeOtpauth(k, in)
	}
	in.Params = in.Params.withDefaults()
	return s.create(w, r, &p, in)
}

// MergeOtpauth applies the otpauth precedence rules: the URL's issuer, account,
// digits, period and algorithm win over body's; body values fill the gaps. The
// secret comes from the URL alone; name, expires_at and source stay body's.
func MergeOtpauth(k Key, body NewDevice) NewDevice {
	out := body
	out.Secret = k.Secret
	if k.Issuer != "" {
		out.Issuer = k.Issuer
	}
	if k.Account != "" {
		out.Username = k.Account
	}
	if k.Digits != 0 {
		out.Params.Digits = k.Digits
	}
	if k.Period != 0 {
		out.Params.Period = k.Period
	}
	if k.Algorithm != "" {
		out.Params.Algorithm = k.Algorithm
	}
	return out
}

// create saves in for the request's organisation and answers 201 with the device.
func (s *Service) create(w http.ResponseWriter, r *http.Request, p *problems, in NewDevice) error {
	if err := p.err(); err != nil {
		return err
	}
	d, err := s.Create(r.Context(), tenant.OrgFrom(r.Context()).ID, in)
	if err != nil {
		return deviceError(err)
	}
	w.Header().Set("Location", "/api/devices/"+d.ID)
	httpx.WriteJSON(w, http.StatusCreated, deviceView(d))
	return nil
}

// deviceError maps the service's errors to the contract's statuses and codes.
func deviceError(err error) error {
	var fe *httpx.FieldError
	switch {
	case errors.As(err, &fe):
		return fe
	case errors.Is(err, ErrNotFound):
		return httpx.NotFound("device")
	case errors.Is(err, ErrExpired):
		return httpx.Errorf(http.StatusGone, "device_expired", "the device has expired; it gives no more codes")
	case errors.Is(err, ErrDisabled):
		return httpx.Errorf(http.StatusForbidden, "totp_disabled", "TOTP devices are disabled for this organisation")
	case errors.Is(err, ErrLimitReached):
		return httpx.Errorf(http.StatusForbidden, "device_limit_reached",
			"the organisation has reached its limit of active devices; delete one or let one expire")
	}
	return err
}

// GetDeviceHandler answers GET /api/devices/{deviceId}: one device, expired ones
// included (their expires_at tells why their OTP is 410).
func (s *Service) GetDeviceHandler(w http.ResponseWriter, r *http.Request) error {
	d, err := s.Get(r.Context(), tenant.OrgFrom(r.Context()).ID, chi.URLParam(r, "deviceId"))
	if err != nil {
		return deviceError(err)
	}
	httpx.WriteJSON(w, http.StatusOK, deviceView(d))
	return nil
}

// DeleteDeviceHandler answers DELETE /api/devices/{deviceId}: 204, expired or not.
func (s *Service) DeleteDeviceHandler(w http.ResponseWriter, r *http.Request) error {
	if err := s.Delete(r.Context(), tenant.OrgFrom(r.Context()).ID, chi.URLParam(r, "deviceId")); err != nil {
		return deviceError(err)
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// minSecondsField names the minimum-validity parameter of both OTP endpoints.
const minSecondsField = "min_seconds_until_expire"

// parseMinSeconds reads a min_seconds_until_expire value: seconds, at least 0,
// fractions allowed. Values past any period are capped (the caller's period check
// refuses them), so a huge number cannot overflow the duration.
func parseMinSeconds(v float64) (time.Duration, error) {
	if math.IsNaN(v) || math.IsInf(v, 0) || v < 0 {
		return 0, httpx.Invalid(minSecondsField, "must be a number of seconds, at least 0")
	}
	if v > MaxPeriod {
		v = MaxPeriod + 1
	}
	return time.Duration(v * float64(time.Second)), nil
}

func writeOTP(w http.ResponseWriter, otp OTP) {
	w.Header().Set("Cache-Control", "no-store")
	httpx.WriteJSON(w, http.StatusOK, otpJSON{Code: otp.Code, Expires: httpx.Time(otp.Expires)})
}

// SecretOTPHandler answers POST /api/devices/otp: the code of a bare shared secret
// with the fixed defaults; nothing is saved.
func (s *Service) SecretOTPHandler(w http.ResponseWriter, r *http.Request) error {
	b, err := decodeBody(r, secretOTPFields)
	if err != nil {
		return err
	}
	var p problems
	key := p.secret("shared_secret", b.SharedSecret)
	p.notAllowed(b, "is not accepted: this endpoint always uses 6 digits, 30 seconds and SHA1", "digits", "period", "algorithm")
	if err := p.err(); err != nil {
		return err
	}
	var wait time.Duration
	if b.MinSecondsUntilExpire != nil {
		if wait, err = parseMinSeconds(*b.MinSecondsUntilExpire); err != nil {
			return err
		}
	}
	if fe := CheckMinValid(wait, DefaultParams.Period); fe != nil {
		return deviceError(fe)
	}
	otp, err := s.OTP(r.Context(), key, DefaultParams, wait)
	if err != nil {
		return err
	}
	writeOTP(w, otp)
	return nil
}

// DeviceOTPHandler answers GET /api/devices/{deviceId}/otp.
func (s *Service) DeviceOTPHandler(w http.ResponseWriter, r *http.Request) error {
	var wait time.Duration
	if raw := r.URL.Query().Get(minSecondsField); raw != "" { // empty is absent, as for every parameter
		v, err := strconv.ParseFloat(strings.TrimSpace(raw), 64)
		if err != nil {
			return httpx.Invalid(minSecondsField, "must be a number of seconds, at least 0")
		}
		if wait, err = parseMinSeconds(v); err != nil {
			return err
		}
	}
	otp, err := s.DeviceOTP(r.Context(), tenant.OrgFrom(r.Context()).ID, chi.URLParam(r, "deviceId"), wait)
	if err != nil {
		return deviceError(err)
	}
	writeOTP(w, otp)
	return nil
}
