package web

import (
	"errors"
	"net/http"
	"strings"
	"time"

	"github.com/go-chi/chi/v5"

	"github.com/catchbox/catchbox/internal/tenant"
	"github.com/catchbox/catchbox/internal/totp"
)

type deviceRow struct {
	totp.Device
	Code    string
	Expires time.Time
}

// AuthenticatorsHandler answers GET /authenticators: the organisation's
// devices with their current codes and when each runs out.
func (d *Dashboard) AuthenticatorsHandler(w http.ResponseWriter, r *http.Request) error {
	org := tenant.OrgFrom(r.Context())
	total, devices, err := d.TOTP.List(r.Context(), org.ID, totp.Filter{Limit: 100})
	if err != nil {
		return err
	}
	rows := make([]deviceRow, 0, len(devices))
	for _, dev := range devices {
		otp, err := d.TOTP.DeviceOTP(r.Context(), org.ID, dev.ID, 0)
		if errors.Is(err, totp.ErrExpired) || errors.Is(err, totp.ErrNotFound) {
			continue
		}
		if err != nil {
			return err
		}
		rows = append(rows, deviceRow{Device: dev, Code: otp.Code, Expires: otp.Expires})
	}
	return d.render(w, r, "authenticators", map[string]any{"Title": "Authenticators", "Nav": "authenticators",
		"Devices": rows, "Total": total, "Org": org})
}

// AddAuthenticatorHandler answers POST /authenticators: a device from a
// Base32 secret or an otpauth:// URL, through the API's handlers.
func (d *Dashboard) AddAuthenticatorHandler(w http.ResponseWriter, r *http.Request) error {
	if err := parseForm(w, r); err != nil {
		return err
	}
	f := r.PostForm
	body := map[string]any{}
	for _, k := range []string{"name", "issuer", "username"} {
		if v := strings.TrimSpace(f.Get(k)); v != "" {
			body[k] = v
		}
	}
	var err error
	if u := strings.TrimSpace(f.Get("otpauth_url")); u != "" {
		body["otp_auth_url"] = u
		err = apiCall(r, d.TOTP.CreateOtpauthDeviceHandler, http.MethodPost, "/api/devices/otpauth-url", nil, body, nil)
	} else {
		body["base32_secret_key"] = f.Get("secret")
		err = apiCall(r, d.TOTP.CreateBase32DeviceHandler, http.MethodPost, "/api/devices/base32-secret-key", nil, body, nil)
	}
	if err != nil {
		return err
	}
	return redirect(w, r, "/authenticators", "Authenticator added.")
}

// DeleteAuthenticatorHandler answers POST /authenticators/{deviceId}/delete.
func (d *Dashboard) DeleteAuthenticatorHandler(w http.ResponseWriter, r *http.Request) error {
	err := d.TOTP.Delete(r.Context(), tenant.OrgFrom(r.Context()).ID, chi.URLParam(r, "deviceId"))
	if errors.Is(err, totp.ErrNotFound) {
		return notFound("Authenticator")
	}
	if err != nil {
		return err
	}
	return redirect(w, r, "/authenticators", "Authenticator deleted.")
}
