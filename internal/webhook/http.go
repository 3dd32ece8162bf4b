package webhook

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"slices"
	"strings"

	"github.com/go-chi/chi/v5"

	"github.com/catchbox/catchbox/internal/egress"
	"github.com/catchbox/catchbox/internal/httpx"
	"github.com/catchbox/catchbox/internal/tenant"
)

// Limits of what a client sends.
const (
	MaxURLBytes         = 2048
	MaxDescriptionBytes = 500
	maxDeliveriesLimit  = 100
	defaultDeliveries   = 20
)

// EndpointJSON is an endpoint as the API writes it (View).
type EndpointJSON struct {
	Endpoint
	Secret                  string `json:"secret,omitempty"`
	PreviousSecretExpiresAt string `json:"previous_secret_expires_at,omitempty"`
	FailingSince            string `json:"failing_since,omitempty"`
	CreatedAt               string `json:"created_at"`
	UpdatedAt               string `json:"updated_at"`
}

// View is the endpoint as the API and the admin command write it; its secret
// only when withSecret (on creation and rotation).
func View(e Endpoint, withSecret bool) EndpointJSON {
	v := EndpointJSON{Endpoint: e, CreatedAt: httpx.Time(e.CreatedAt), UpdatedAt: httpx.Time(e.UpdatedAt)}
	if withSecret {
		v.Secret = e.Secret
	}
	if !e.PreviousSecretUntil.IsZero() {
		v.PreviousSecretExpiresAt = httpx.Time(e.PreviousSecretUntil)
	}
	if !e.FailingSince.IsZero() {
		v.FailingSince = httpx.Time(e.FailingSince)
	}
	return v
}

// Input is the body of create and update.
type Input struct {
	URL         *string   `json:"url"`
	EventTypes  *[]string `json:"event_types"`
	Namespace   *string   `json:"namespace"`
	Description *string   `json:"description"`
	Enabled     *bool     `json:"enabled"`
}

// Check validates a request's fields into a Spec, naming every bad field;
// creating requires url. The namespace, when named, must be visible to the
// organisation.
func (s *Service) Check(ctx context.Context, orgID string, in Input, creating bool) (Spec, error) {
	var f httpx.Fields
	var spec Spec
	switch {
	case in.URL == nil && creating:
		f.Add("url", "is required")
	case in.URL != nil:
		u, err := s.checkURL(ctx, strings.TrimSpace(*in.URL))
		if err != nil {
			code := ""
			if egress.Refused(err) != nil {
				code = "webhook_url_private"
			}
			f = append(f, httpx.FieldError{Field: "url", Detail: err.Error(), Code: code})
		}
		spec.URL = &u
	}
	if in.EventTypes != nil {
		types, detail := checkTypes(*in.EventTypes)
		if detail != "" {
			f.Add("event_types", detail)
		}
		spec.EventTypes = types
	}
	if in.Namespace != nil {
		ns := strings.ToLower(strings.TrimSpace(*in.Namespace))
		if ns != "" && s.tenants != nil {
			if _, err := s.tenants.VisibleNamespace(ctx, orgID, ns); err != nil {
				if !errors.Is(err, tenant.ErrNotFound) {
					return Spec{}, err
				}
				f.Add("namespace", "is not a namespace of the organisation")
			}
		}
		spec.Namespace = &ns
	}
	if in.Description != nil {
		if len(*in.Description) > MaxDescriptionBytes {
			f.Add("description", "must be at most 500 bytes")
		}
		spec.Description = in.Description
	}
	spec.Enabled = in.Enabled
	if err := f.Err(); err != nil {
		return Spec{}, err
	}
	return spec, nil
}

// checkURL returns the URL as stored, or what is wrong with it: it must be
// an absolute http or https URL without credentials or fragment, at most
// MaxURLBytes, and pass the outgoing-fetch rule (egress.Guard.CheckURL: unless
// private targets are allowed, its host must be public and resolve to public
// addresses only; an IPv4 address in an older spelling is stored as four
// decimal numbers). Every connection is checked again.
func (s *Service) checkURL(ctx context.Context, raw string) (string, error) {
	if raw == "" {
		return "", errors.New("is required")
	}
	if len(raw) > MaxURLBytes {
		return "", errors.New("must be at most 2048 bytes")
	}
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.Opaque != "" {
		return "", errors.New("must be an absolute http or https URL")
	}
	if u.User != nil {
		return "", errors.New("must not carry a user name or password")
	}
	if u.Fragment != "" {
		return "", errors.New("must not have a fragment")
	}
	if err := s.guard.CheckURL(ctx, u); err != nil {
		return "", err
	}
	return u.String(), nil
}

func checkTypes(types []string) ([]string, string) {
	if len(types) == 0 {
		return nil, "must name at least one event type"
	}
	var out []string
	for _, t := range types {
		if !slices.Contains(EventTypes, t) {
			return nil, "must be among " + strings.Join(EventTypes, ", ") + ` (got "` + t + `")`
		}
		if !slices.Contains(out, t) {
			out = append(out, t)
		}
	}
	return out, ""
}

// errorOf turns the package's errors into the contract's.
func errorOf(err error) error {
	switch {
	case errors.Is(err, ErrNotFound):
		return httpx.NotFound("webhook endpoint")
	case errors.Is(err, ErrLimitReached):
		return httpx.Errorf(http.StatusForbidden, "webhook_limit_reached", "%s", err.Error())
	}
	return err
}

// CreateHandler answers POST /api/webhooks: 201 with the endpoint and its
// secret, shown this once.
func (s *Service) CreateHandler(w http.ResponseWriter, r *http.Request) error {
	var in Input
	if err := httpx.DecodeJSON(r, &in); err != nil {
		return err
	}
	org := tenant.OrgFrom(r.Context())
	spec, err := s.Check(r.Context(), org.ID, in, true)
	if err != nil {
		return err
	}
	e, err := s.Create(r.Context(), org.ID, spec)
	if err != nil {
		return errorOf(err)
	}
	w.Header().Set("Location", "/api/webhooks/"+e.ID)
	httpx.WriteJSON(w, http.StatusCreated, map[string]any{"data": View(e, true)})
	return nil
}

// ListHandler answers GET /api/webhooks.
func (s *Service) ListHandler(w http.ResponseWriter, r *http.Request) error {
	eps, err := s.List(r.Context(), tenant.OrgFrom(r.Context()).ID)
	if err != nil {
		return err
	}
	out := make([]EndpointJSON, len(eps))
	for i, e := range eps {
		out[i] = View(e, false)
	}
	httpx.WriteJSON(w, http.StatusOK, map[string]any{"data": out})
	return nil
}

// endpoint returns the request's endpoint ({webhookId}) if the key's
// organisation owns it.
func (s *Service) endpoint(r *http.Request) (Endpoint, error) {
	e, err := s.Get(r.Context(), tenant.OrgFrom(r.Context()).ID, chi.URLParam(r, "webhookId"))
	return e, errorOf(err)
}

// GetHandler answers GET /api/webhooks/{webhookId}.
func (s *Service) GetHandler(w http.ResponseWriter, r *http.Request) error {
	e, err := s.endpoint(r)
	if err != nil {
		return err
	}
	httpx.WriteJSON(w, http.StatusOK, map[string]any{"data": View(e, false)})
	return nil
}

// UpdateHandler answers PATCH /api/webhooks/{webhookId}: the fields given
// change, the others stay.
func (s *Service) UpdateHandler(w http.ResponseWriter, r *http.Request) error {
	var in Input
	if err := httpx.DecodeJSON(r, &in); err != nil {
		return err
	}
	e, err := s.endpoint(r)
	if err != nil {
		return err
	}
	spec, err := s.Check(r.Context(), e.OrgID, in, false)
	if err != nil {
		return err
	}
	if e, err = s.Update(r.Context(), e.OrgID, e.ID, spec); err != nil {
		return errorOf(err)
	}
	httpx.WriteJSON(w, http.StatusOK, map[string]any{"data": View(e, false)})
	return nil
}

// DeleteHandler answers DELETE /api/webhooks/{webhookId}: 204.
func (s *Service) DeleteHandler(w http.ResponseWriter, r *http.Request) error {
	e, err := s.endpoint(r)
	if err != nil {
		return err
	}
	if err := s.Delete(r.Context(), e.OrgID, e.ID); err != nil {
		return errorOf(err)
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// RotateSecretHandler answers POST /api/webhooks/{webhookId}/rotate-secret:
// 200 with the endpoint and its new secret, shown this once.
func (s *Service) RotateSecretHandler(w http.ResponseWriter, r *http.Request) error {
	e, err := s.endpoint(r)
	if err != nil {
		return err
	}
	if e, err = s.RotateSecret(r.Context(), e.OrgID, e.ID); err != nil {
		return errorOf(err)
	}
	httpx.WriteJSON(w, http.StatusOK, map[string]any{"data": View(e, true)})
	return nil
}

// DeliveriesHandler answers GET /api/webhooks/{webhookId}/deliveries: the
// delivery log, newest first (limit 1 to 100, default 20; state; before, the
// id of the last delivery of the previous page).
func (s *Service) DeliveriesHandler(w http.ResponseWriter, r *http.Request) error {
	q := httpx.NewQuery(r)
	f := DeliveryFilter{Limit: int(q.Int("limit", defaultDeliveries, 1, maxDeliveriesLimit))}
	f.State, _ = q.String("state", 20)
	f.Before, _ = q.String("before", 64)
	if err := q.Err(); err != nil {
		return err
	}
	if f.State != "" && f.State != "pending" && f.State != "delivered" && f.State != "dead" {
		return httpx.Invalid("state", "must be pending, delivered or dead")
	}
	e, err := s.endpoint(r)
	if err != nil {
		return err
	}
	ds, err := s.Deliveries(r.Context(), e.ID, f)
	if err != nil {
		return err
	}
	httpx.WriteJSON(w, http.StatusOK, map[string]any{"data": ds})
	return nil
}

// RedeliverHandler answers POST
// /api/webhooks/{webhookId}/deliveries/{deliveryId}/redeliver: 202 with the
// delivery, pending again.
func (s *Service) RedeliverHandler(w http.ResponseWriter, r *http.Request) error {
	e, err := s.endpoint(r)
	if err != nil {
		return err
	}
	id := chi.URLParam(r, "deliveryId")
	if err := s.Redeliver(r.Context(), e.ID, id); errors.Is(err, ErrNotFound) {
		return httpx.NotFound("delivery")
	} else if err != nil {
		return err
	}
	return s.writeDelivery(w, r, e.ID, id)
}

// TestHandler answers POST /api/webhooks/{webhookId}/test: a webhook.test
// event for this endpoint alone, 202 with its delivery. A disabled endpoint
// is 409 webhook_disabled.
func (s *Service) TestHandler(w http.ResponseWriter, r *http.Request) error {
	e, err := s.endpoint(r)
	if err != nil {
		return err
	}
	if !e.Enabled {
		return httpx.Errorf(http.StatusConflict, "webhook_disabled", "the endpoint is disabled: enable it first")
	}
	id, err := s.SendTest(r.Context(), e)
	if err != nil {
		return err
	}
	return s.writeDelivery(w, r, e.ID, id)
}

func (s *Service) writeDelivery(w http.ResponseWriter, r *http.Request, endpointID, id string) error {
	d, err := s.Delivery(r.Context(), endpointID, id)
	if err != nil {
		return errorOf(err)
	}
	w.Header().Set("Location", "/api/webhooks/"+endpointID+"/deliveries?limit=1")
	httpx.WriteJSON(w, http.StatusAccepted, map[string]any{"data": d})
	return nil
}
