package web

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/catchbox/catchbox/internal/deliverability"
	"github.com/catchbox/catchbox/internal/httpx"
	"github.com/catchbox/catchbox/internal/problem"
	"github.com/catchbox/catchbox/internal/tenant"
)

// reportSection is one check of a deliverability report, as the page shows it.
type reportSection struct {
	Name   string
	Status string
	Issues []deliverability.Issue
	JSON   string
	// HTMLCheck is the content section's summary of the HTML check, which
	// the page links to the Client support tab.
	HTMLCheck *deliverability.HTMLCheckSummary
}

// reportSections are the report's checks in the order the page shows them.
var reportSections = []string{"spf", "dkim", "dmarc", "blocklists", "spamassassin", "content", "dns"}

// reportView reads the email's report (deliverability.Report): nil when none
// was requested.
func (d *Dashboard) reportView(r *http.Request, emailID string) (map[string]any, error) {
	rep, err := d.Deliverability.Report(r.Context(), tenant.PrincipalFrom(r.Context()), deliverability.ReportRequest{EmailID: emailID})
	var pe *problem.Error
	if errors.As(err, &pe) && pe.Kind == problem.NotFound {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	out := map[string]any{"Status": rep.Status, "ExpiresAt": httpx.Time(rep.ExpiresAt)}
	if len(rep.Errors) > 0 {
		out["Errors"] = errorsJSON(rep.Errors)
	}
	if rep.Report != nil {
		var report map[string]json.RawMessage
		if err := json.Unmarshal(rep.Report, &report); err != nil {
			return nil, fmt.Errorf("decode the report of email %s: %w", emailID, err)
		}
		var overall string
		json.Unmarshal(report["overall_status"], &overall)
		out["Overall"] = overall
		var secs []reportSection
		for _, name := range reportSections {
			raw, ok := report[name]
			if !ok {
				continue
			}
			var s struct {
				Status    string                           `json:"status"`
				Issues    []deliverability.Issue           `json:"issues"`
				HTMLCheck *deliverability.HTMLCheckSummary `json:"html_check"`
			}
			json.Unmarshal(raw, &s)
			pretty, _ := json.MarshalIndent(json.RawMessage(raw), "", "  ")
			secs = append(secs, reportSection{Name: name, Status: s.Status, Issues: s.Issues, JSON: string(pretty), HTMLCheck: s.HTMLCheck})
		}
		out["Sections"] = secs
	}
	return out, nil
}

// RequestReportHandler answers POST /emails/{emailId}/report: a
// deliverability report is started (deliverability.RequestReport, as the
// API's POST), then shown as it runs.
func (d *Dashboard) RequestReportHandler(w http.ResponseWriter, r *http.Request) error {
	e, _, err := d.visibleEmail(r)
	if err != nil {
		return err
	}
	_, err = d.Deliverability.RequestReport(r.Context(), tenant.PrincipalFrom(r.Context()), deliverability.ReportRequest{EmailID: e.ID})
	if err != nil {
		return err
	}
	return redirect(w, r, "/emails/"+e.ID+"?tab=report", "Report requested: it takes up to 30 seconds.")
}

// errorsJSON is a failed report's errors as the API writes them.
func errorsJSON(errs []deliverability.ReportError) string {
	var b strings.Builder
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.Encode(errs)
	return strings.TrimSuffix(b.String(), "\n")
}
