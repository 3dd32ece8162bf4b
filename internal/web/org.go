package web

import (
	"errors"
	"net/http"
	"strings"

	"github.com/go-chi/chi/v5"

	"github.com/catchbox/catchbox/internal/tenant"
)

// maxKeyLabel bounds an API key's label.
const maxKeyLabel = 200

func (d *Dashboard) orgPage(w http.ResponseWriter, r *http.Request, newKey, newKeyID string) error {
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
	return d.render(w, r, "organisation", map[string]any{"Title": org.Name, "Nav": "organisation", "Org": org,
		"Keys": keys, "Members": members, "Usage": usage, "NewKey": newKey, "NewKeyID": newKeyID})
}

// OrganisationHandler answers GET /organisation: API keys, members and this
// month's outbound usage.
func (d *Dashboard) OrganisationHandler(w http.ResponseWriter, r *http.Request) error {
	return d.orgPage(w, r, "", "")
}

// CreateKeyHandler answers POST /organisation/keys: a new API key, shown on
// the page this once (never put in a URL, where history would keep it).
func (d *Dashboard) CreateKeyHandler(w http.ResponseWriter, r *http.Request) error {
	if err := parseForm(w, r); err != nil {
		return err
	}
	label := strings.TrimSpace(r.PostForm.Get("label"))
	if len(label) > maxKeyLabel {
		return badRequest("label must be at most %d characters.", maxKeyLabel)
	}
	id, key, err := d.Tenants.CreateKey(r.Context(), tenant.OrgFrom(r.Context()).ID, label, "")
	if err != nil {
		return err
	}
	w.WriteHeader(http.StatusCreated)
	return d.orgPage(w, r, key, id)
}

// RevokeKeyHandler answers POST /organisation/keys/{keyId}/revoke.
func (d *Dashboard) RevokeKeyHandler(w http.ResponseWriter, r *http.Request) error {
	err := d.Tenants.RevokeOrgKey(r.Context(), tenant.OrgFrom(r.Context()).ID, chi.URLParam(r, "keyId"))
	if errors.Is(err, tenant.ErrNotFound) {
		return notFound("API key")
	}
	if err != nil {
		return err
	}
	return redirect(w, r, "/organisation", "API key revoked: requests with it are refused from now on.")
}
