package outbound

import (
	"net/http"

	"github.com/go-chi/chi/v5"

	"github.com/catchbox/catchbox/internal/httpx"
	"github.com/catchbox/catchbox/internal/outbound/destinations"
	"github.com/catchbox/catchbox/internal/tenant"
)

// destinationData is a destination in the API's envelope.
type destinationData struct {
	Data destinations.Destination `json:"data"`
}

// CreateDestinationHandler answers POST /api/destinations {email}:
// AddDestination, 202 with the pending destination once its verification mail
// is queued; 200 with it when it is verified already (nothing is sent). 403
// destination_limit_reached past destinations.MaxDestinations; 429
// verification_rate_limited past destinations.MaxVerificationMailsPerHour,
// with Retry-After.
func (s *Service) CreateDestinationHandler(w http.ResponseWriter, r *http.Request) error {
	var req AddDestinationRequest
	if err := httpx.DecodeJSON(r, &req); err != nil {
		return err
	}
	added, err := s.AddDestination(r.Context(), tenant.PrincipalFrom(r.Context()), req)
	if err != nil {
		return err
	}
	status := http.StatusOK
	if added.Queued {
		status = http.StatusAccepted
	}
	httpx.WriteJSON(w, status, destinationData{added.Destination})
	return nil
}

// ListDestinationsHandler answers GET /api/destinations: the organisation's
// destinations, verified and pending, oldest first.
func (s *Service) ListDestinationsHandler(w http.ResponseWriter, r *http.Request) error {
	ds, err := s.Destinations.List(r.Context(), tenant.OrgFrom(r.Context()).ID)
	if err != nil {
		return err
	}
	httpx.WriteJSON(w, http.StatusOK, struct {
		Data []destinations.Destination `json:"data"`
	}{nonNil(ds)})
	return nil
}

// DeleteDestinationHandler answers DELETE /api/destinations/{destinationId}:
// RemoveDestination, 204; 404 for another organisation's or none.
func (s *Service) DeleteDestinationHandler(w http.ResponseWriter, r *http.Request) error {
	req := RemoveDestinationRequest{ID: chi.URLParam(r, "destinationId")}
	if err := s.RemoveDestination(r.Context(), tenant.PrincipalFrom(r.Context()), req); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// VerifyDestinationHandler answers GET /verify/destinations/{destinationId}
// with a verification link's expires and signature (no API key: the
// signature is the credential): VerifyDestination, 200 with the destination.
// A tampered or expired link, or one of a removed destination, is 404
// link_invalid.
func (s *Service) VerifyDestinationHandler(w http.ResponseWriter, r *http.Request) error {
	q := r.URL.Query()
	d, err := s.VerifyDestination(r.Context(), VerifyDestinationRequest{ID: chi.URLParam(r, "destinationId"),
		Expires: q.Get("expires"), Signature: q.Get("signature")})
	if err != nil {
		return err
	}
	httpx.WriteJSON(w, http.StatusOK, destinationData{d})
	return nil
}
