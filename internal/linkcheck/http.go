package linkcheck

import (
	"net/http"

	"github.com/go-chi/chi/v5"

	"github.com/catchbox/catchbox/internal/httpx"
	"github.com/catchbox/catchbox/internal/tenant"
)

// Response is the API's link check: the bare object, as the deliverability
// report is (contract section 5, "Email checks").
type Response struct {
	Status     string  `json:"status"`
	StartedAt  string  `json:"started_at"`
	FinishedAt *string `json:"finished_at,omitempty"`
	Links      []Link  `json:"links"`
	// Error says why a failed run failed; left out otherwise.
	Error string `json:"error,omitempty"`
}

// NewResponse is the API's form of a result.
func NewResponse(r Result) Response {
	out := Response{Status: r.Status, StartedAt: httpx.Time(r.StartedAt), Links: r.Links, Error: r.Error}
	if !r.FinishedAt.IsZero() {
		f := httpx.Time(r.FinishedAt)
		out.FinishedAt = &f
	}
	if out.Links == nil {
		out.Links = []Link{}
	}
	return out
}

// RequestHandler answers POST /api/emails/{emailId}/link-check: 202 with the
// pending run when one starts (none yet, or the last one ended: the check is
// made again), 200 with the run as it stands when one is under way.
func (s *Service) RequestHandler(w http.ResponseWriter, r *http.Request) error {
	res, started, err := s.Request(r.Context(), tenant.PrincipalFrom(r.Context()), chi.URLParam(r, "emailId"))
	if err != nil {
		return err
	}
	status := http.StatusOK
	if started {
		status = http.StatusAccepted
		w.Header().Set("Location", r.URL.Path)
	}
	httpx.WriteJSON(w, status, NewResponse(res))
	return nil
}

// GetHandler answers GET /api/emails/{emailId}/link-check: the check as it
// stands (links once completed), or 404 link_check_not_found when none was
// started or it has expired.
func (s *Service) GetHandler(w http.ResponseWriter, r *http.Request) error {
	res, err := s.Get(r.Context(), tenant.PrincipalFrom(r.Context()), chi.URLParam(r, "emailId"))
	if err != nil {
		return err
	}
	httpx.WriteJSON(w, http.StatusOK, NewResponse(res))
	return nil
}
