package client

import (
	"context"
	"net/http"
	"net/url"
	"strconv"
	"time"
)

// Device is a saved virtual authenticator (TOTP, RFC 6238). Its secret is
// never returned.
type Device struct {
	ID             string     `json:"id"`
	OrganisationID string     `json:"organisation_id"`
	Name           string     `json:"name"`
	Username       *string    `json:"username"`
	Issuer         *string    `json:"issuer"`
	Digits         int        `json:"digits"`
	Period         int        `json:"period"`    // seconds
	Algorithm      string     `json:"algorithm"` // SHA1, SHA256 or SHA512
	Source         string     `json:"source"`    // shared_secret, custom, base32_secret_key or otpauth_url
	ExpiresAt      *time.Time `json:"expires_at"`
	CreatedAt      time.Time  `json:"created_at"`
	UpdatedAt      time.Time  `json:"updated_at"`
}

// DeviceQuery lists devices. Zero fields are left out (100 devices from the
// newest).
type DeviceQuery struct {
	Limit    int    // 1 to 100
	Offset   int    //
	Username string // contains this (case-insensitive)
	Issuer   string // contains this (case-insensitive)
}

// DevicePage is one page of active devices.
type DevicePage struct {
	TotalCount int            `json:"total_count"`
	Options    map[string]any `json:"options"`
	Items      []Device       `json:"items"`
}

// NewDevice saves a device from a shared secret: 6 digits, 30 seconds, SHA1.
type NewDevice struct {
	SharedSecret string    // Base32
	Name         string    //
	Username     string    //
	Issuer       string    //
	ExpiresAt    time.Time // zero: never
}

// CustomDevice saves a device with chosen parameters; zero ones take the
// defaults (6 digits, 30 seconds, SHA1).
type CustomDevice struct {
	Secret    string    // Base32
	Name      string    //
	Username  string    //
	Issuer    string    //
	Digits    int       // 6 or 8
	Period    int       // seconds, 10 to 300
	Algorithm string    // SHA1, SHA256 or SHA512
	ExpiresAt time.Time // zero: never
}

// OTPAuthDevice saves a device from an otpauth://totp/ URL, whose values win
// over the fields set here.
type OTPAuthDevice struct {
	URL       string
	Name      string
	Username  string
	Issuer    string
	Digits    int
	Period    int
	Algorithm string
	ExpiresAt time.Time
}

// OTP is a one-time password and the end of the period it is valid in.
type OTP struct {
	Code    string    `json:"code"`
	Expires time.Time `json:"expires"`
}

// Devices lists the organisation's active devices (GET /api/devices).
func (c *Client) Devices(ctx context.Context, q DeviceQuery) (DevicePage, error) {
	v := url.Values{}
	setInt(v, "limit", q.Limit)
	setInt(v, "offset", q.Offset)
	setString(v, "username", q.Username)
	setString(v, "issuer", q.Issuer)
	var out DevicePage
	err := c.do(ctx, request{method: http.MethodGet, path: "/api/devices", query: v}, &out)
	return out, err
}

// Device returns one device, expired ones included (GET /api/devices/{deviceId}).
func (c *Client) Device(ctx context.Context, id string) (Device, error) {
	var out Device
	err := c.do(ctx, request{method: http.MethodGet, path: "/api/devices/" + seg(id)}, &out)
	return out, err
}

// CreateDevice saves a device from a shared secret (POST /api/devices).
func (c *Client) CreateDevice(ctx context.Context, d NewDevice) (Device, error) {
	body := map[string]any{"shared_secret": d.SharedSecret}
	optional(body, "name", d.Name)
	optional(body, "username", d.Username)
	optional(body, "issuer", d.Issuer)
	expiry(body, d.ExpiresAt)
	return c.createDevice(ctx, "/api/devices", body)
}

// CreateCustomDevice saves a device with chosen digits, period and algorithm
// (POST /api/devices/custom).
func (c *Client) CreateCustomDevice(ctx context.Context, d CustomDevice) (Device, error) {
	return c.createDevice(ctx, "/api/devices/custom", d.body("secret"))
}

// CreateBase32Device does what CreateCustomDevice does through POST
// /api/devices/base32-secret-key, whose secret field is base32_secret_key.
func (c *Client) CreateBase32Device(ctx context.Context, d CustomDevice) (Device, error) {
	return c.createDevice(ctx, "/api/devices/base32-secret-key", d.body("base32_secret_key"))
}

// CreateOTPAuthDevice saves a device from an otpauth:// URL (POST
// /api/devices/otpauth-url).
func (c *Client) CreateOTPAuthDevice(ctx context.Context, d OTPAuthDevice) (Device, error) {
	cd := CustomDevice{Secret: d.URL, Name: d.Name, Username: d.Username, Issuer: d.Issuer, Digits: d.Digits,
		Period: d.Period, Algorithm: d.Algorithm, ExpiresAt: d.ExpiresAt}
	return c.createDevice(ctx, "/api/devices/otpauth-url", cd.body("otp_auth_url"))
}

func (d CustomDevice) body(secretField string) map[string]any {
	body := map[string]any{secretField: d.Secret}
	optional(body, "name", d.Name)
	optional(body, "username", d.Username)
	optional(body, "issuer", d.Issuer)
	optional(body, "algorithm", d.Algorithm)
	if d.Digits != 0 {
		body["digits"] = d.Digits
	}
	if d.Period != 0 {
		body["period"] = d.Period
	}
	expiry(body, d.ExpiresAt)
	return body
}

func (c *Client) createDevice(ctx context.Context, path string, body map[string]any) (Device, error) {
	var out Device
	err := c.do(ctx, request{method: http.MethodPost, path: path, body: body}, &out)
	return out, err
}

// DeleteDevice deletes a device (DELETE /api/devices/{deviceId}).
func (c *Client) DeleteDevice(ctx context.Context, id string) error {
	return c.do(ctx, request{method: http.MethodDelete, path: "/api/devices/" + seg(id)}, nil)
}

// OTP returns a saved device's current one-time password (GET
// /api/devices/{deviceId}/otp). An expired device is an *Error with code
// "device_expired".
func (c *Client) OTP(ctx context.Context, deviceID string) (OTP, error) {
	return c.OTPValidFor(ctx, deviceID, 0)
}

// OTPValidFor returns a saved device's one-time password that stays valid for
// at least minValid (whole seconds, less than the device's period): when the
// current one would not, the server waits for the next period.
func (c *Client) OTPValidFor(ctx context.Context, deviceID string, minValid time.Duration) (OTP, error) {
	v := url.Values{}
	if s := int(minValid / time.Second); s > 0 {
		v.Set("min_seconds_until_expire", strconv.Itoa(s))
	}
	var out OTP
	err := c.do(ctx, request{method: http.MethodGet, path: "/api/devices/" + seg(deviceID) + "/otp", query: v}, &out)
	return out, err
}

// SecretOTP returns the current one-time password of a Base32 shared secret
// (6 digits, 30 seconds, SHA1) without saving anything (POST /api/devices/otp),
// valid for at least minValid (less than 30 seconds).
func (c *Client) SecretOTP(ctx context.Context, sharedSecret string, minValid time.Duration) (OTP, error) {
	body := map[string]any{"shared_secret": sharedSecret}
	if s := int(minValid / time.Second); s > 0 {
		body["min_seconds_until_expire"] = s
	}
	var out OTP
	err := c.do(ctx, request{method: http.MethodPost, path: "/api/devices/otp", body: body}, &out)
	return out, err
}

func optional(m map[string]any, key, v string) {
	if v != "" {
		m[key] = v
	}
}

func expiry(m map[string]any, t time.Time) {
	if !t.IsZero() {
		m["expires_at"] = t.UTC().Format(time.RFC3339Nano)
	}
}
