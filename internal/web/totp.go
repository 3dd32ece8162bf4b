package web

import (
	"errors"
	"net/http"
	"strings"
	"time"

	"github.com/go-chi/chi/v5"

	"github.com/catchbox/catchbox/internal/problem"
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
	p := tenant.PrincipalFrom(r.Context())
	org := p.Org
	total, devices, err := d.TOTP.List(r.Context(), org.ID, totp.Filter{Limit: 100})
	if err != nil {
		return err
	}
	rows := make([]deviceRow, 0, len(devices))
	for _, dev := range devices {
		otp, err := d.TOTP.DeviceCode(r.Context(), p, totp.DeviceCodeRequest{ID: dev.ID})
		var pe *problem.Error
		if errors.As(err, &pe) && (pe.Kind == problem.Gone || pe.Kind == problem.NotFound) {
			continue // expired or deleted since the list was read
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
// Base32 secret, an otpauth:// URL, or the otpauth:// URL in an uploaded QR
// image (totp.AddDevice, as the API's base32-secret-key and otpauth-url
// forms).
func (d *Dashboard) AddAuthenticatorHandler(w http.ResponseWriter, r *http.Request) error {
	if err := parseAuthenticatorForm(w, r); err != nil {
		return err
	}
	scanned, err := uploadedQR(r)
	if err != nil {
		return err
	}
	f := r.PostForm
	req := totp.AddDeviceRequest{Name: f.Get("name"), Issuer: f.Get("issuer"), Username: f.Get("username")}
	if u := strings.TrimSpace(f.Get("otpauth_url")); scanned != "" || u != "" {
		req.Source, req.OtpauthURL = totp.SourceOtpauthURL, u
		if scanned != "" {
			req.OtpauthURL = scanned
		}
	} else {
		req.Source, req.Secret = totp.SourceBase32SecretKey, f.Get("secret")
	}
	if _, err := d.TOTP.AddDevice(r.Context(), tenant.PrincipalFrom(r.Context()), req); err != nil {
		return err
	}
	return redirect(w, r, "/authenticators", "Authenticator added.")
}

// DeleteAuthenticatorHandler answers POST /authenticators/{deviceId}/delete
// (totp.DeleteDevice).
func (d *Dashboard) DeleteAuthenticatorHandler(w http.ResponseWriter, r *http.Request) error {
	err := d.TOTP.DeleteDevice(r.Context(), tenant.PrincipalFrom(r.Context()), totp.DeleteDeviceRequest{ID: chi.URLParam(r, "deviceId")})
	var pe *problem.Error
	if errors.As(err, &pe) && pe.Kind == problem.NotFound {
		return notFound("Authenticator")
	}
	if err != nil {
		return err
	}
	return redirect(w, r, "/authenticators", "Authenticator deleted.")
}
