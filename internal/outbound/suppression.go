package outbound

import (
	"net/http"
	"net/url"

	"github.com/go-chi/chi/v5"

	"github.com/catchbox/catchbox/internal/httpx"
	"github.com/catchbox/catchbox/internal/outbound/outstore"
	"github.com/catchbox/catchbox/internal/problem"
	"github.com/catchbox/catchbox/internal/tenant"
)

// suppressionList is the answer of GET /api/suppressions.
type suppressionList struct {
	TotalCount int                    `json:"total_count"`
	Options    pageOptions            `json:"options"`
	Data       []outstore.Suppression `json:"data"`
}

// pageOptions echo the applied paging.
type pageOptions struct {
	Limit  int `json:"limit"`
	Offset int `json:"offset"`
}

// ListSuppressionsHandler answers GET /api/suppressions (beyond the seed):
// the organisation's suppressed addresses, newest first; limit 1..100
// (default 20), offset.
func (s *Service) ListSuppressionsHandler(w http.ResponseWriter, r *http.Request) error {
	q := httpx.NewQuery(r)
	p := pageOptions{Limit: int(q.Int("limit", outstore.DefaultLimit, 1, 100)), Offset: int(q.Int("offset", 0, 0, -1))}
	if err := q.Fields().Err(); err != nil {
		return err
	}
	list, total, err := s.Store.Suppressions(r.Context(), tenant.OrgFrom(r.Context()).ID, p.Limit, p.Offset)
	if err != nil {
		return err
	}
	httpx.WriteJSON(w, http.StatusOK, suppressionList{TotalCount: total, Options: p, Data: nonNil(list)})
	return nil
}

// DeleteSuppressionHandler answers DELETE /api/suppressions/{address}
// (beyond the seed): RemoveSuppression, 204; 404 when the organisation has
// not suppressed the address.
func (s *Service) DeleteSuppressionHandler(w http.ResponseWriter, r *http.Request) error {
	addr, err := url.PathUnescape(chi.URLParam(r, "address"))
	if err != nil {
		return problem.NotFoundf("suppression")
	}
	if err := s.RemoveSuppression(r.Context(), tenant.PrincipalFrom(r.Context()), RemoveSuppressionRequest{Address: addr}); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}
