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
	"github.com/catchbox/catchbox/internal/problem"
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

// whole returns a number that must be a whole number, and whether it is one.
func whole(v float64) (int, bool) {
	if v != math.Trunc(v) || v < math.MinInt32 || v > math.MaxInt32 {
		return 0, false
	}
	return int(v), true
}

// addRequest reads a device body of the form source into AddDevice's
// request. What the body gives and the request cannot hold is returned in
// unread, by field, for the operation to refuse in its place: a secret or URL
// absent (the request's "" is an empty one), a date that is not one, a
// number that is not whole (or 0: the request's "absent"), an empty
// algorithm.
func addRequest(b *body, source string) (req AddDeviceRequest, unread map[string]problem.FieldError) {
	unread = map[string]problem.FieldError{}
	refuse := func(field, detail string) {
		unread[field] = problem.FieldError{Field: field, Detail: detail, Code: "invalid_parameter"}
	}
	req.Source = source
	str := func(field string, v *string) string {
		if v == nil {
			refuse(field, "is required")
			return ""
		}
		return *v
	}
	switch source {
	case SourceSharedSecret:
		req.Secret = str("shared_secret", b.SharedSecret)
	case SourceCustom:
		req.Secret = str("secret", b.Secret)
	case SourceBase32SecretKey:
		req.Secret = str("base32_secret_key", b.Base32SecretKey)
	case SourceOtpauthURL:
		req.OtpauthURL = str("otp_auth_url", b.OtpAuthURL)
	}
	for _, t := range []struct {
		v   *string
		dst *string
	}{{b.Name, &req.Name}, {b.Username, &req.Username}, {b.Issuer, &req.Issuer}} {
		if t.v != nil {
			*t.dst = *t.v
		}
	}
	if b.ExpiresAt != nil {
		t, err := time.Parse(time.RFC3339Nano, strings.TrimSpace(*b.ExpiresAt))
		switch {
		case err != nil:
			refuse("expires_at", "must be an RFC 3339 date-time such as 2030-01-02T15:04:05.000Z")
		case t.IsZero():
			refuse("expires_at", expiresDetail) // year 1: long past, not "never"
		default:
			req.ExpiresAt = t
		}
	}
	for _, n := range []struct {
		field, detail string
		v             *float64
		dst           *int
	}{{"digits", digitsDetail, b.Digits, &req.Digits}, {"period", periodDetail, b.Period, &req.Period}} {
		if n.v == nil {
			continue
		}
		if v, ok := whole(*n.v); ok && v != 0 {
			*n.dst = v
		} else {
			refuse(n.field, n.detail)
		}
	}
	if b.Algorithm != nil {
		if *b.Algorithm == "" {
			refuse("algorithm", algorithmDetail)
		}
		req.Algorithm = *b.Algorithm
	}
	return req, unread
}

// createDevice answers a create endpoint of the form source (AddDevice): 201
// with the device.
func (s *Service) createDevice(w http.ResponseWriter, r *http.Request, fields []string, source string) error {
	b, err := decodeBody(r, fields)
	if err != nil {
		return err
	}
	req, unread := addRequest(b, source)
	d, err := s.addDevice(r.Context(), tenant.PrincipalFrom(r.Context()), req, unread)
	if err != nil {
		return err
	}
	w.Header().Set("Location", "/api/devices/"+d.ID)
	httpx.WriteJSON(w, http.StatusCreated, deviceView(d))
	return nil
}

// CreateSharedSecretDeviceHandler answers POST /api/devices: a device with the
// authenticator-app defaults (6 digits, 30 seconds, SHA1). Its body has no
// digits, period or algorithm: given, they are ignored as any unknown field is
// (contract section 4); POST /api/devices/custom chooses them.
func (s *Service) CreateSharedSecretDeviceHandler(w http.ResponseWriter, r *http.Request) error {
	return s.createDevice(w, r, sharedFields, SourceSharedSecret)
}

// CreateCustomDeviceHandler answers POST /api/devices/custom (secret in "secret").
func (s *Service) CreateCustomDeviceHandler(w http.ResponseWriter, r *http.Request) error {
	return s.createDevice(w, r, customFields, SourceCustom)
}

// CreateBase32DeviceHandler answers POST /api/devices/base32-secret-key (secret in
// "base32_secret_key").
func (s *Service) CreateBase32DeviceHandler(w http.ResponseWriter, r *http.Request) error {
	return s.createDevice(w, r, base32Fields, SourceBase32SecretKey)
}

// CreateOtpauthDeviceHandler answers POST /api/devices/otpauth-url. The URL's
// username, issuer, digits, period and algorithm win; the body's fill what the URL
// lacks; a body name replaces the derived one.
func (s *Service) CreateOtpauthDeviceHandler(w http.ResponseWriter, r *http.Request) error {
	return s.createDevice(w, r, otpauthFields, SourceOtpauthURL)
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

// DeleteDeviceHandler answers DELETE /api/devices/{deviceId} (DeleteDevice):
// 204, expired or not.
func (s *Service) DeleteDeviceHandler(w http.ResponseWriter, r *http.Request) error {
	err := s.DeleteDevice(r.Context(), tenant.PrincipalFrom(r.Context()), DeleteDeviceRequest{ID: chi.URLParam(r, "deviceId")})
	if err != nil {
		return err
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
		return 0, problem.Field(minSecondsField, "must be a number of seconds, at least 0")
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
	var fields problem.Fields
	var key []byte
	if b.SharedSecret == nil {
		fields.Add("shared_secret", "is required")
	} else if key, err = DecodeSecret(*b.SharedSecret); err != nil {
		fields.AddCode("shared_secret", "invalid_secret", err.Error())
	}
	for _, f := range []string{"digits", "period", "algorithm"} {
		if b.present[f] {
			fields.AddCode(f, "field_not_allowed", "is not accepted: this endpoint always uses 6 digits, 30 seconds and SHA1")
		}
	}
	if err := fields.Err(); err != nil {
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

// DeviceOTPHandler answers GET /api/devices/{deviceId}/otp (DeviceCode).
func (s *Service) DeviceOTPHandler(w http.ResponseWriter, r *http.Request) error {
	var wait time.Duration
	if raw := r.URL.Query().Get(minSecondsField); raw != "" { // empty is absent, as for every parameter
		v, err := strconv.ParseFloat(strings.TrimSpace(raw), 64)
		if err != nil {
			return problem.Field(minSecondsField, "must be a number of seconds, at least 0")
		}
		if wait, err = parseMinSeconds(v); err != nil {
			return err
		}
	}
	otp, err := s.DeviceCode(r.Context(), tenant.PrincipalFrom(r.Context()), DeviceCodeRequest{ID: chi.URLParam(r, "deviceId"), MinValid: wait})
	if err != nil {
		return err
	}
	writeOTP(w, otp)
	return nil
}
