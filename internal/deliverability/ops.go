package deliverability

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/google/uuid"

	"github.com/catchbox/catchbox/internal/inbox"
	"github.com/catchbox/catchbox/internal/jobs"
	"github.com/catchbox/catchbox/internal/problem"
	"github.com/catchbox/catchbox/internal/store"
	"github.com/catchbox/catchbox/internal/tenant"
)

// ReportRequest names the email whose report is requested or read.
type ReportRequest struct {
	EmailID string
}

// ReportState is an email's report as it stands: the seed's
// DeliverabilityReportResponse before it is written as JSON.
type ReportState struct {
	// Started tells that the request started a run (the API's 202): there was
	// no report yet, or the last run had ended and the report is refreshed.
	Started bool
	// EmailID is the email's id as stored.
	EmailID string
	// Status is pending, running, completed or failed.
	Status          string
	AnalysisVersion string
	ExpiresAt       time.Time
	// Report is the Report as stored, set once completed.
	Report json.RawMessage
	// Errors say why the run failed, set once failed.
	Errors []ReportError
}

// RequestReport starts a run of the email's report, unless one is pending or
// running already: then the report is returned as it stands, Started false.
// The run's job is enqueued in the transaction that records the request, so
// a started run is never lost. An email the principal's organisation cannot
// read is not found; one whose raw source was not kept is a Conflict
// (raw_not_captured), since DKIM needs the exact bytes received.
func (s *Service) RequestReport(ctx context.Context, p tenant.Principal, req ReportRequest) (ReportState, error) {
	e, err := s.visibleEmail(ctx, p, req.EmailID)
	if err != nil {
		return ReportState{}, err
	}
	if _, err := s.searcher.RawSize(ctx, e.ID); errors.Is(err, inbox.ErrRawNotCaptured) {
		return ReportState{}, problem.Errorf(problem.Conflict, "raw_not_captured",
			"the raw source of this email was not kept (its namespace had capture_raw_email off when it arrived), and the report needs the exact bytes received")
	} else if err != nil {
		return ReportState{}, err
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
		return ReportState{}, err
	}
	if run > 0 {
		return ReportState{Started: true, EmailID: e.ID, Status: StatusPending, AnalysisVersion: AnalysisVersion, ExpiresAt: exp}, nil
	}
	st, err := s.reports.get(ctx, e.ID, now)
	if err != nil {
		return ReportState{}, err
	}
	return state(st), nil
}

// Report returns the email's report as it stands (with the report once
// completed, its errors once failed). An email the principal's organisation
// cannot read, and one whose report was never requested or has expired, are
// not found.
func (s *Service) Report(ctx context.Context, p tenant.Principal, req ReportRequest) (ReportState, error) {
	e, err := s.visibleEmail(ctx, p, req.EmailID)
	if err != nil {
		return ReportState{}, err
	}
	st, err := s.reports.get(ctx, e.ID, s.now())
	if errors.Is(err, store.ErrNotFound) {
		return ReportState{}, problem.Errorf(problem.NotFound, "not_found",
			"no deliverability report was requested for this email (or it has expired); POST to this path to request one")
	}
	if err != nil {
		return ReportState{}, err
	}
	return state(st), nil
}

func state(s stored) ReportState {
	return ReportState{EmailID: s.EmailID, Status: s.Status, AnalysisVersion: s.Version, ExpiresAt: s.ExpiresAt, Report: s.Report, Errors: s.Errors}
}

// visibleEmail loads the email if the principal's organisation may read it;
// any other email is not found, as one that does not exist.
func (s *Service) visibleEmail(ctx context.Context, p tenant.Principal, id string) (inbox.StoredEmail, error) {
	if _, err := uuid.Parse(id); err != nil || p.Org.ID == "" {
		return inbox.StoredEmail{}, problem.NotFoundf("email")
	}
	e, err := s.searcher.ByID(ctx, id)
	if errors.Is(err, store.ErrNotFound) {
		return inbox.StoredEmail{}, problem.NotFoundf("email")
	}
	if err != nil {
		return inbox.StoredEmail{}, err
	}
	ns, err := s.tenants.NamespaceByID(ctx, e.NamespaceID)
	if err != nil || !ns.VisibleTo(p.Org.ID) {
		return inbox.StoredEmail{}, problem.NotFoundf("email")
	}
	return e, nil
}

func (s *Service) enqueue(ctx context.Context, tx *store.Tx, emailID string, run int) error {
	payload, err := json.Marshal(reportPayload{EmailID: emailID, Run: run})
	if err != nil {
		return err
	}
	_, err = s.queue.Enqueue(ctx, tx, KindReport, payload, jobs.EnqueueOptions{})
	return err
}
