package deliverability

import (
	"encoding/json"
	"net/http"

	"github.com/go-chi/chi/v5"

	"github.com/catchbox/catchbox/internal/httpx"
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

func response(s ReportState) Response {
	exp := httpx.Time(s.ExpiresAt)
	return Response{Status: s.Status, AnalysisVersion: s.AnalysisVersion, ExpiresAt: &exp, Report: s.Report, Errors: s.Errors}
}

// RequestReportHandler answers POST /api/emails/{emailId}/deliverability-report
// (RequestReport): 202 with a pending report when a run starts, 200 with the
// report as it stands when a run is pending or running already.
func (s *Service) RequestReportHandler(w http.ResponseWriter, r *http.Request) error {
	st, err := s.RequestReport(r.Context(), tenant.PrincipalFrom(r.Context()), ReportRequest{EmailID: chi.URLParam(r, "emailId")})
	if err != nil {
		return err
	}
	if !st.Started {
		httpx.WriteJSON(w, http.StatusOK, response(st))
		return nil
	}
	w.Header().Set("Location", "/api/emails/"+st.EmailID+"/deliverability-report")
	httpx.WriteJSON(w, http.StatusAccepted, response(st))
	return nil
}

// GetReportHandler answers GET /api/emails/{emailId}/deliverability-report
// (Report): the report as it stands, or 404 when none was requested or it
// has expired.
func (s *Service) GetReportHandler(w http.ResponseWriter, r *http.Request) error {
	st, err := s.Report(r.Context(), tenant.PrincipalFrom(r.Context()), ReportRequest{EmailID: chi.URLParam(r, "emailId")})
	if err != nil {
		return err
	}
	httpx.WriteJSON(w, http.StatusOK, response(st))
	return nil
}
