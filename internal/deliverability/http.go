package deliverability

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"

	"github.com/go-chi/chi/v5"
	"github.com/google/uuid"

	"github.com/catchbox/catchbox/internal/httpx"
	"github.com/catchbox/catchbox/internal/inbox"
	"github.com/catchbox/catchbox/internal/jobs"
	"github.com/catchbox/catchbox/internal/store"
	"github.com/catchbox/catchbox/internal/tenant"
)

// Response is the seed's DeliverabilityReportResponse.
type Response struct {
	Status          string          `json:"status"`
	AnalysisVersion string          `json:"analysis_version"`
	ExpiresAt       *string         `json:"expires_at"`
	Report          json.RawMessage `json:"report,omitempty"`
	Errors          []ReportError   `json:"errors,omitempty"`
}

func response(s stored) Response {
	exp := httpx.Time(s.ExpiresAt)
	return Response{Status: s.Status, AnalysisVersion: s.Version, ExpiresAt: &exp, Report: s.Report, Errors: s.Errors}
}

// visibleEmail loads the path's email if the request's organisation may read
// it; any other email is 404, as one that does not exist.
func (s *Service) visibleEmail(r *http.Request) (inbox.StoredEmail, error) {
	id := chi.URLParam(r, "emailId")
	if _, err := uuid.Parse(id); err != nil {
		return inbox.StoredEmail{}, httpx.NotFound("email")
	}
	e, err := s.searcher.ByID(r.Context(), id)
	if errors.Is(err, store.ErrNotFound) {
		return inbox.StoredEmail{}, httpx.NotFound("email")
	}
	if err != nil {
		return inbox.StoredEmail{}, err
	}
	ns, err := s.tenants.NamespaceByID(r.Context(), e.NamespaceID)
	if err != nil || !ns.VisibleTo(tenant.OrgFrom(r.Context()).ID) {
		return inbox.StoredEmail{}, httpx.NotFound("email")
	}
	return e, nil
}

// RequestReportHandler answers POST /api/emails/{emailId}/deliverability-report:
// 202 with a pending report when a run starts (none yet, or the last one
// finished: the report is refreshed), 200 with the report as it stands when a
// run is pending or running already. The run's job is enqueued in the
// transaction that records the request. An email whose raw source was not
// kept is 409 raw_not_captured: DKIM needs the exact bytes.
func (s *Service) RequestReportHandler(w http.ResponseWriter, r *http.Request) error {
	e, err := s.visibleEmail(r)
	if err != nil {
		return err
	}
	ctx := r.Context()
	if _, err := s.searcher.RawSize(ctx, e.ID); errors.Is(err, inbox.ErrRawNotCaptured) {
		return httpx.Errorf(http.StatusConflict, "raw_not_captured",
			"the raw source of this email was not kept (its namespace had capture_raw_email off when it arrived), and the report needs the exact bytes received")
	} else if err != nil {
		return err
	}
	now := s.now()
	exp := expiry(now, e.ExpiresMs)
	var run int
	err = s.db.InTx(ctx, func(tx *store.Tx) error {
		var err error
		if run, err = s.reports.request(ctx, tx, e.ID, e.NamespaceID, now, exp, now.Add(-staleAfter)); err != nil || run == 0 {
			return err
		}
		return s.enqueue(ctx, tx, e.ID, run)
	})
	if err != nil {
		return err
	}
	if run > 0 {
		w.Header().Set("Location", "/api/emails/"+e.ID+"/deliverability-report")
		expStr := httpx.Time(exp)
		httpx.WriteJSON(w, http.StatusAccepted, Response{Status: StatusPending, AnalysisVersion: AnalysisVersion, ExpiresAt: &expStr})
		return nil
	}
	st, err := s.reports.get(ctx, e.ID, now)
	if err != nil {
		return err
	}
	httpx.WriteJSON(w, http.StatusOK, response(st))
	return nil
}

func (s *Service) enqueue(ctx context.Context, tx *store.Tx, emailID string, run int) error {
	payload, err := json.Marshal(reportPayload{EmailID: emailID, Run: run})
	if err != nil {
		return err
	}
	_, err = s.queue.Enqueue(ctx, tx, KindReport, payload, jobs.EnqueueOptions{})
	return err
}

// GetReportHandler answers GET /api/emails/{emailId}/deliverability-report:
// the report as it stands (with report once completed, errors once failed),
// or 404 when none was requested or it has expired.
func (s *Service) GetReportHandler(w http.ResponseWriter, r *http.Request) error {
	e, err := s.visibleEmail(r)
	if err != nil {
		return err
	}
	st, err := s.reports.get(r.Context(), e.ID, s.now())
	if errors.Is(err, store.ErrNotFound) {
		return httpx.Errorf(http.StatusNotFound, "not_found",
			"no deliverability report was requested for this email (or it has expired); POST to this path to request one")
	}
	if err != nil {
		return err
	}
	httpx.WriteJSON(w, http.StatusOK, response(st))
	return nil
}
