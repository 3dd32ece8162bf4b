package outbound

import (
	"errors"
	"net/http"
	"strconv"
	"strings"

	"github.com/go-chi/chi/v5"
	"github.com/google/uuid"

	"github.com/catchbox/catchbox/internal/httpx"
	"github.com/catchbox/catchbox/internal/limit"
	"github.com/catchbox/catchbox/internal/tenant"
)

// destinationInput is the body of POST /api/destinations.
type destinationInput struct {
	Email *string `json:"email"`
}

// destinationData is a destination in the API's envelope.
type destinationData struct {
	Data Destination `json:"data"`
}

// CreateDestinationHandler answers POST /api/destinations {email}: 202 with
// the pending destination once its verification mail is queued; 200 with it
// when it is verified already (nothing is sent). 403 destination_limit_reached
// past MaxDestinations; 429 verification_rate_limited past
// MaxVerificationMailsPerHour, with Retry-After.
func (s *Service) CreateDestinationHandler(w http.ResponseWriter, r *http.Request) error {
	var in destinationInput
	if err := httpx.DecodeJSON(r, &in); err != nil {
		return err
	}
	var c checker
	var addr Address
	if in.Email == nil {
		c.fail("email", "is required")
	} else if a, ok := c.mailbox("email", *in.Email); ok {
		if a.Name != "" || strings.Contains(*in.Email, "<") {
			c.fail("email", "must be a bare address, without a display name")
		}
		addr = a
	}
	if err := c.fields.Err(); err != nil {
		return err
	}
	org := tenant.OrgFrom(r.Context())
	d, queued, err := s.Store.RequestDestination(r.Context(), s.Jobs, org.ID, addr.Email)
	var rate *VerificationRateError
	switch {
	case errors.Is(err, ErrDestinationLimit):
		return httpx.Errorf(http.StatusForbidden, "destination_limit_reached",
			"the organisation has %d destinations, the most it may have; remove one first", MaxDestinations)
	case errors.As(err, &rate):
		w.Header().Set("Retry-After", strconv.Itoa(limit.RetryAfter(rate.RetryAt.Sub(s.Store.now()))))
		return httpx.Errorf(http.StatusTooManyRequests, "verification_rate_limited",
			"the organisation has sent %d verification mails in the last hour, the most it may", MaxVerificationMailsPerHour)
	case err != nil:
		return err
	}
	status := http.StatusOK
	if queued {
		status = http.StatusAccepted
	}
	httpx.WriteJSON(w, status, destinationData{d})
	return nil
}

// ListDestinationsHandler answers GET /api/destinations: the organisation's
// destinations, verified and pending, oldest first.
func (s *Service) ListDestinationsHandler(w http.ResponseWriter, r *http.Request) error {
	ds, err := s.Store.Destinations(r.Context(), tenant.OrgFrom(r.Context()).ID)
	if err != nil {
		return err
	}
	httpx.WriteJSON(w, http.StatusOK, struct {
		Data []Destination `json:"data"`
	}{nonNil(ds)})
	return nil
}

// DeleteDestinationHandler answers DELETE /api/destinations/{destinationId}:
// 204; 404 for another organisation's or none.
func (s *Service) DeleteDestinationHandler(w http.ResponseWriter, r *http.Request) error {
	id := chi.URLParam(r, "destinationId")
	if _, err := uuid.Parse(id); err != nil {
		return httpx.NotFound("destination")
	}
	err := s.Store.RemoveDestination(r.Context(), tenant.OrgFrom(r.Context()).ID, id)
	if errors.Is(err, ErrNotFound) {
		return httpx.NotFound("destination")
	}
	if err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// VerifyDestinationHandler answers GET /verify/destinations/{destinationId}
// with a verification link's expires and signature (no API key: the
// signature is the credential): the destination becomes verified, 200 with
// it. A tampered or expired link, or one of a removed destination, is 404
// link_invalid.
func (s *Service) VerifyDestinationHandler(w http.ResponseWriter, r *http.Request) error {
	id := chi.URLParam(r, "destinationId")
	q := r.URL.Query()
	invalid := httpx.Errorf(http.StatusNotFound, "link_invalid",
		"this verification link is invalid or has expired; ask for the destination again to receive a new one")
	if _, err := uuid.Parse(id); err != nil || !s.Verifier.CheckLink(id, q.Get("expires"), q.Get("signature")) {
		return invalid
	}
	d, err := s.Store.VerifyDestination(r.Context(), id)
	if errors.Is(err, ErrNotFound) {
		return invalid
	}
	if err != nil {
		return err
	}
	httpx.WriteJSON(w, http.StatusOK, destinationData{d})
	return nil
}
