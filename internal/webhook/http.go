package webhook

import (
	"errors"
	"net/http"

	"github.com/go-chi/chi/v5"

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

// CreateHandler answers POST /api/webhooks (CreateEndpoint): 201 with the
// endpoint and its secret, shown this once.
func (s *Service) CreateHandler(w http.ResponseWriter, r *http.Request) error {
	var in Input
	if err := httpx.DecodeJSON(r, &in); err != nil {
		return err
	}
	e, err := s.CreateEndpoint(r.Context(), tenant.PrincipalFrom(r.Context()), in)
	if err != nil {
		return err
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
	return s.ownEndpoint(r.Context(), tenant.PrincipalFrom(r.Context()), chi.URLParam(r, "webhookId"))
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

// UpdateHandler answers PATCH /api/webhooks/{webhookId} (UpdateEndpoint):
// the fields given change, the others stay.
func (s *Service) UpdateHandler(w http.ResponseWriter, r *http.Request) error {
	var in Input
	if err := httpx.DecodeJSON(r, &in); err != nil {
		return err
	}
	e, err := s.UpdateEndpoint(r.Context(), tenant.PrincipalFrom(r.Context()), UpdateRequest{ID: chi.URLParam(r, "webhookId"), Input: in})
	if err != nil {
		return err
	}
	httpx.WriteJSON(w, http.StatusOK, map[string]any{"data": View(e, false)})
	return nil
}

// DeleteHandler answers DELETE /api/webhooks/{webhookId} (DeleteEndpoint): 204.
func (s *Service) DeleteHandler(w http.ResponseWriter, r *http.Request) error {
	if err := s.DeleteEndpoint(r.Context(), tenant.PrincipalFrom(r.Context()), EndpointRequest{ID: chi.URLParam(r, "webhookId")}); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// RotateSecretHandler answers POST /api/webhooks/{webhookId}/rotate-secret
// (RotateEndpointSecret): 200 with the endpoint and its new secret, shown
// this once.
func (s *Service) RotateSecretHandler(w http.ResponseWriter, r *http.Request) error {
	e, err := s.RotateEndpointSecret(r.Context(), tenant.PrincipalFrom(r.Context()), EndpointRequest{ID: chi.URLParam(r, "webhookId")})
	if err != nil {
		return err
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
		return problemOf(err)
	}
	w.Header().Set("Location", "/api/webhooks/"+endpointID+"/deliveries?limit=1")
	httpx.WriteJSON(w, http.StatusAccepted, map[string]any{"data": d})
	return nil
}
