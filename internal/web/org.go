package web

import (
	"net/http"

	"github.com/go-chi/chi/v5"

	"github.com/catchbox/catchbox/internal/tenant"
)

// OrganisationHandler answers GET /organisation: API keys, members and this
// month's outbound usage; and, once, the key just created (CreateKeyHandler).
func (d *Dashboard) OrganisationHandler(w http.ResponseWriter, r *http.Request) error {
	org := tenant.OrgFrom(r.Context())
	keys, err := d.Tenants.ListKeys(r.Context(), org.ID, true)
	if err != nil {
		return err
	}
	members, err := d.Tenants.Members(r.Context(), org.ID)
	if err != nil {
		return err
	}
	usage, err := d.Outbound.Store.MonthlyUsage(r.Context(), org.ID, d.now())
	if err != nil {
		return err
	}
	n := noteFrom(r.Context())
	return d.render(w, r, "organisation", map[string]any{"Title": "Organisation " + org.Name, "Nav": "organisation", "Org": org,
		"Keys": keys, "Members": members, "Usage": usage, "NewKey": n.Key, "NewKeyID": n.KeyID})
}

// CreateKeyHandler answers POST /organisation/keys: a new API key
// (tenant.CreateKeyFor), then a redirect to the organisation page, which
// shows it this once (a one-shot note bound to the session; never put in a
// URL, where history would keep it). A reload of that page creates nothing
// and no longer shows the key.
func (d *Dashboard) CreateKeyHandler(w http.ResponseWriter, r *http.Request) error {
	if err := parseForm(w, r); err != nil {
		return err
	}
	k, err := d.Tenants.CreateKeyFor(r.Context(), tenant.PrincipalFrom(r.Context()), tenant.CreateKeyRequest{Label: r.PostForm.Get("label")})
	if err != nil {
		return err
	}
	d.setNote(w, r, note{Key: k.Key, KeyID: k.ID})
	http.Redirect(w, r, "/organisation", http.StatusSeeOther)
	return nil
}

// RevokeKeyHandler answers POST /organisation/keys/{keyId}/revoke
// (tenant.RevokeKeyFor).
func (d *Dashboard) RevokeKeyHandler(w http.ResponseWriter, r *http.Request) error {
	_, err := d.Tenants.RevokeKeyFor(r.Context(), tenant.PrincipalFrom(r.Context()), tenant.RevokeKeyRequest{ID: chi.URLParam(r, "keyId")})
	if err != nil {
		return err
	}
	return redirect(w, r, "/organisation", "API key revoked: requests with it are refused from now on.")
}
