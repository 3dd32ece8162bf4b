package web

import (
	"encoding/json"
	"errors"
	"net/http"

	"github.com/catchbox/catchbox/internal/deliverability"
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

// reportView reads the email's report through the API's handler: nil when
// none was requested.
func (d *Dashboard) reportView(r *http.Request, emailID string) (map[string]any, error) {
	var rep struct {
		Status    string                     `json:"status"`
		ExpiresAt string                     `json:"expires_at"`
		Report    map[string]json.RawMessage `json:"report"`
		Errors    json.RawMessage            `json:"errors"`
	}
	err := apiCall(r, d.Deliverability.GetReportHandler, http.MethodGet, "/api/emails/"+emailID+"/deliverability-report",
		map[string]string{"emailId": emailID}, nil, &rep)
	var pe *pageError
	if errors.As(err, &pe) && pe.status == http.StatusNotFound {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	out := map[string]any{"Status": rep.Status, "ExpiresAt": rep.ExpiresAt}
	if len(rep.Errors) > 0 {
		out["Errors"] = string(rep.Errors)
	}
	if rep.Report != nil {
		var overall string
		json.Unmarshal(rep.Report["overall_status"], &overall)
		out["Overall"] = overall
		var secs []reportSection
		for _, name := range reportSections {
			raw, ok := rep.Report[name]
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
// deliverability report is started (the API's POST), then shown as it runs.
func (d *Dashboard) RequestReportHandler(w http.ResponseWriter, r *http.Request) error {
	e, _, err := d.visibleEmail(r)
	if err != nil {
		return err
	}
	if err := apiCall(r, d.Deliverability.RequestReportHandler, http.MethodPost, "/api/emails/"+e.ID+"/deliverability-report",
		map[string]string{"emailId": e.ID}, nil, nil); err != nil {
		return err
	}
	return redirect(w, r, "/emails/"+e.ID+"?tab=report", "Report requested: it takes up to 30 seconds.")
}
