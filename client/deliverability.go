package client

import (
	"context"
	"net/http"
	"time"
)

// Deliverability reports: why a received email would land in spam, section by
// section (docs/api.md, "Deliverability reports").

// DeliverabilityReportStatus is a report as it stands: Status pending or
// running (no Report yet), completed (with Report) or failed (with Errors).
type DeliverabilityReportStatus struct {
	Status          string                `json:"status"`
	AnalysisVersion string                `json:"analysis_version"`
	ExpiresAt       *time.Time            `json:"expires_at"`
	Report          *DeliverabilityReport `json:"report,omitempty"`
	Errors          []ReportError         `json:"errors,omitempty"`
}

// Final reports whether the report will not change again.
func (r DeliverabilityReportStatus) Final() bool {
	return r.Status == "completed" || r.Status == "failed"
}

// ReportError is why a report failed: email_gone, report_failed or
// report_abandoned.
type ReportError struct {
	Code    string         `json:"code"`
	Message string         `json:"message"`
	Details map[string]any `json:"details,omitempty"`
}

// DeliverabilityReport is a completed report. OverallStatus is issue_detected
// if a section fails, warning if one warns, else no_issues.
type DeliverabilityReport struct {
	OverallStatus string `json:"overall_status"`
	Source        struct {
		Namespace         string `json:"namespace"`
		EmailID           string `json:"email_id"`
		ReceivedTimestamp int64  `json:"received_timestamp"`
	} `json:"source"`
	SPF          SPFSection          `json:"spf"`
	DKIM         DKIMSection         `json:"dkim"`
	DMARC        DMARCSection        `json:"dmarc"`
	Blocklists   BlocklistSection    `json:"blocklists"`
	SpamAssassin SpamAssassinSection `json:"spamassassin"`
	Content      ContentSection      `json:"content"`
	DNS          DNSSection          `json:"dns"`
	GeneratedAt  time.Time           `json:"generated_at"`
	DurationMS   int64               `json:"duration_ms"`
	DNSQueries   int                 `json:"dns_queries"`
}

// Section is what every section of a report has: its verdict (pass, warning or
// fail) and the issues behind it.
type Section struct {
	Status string        `json:"status"`
	Issues []ReportIssue `json:"issues"`
}

// ReportIssue is one finding: a stable Code, a Message for people that says
// what to change, and the evidence in Details.
type ReportIssue struct {
	Code     string         `json:"code"`
	Message  string         `json:"message"`
	Severity string         `json:"severity"`
	Details  map[string]any `json:"details,omitempty"`
}

// SPFSection is the RFC 7208 evaluation of the client IP against the envelope
// sender (or HELO).
type SPFSection struct {
	Section
	Result   string `json:"result"`   // pass, fail, softfail, neutral, none, temperror, permerror
	Identity string `json:"identity"` // mailfrom or helo
	Domain   string `json:"domain"`
	Sender   string `json:"sender"`
	ClientIP string `json:"client_ip"`
	Record   string `json:"record,omitempty"`
}

// DKIMSection lists every signature and its verification.
type DKIMSection struct {
	Section
	Signatures []DKIMSignature `json:"signatures"`
}

// DKIMSignature is one DKIM-Signature header verified.
type DKIMSignature struct {
	Domain           string   `json:"domain"`
	Selector         string   `json:"selector"`
	Algorithm        string   `json:"algorithm"`
	KeyType          string   `json:"key_type,omitempty"`
	KeyBits          int      `json:"key_bits,omitempty"`
	Canonicalization string   `json:"canonicalization,omitempty"`
	SignedHeaders    []string `json:"signed_headers,omitempty"`
	Result           string   `json:"result"`    // pass, fail, temperror, permerror
	BodyHash         string   `json:"body_hash"` // pass, fail, not_checked
	Error            string   `json:"error,omitempty"`
}

// DMARCSection is the From domain's policy and the alignment of SPF and DKIM.
type DMARCSection struct {
	Section
	Result               string         `json:"result"` // pass, fail, none, temperror, permerror
	FromDomain           string         `json:"from_domain"`
	OrganizationalDomain string         `json:"organizational_domain,omitempty"`
	PolicyDomain         string         `json:"policy_domain,omitempty"`
	Record               string         `json:"record,omitempty"`
	Policy               string         `json:"policy,omitempty"`
	SubdomainPolicy      string         `json:"subdomain_policy,omitempty"`
	Percent              int            `json:"percent,omitempty"`
	AppliedPolicy        string         `json:"applied_policy"` // none, quarantine, reject
	SPFAlignment         DMARCAlignment `json:"spf_alignment"`
	DKIMAlignment        DMARCAlignment `json:"dkim_alignment"`
}

// DMARCAlignment is one identifier's alignment with the From domain.
type DMARCAlignment struct {
	Mode          string `json:"mode"` // relaxed or strict
	Domain        string `json:"domain,omitempty"`
	Authenticated bool   `json:"authenticated"`
	Aligned       bool   `json:"aligned"`
}

// BlocklistSection is every blocklist lookup.
type BlocklistSection struct {
	Section
	Checks []BlocklistCheck `json:"checks"`
}

// BlocklistCheck is one name looked up on one list.
type BlocklistCheck struct {
	Target string   `json:"target"`
	Source string   `json:"source"` // client_ip, from_domain or link_domain
	Zone   string   `json:"zone"`
	Result string   `json:"result"` // listed, clean or lookup_failed
	Codes  []string `json:"codes,omitempty"`
	Reason string   `json:"reason,omitempty"`
	Error  string   `json:"error,omitempty"`
}

// SpamAssassinSection is spamd's verdict; Available is false when the server
// has no spamd.
type SpamAssassinSection struct {
	Section
	Available bool    `json:"available"`
	Score     float64 `json:"score,omitempty"`
	Threshold float64 `json:"threshold,omitempty"`
	IsSpam    bool    `json:"is_spam,omitempty"`
	Rules     []struct {
		Name        string  `json:"name"`
		Score       float64 `json:"score"`
		Description string  `json:"description,omitempty"`
	} `json:"rules"`
}

// ContentSection is what the message itself shows.
type ContentSection struct {
	Section
	SizeBytes       int64 `json:"size_bytes"`
	HasText         bool  `json:"has_text"`
	HasHTML         bool  `json:"has_html"`
	HTMLBytes       int64 `json:"html_bytes,omitempty"`
	LinkCount       int   `json:"link_count"`
	ImageCount      int   `json:"image_count"`
	AttachmentCount int   `json:"attachment_count"`
	BulkLooking     bool  `json:"bulk_looking"`
	// HTMLCheck sums up the HTML check of an HTML body (Client.HTMLCheck has
	// it whole); nil without one.
	HTMLCheck *struct {
		Score        float64  `json:"score"`
		Features     []string `json:"features"`
		FeatureCount int      `json:"feature_count"`
		// UnsupportedByMajorClients are the features Gmail, Outlook, Apple
		// Mail or Yahoo! Mail does not support on one of its platforms.
		UnsupportedByMajorClients []string `json:"unsupported_by_major_clients"`
	} `json:"html_check,omitempty"`
}

// DNSSection is the From domain's records and the client's reverse DNS.
type DNSSection struct {
	Section
	Domain string   `json:"domain"`
	MX     []string `json:"mx"`
	A      []string `json:"a"`
	SPF    []struct {
		Domain  string   `json:"domain"`
		Records []string `json:"records"`
		Lookups int      `json:"lookups"`
	} `json:"spf"`
	DMARCRecord string   `json:"dmarc_record,omitempty"`
	ClientIP    string   `json:"client_ip"`
	PTR         []string `json:"ptr"`
	FCrDNS      bool     `json:"fcrdns"`
	HELO        string   `json:"helo"`
}

// GenerateDeliverabilityReport starts a report of the received email emailID
// (POST /api/emails/{emailId}/deliverability-report), or returns the run
// already pending or running. The namespace must capture raw sources: else an
// *Error with code raw_not_captured.
func (c *Client) GenerateDeliverabilityReport(ctx context.Context, emailID string) (DeliverabilityReportStatus, error) {
	var out DeliverabilityReportStatus
	return out, c.do(ctx, request{method: http.MethodPost, path: reportPath(emailID)}, &out)
}

// DeliverabilityReport returns the email's report as it stands
// (GET /api/emails/{emailId}/deliverability-report).
func (c *Client) DeliverabilityReport(ctx context.Context, emailID string) (DeliverabilityReportStatus, error) {
	var out DeliverabilityReportStatus
	return out, c.do(ctx, request{method: http.MethodGet, path: reportPath(emailID)}, &out)
}

// WaitForDeliverabilityReport starts a report of emailID and reads it every
// interval (250 ms when zero) until it is completed or failed, or ctx ends.
func (c *Client) WaitForDeliverabilityReport(ctx context.Context, emailID string, interval time.Duration) (DeliverabilityReportStatus, error) {
	if _, err := c.GenerateDeliverabilityReport(ctx, emailID); err != nil {
		return DeliverabilityReportStatus{}, err
	}
	return poll(ctx, interval, func() (DeliverabilityReportStatus, bool, error) {
		r, err := c.DeliverabilityReport(ctx, emailID)
		return r, r.Final(), err
	})
}

func reportPath(emailID string) string {
	return "/api/emails/" + seg(emailID) + "/deliverability-report"
}
