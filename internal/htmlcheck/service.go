package htmlcheck

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"runtime"
	"strings"

	"github.com/go-chi/chi/v5"
	"github.com/google/uuid"

	"github.com/catchbox/catchbox/internal/httpx"
	"github.com/catchbox/catchbox/internal/inbox"
	"github.com/catchbox/catchbox/internal/lru"
	"github.com/catchbox/catchbox/internal/problem"
	"github.com/catchbox/catchbox/internal/store"
	"github.com/catchbox/catchbox/internal/tenant"
)

// CacheBytes is the memory the service keeps reports in. An email never
// changes once received and the data set is part of the binary, so a report
// is good for as long as its email exists; it is kept in memory, per replica,
// rather than in the store: a check takes milliseconds (docs/benchmarks.md),
// less than a table, its migration and its cleanup would cost.
const CacheBytes = 16 << 20

// Service is the HTML check of stored emails: the operation behind
// GET /api/emails/{emailId}/html-check and the dashboard's "Client support"
// tab.
type Service struct {
	searcher *inbox.Searcher
	tenants  *tenant.Service
	cache    *lru.Cache[string, *Report]
	// slots bounds the checks running at once to the processors: a flood of
	// requests for large emails queues instead of starving the service.
	slots chan struct{}
}

// NewService returns the service over the inbox's emails.
func NewService(searcher *inbox.Searcher, tenants *tenant.Service) *Service {
	return &Service{searcher: searcher, tenants: tenants, cache: lru.New[string, *Report](CacheBytes),
		slots: make(chan struct{}, runtime.GOMAXPROCS(0))}
}

// Email returns the email emailID if p may read it; any other, or an id that
// is no email's, is problem.NotFound, as one that does not exist.
func (s *Service) Email(ctx context.Context, p tenant.Principal, emailID string) (inbox.StoredEmail, error) {
	notFound := problem.NotFoundf("email")
	if _, err := uuid.Parse(emailID); err != nil {
		return inbox.StoredEmail{}, notFound
	}
	e, err := s.searcher.ByID(ctx, strings.ToLower(emailID))
	if errors.Is(err, store.ErrNotFound) {
		return inbox.StoredEmail{}, notFound
	}
	if err != nil {
		return inbox.StoredEmail{}, err
	}
	ns, err := s.tenants.NamespaceByID(ctx, e.NamespaceID)
	if err != nil || !ns.VisibleTo(p.Org.ID) {
		return inbox.StoredEmail{}, notFound
	}
	return e, nil
}

// Check is the HTML check of the email emailID as p may read it: computed on
// the first request, then served from memory. An email without HTML has a
// report without features.
func (s *Service) Check(ctx context.Context, p tenant.Principal, emailID string) (*Report, error) {
	e, err := s.Email(ctx, p, emailID)
	if err != nil {
		return nil, err
	}
	return s.CheckEmail(ctx, e)
}

// CheckEmail is Check of an email the caller has already found readable.
func (s *Service) CheckEmail(ctx context.Context, e inbox.StoredEmail) (*Report, error) {
	if r, ok := s.cache.Get(e.ID); ok {
		return r, nil
	}
	select {
	case s.slots <- struct{}{}:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	r, err := Check(e.HTML)
	<-s.slots
	if err != nil {
		return nil, err
	}
	if b, err := json.Marshal(r); err == nil {
		s.cache.Put(e.ID, r, int64(len(b)))
	}
	return r, nil
}

// CheckHandler answers GET /api/emails/{emailId}/html-check.
func (s *Service) CheckHandler(w http.ResponseWriter, r *http.Request) error {
	rep, err := s.Check(r.Context(), tenant.PrincipalFrom(r.Context()), chi.URLParam(r, "emailId"))
	if err != nil {
		return err
	}
	httpx.WriteJSON(w, http.StatusOK, map[string]any{"data": rep})
	return nil
}
