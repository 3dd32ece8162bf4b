package client

import (
	"context"
	"net/http"
	"time"
)

// Link checks: every link and image URL of a received email asked for once,
// with where it ended and what answered (docs/api.md, "Link checks").

// LinkCheck is an email's link check as it stands: Status pending or running
// (Links empty), completed (every URL's outcome in Links) or failed (Error
// says why).
type LinkCheck struct {
	Status     string       `json:"status"`
	StartedAt  time.Time    `json:"started_at"`
	FinishedAt *time.Time   `json:"finished_at,omitempty"`
	Links      []LinkResult `json:"links"`
	Error      string       `json:"error,omitempty"`
}

// Final reports whether the check will not change again.
func (l LinkCheck) Final() bool { return l.Status == "completed" || l.Status == "failed" }

// Broken returns the URLs whose check found them broken (Error set).
func (l LinkCheck) Broken() []LinkResult {
	var out []LinkResult
	for _, r := range l.Links {
		if r.Error != "" {
			out = append(out, r)
		}
	}
	return out
}

// LinkResult is one URL's outcome. Kind is link (followed by the reader) or
// image (loaded with the email). StatusCode is the last answer's, after the
// redirects followed (0 when none came); FinalURL is the last URL asked for.
// Error is set when the URL is broken: no answer, too many redirects, a
// refused private target, or a final 4xx or 5xx.
type LinkResult struct {
	URL        string `json:"url"`
	Kind       string `json:"kind"`
	StatusCode int    `json:"status_code,omitempty"`
	FinalURL   string `json:"final_url"`
	Redirects  int    `json:"redirects"`
	DurationMS int64  `json:"duration_ms"`
	Error      string `json:"error,omitempty"`
}

// StartLinkCheck starts a link check of the received email emailID
// (POST /api/emails/{emailId}/link-check), or returns the run already
// pending or running. A finished check is replaced by the new run.
func (c *Client) StartLinkCheck(ctx context.Context, emailID string) (LinkCheck, error) {
	var out LinkCheck
	return out, c.do(ctx, request{method: http.MethodPost, path: linkCheckPath(emailID)}, &out)
}

// LinkCheck returns the email's link check as it stands
// (GET /api/emails/{emailId}/link-check); before any, an *Error with code
// link_check_not_found.
func (c *Client) LinkCheck(ctx context.Context, emailID string) (LinkCheck, error) {
	var out LinkCheck
	return out, c.do(ctx, request{method: http.MethodGet, path: linkCheckPath(emailID)}, &out)
}

// WaitForLinkCheck starts a link check of emailID and reads it every
// interval (250 ms when zero) until it is completed or failed, or ctx ends.
// A run takes 30 seconds at most.
func (c *Client) WaitForLinkCheck(ctx context.Context, emailID string, interval time.Duration) (LinkCheck, error) {
	if _, err := c.StartLinkCheck(ctx, emailID); err != nil {
		return LinkCheck{}, err
	}
	return poll(ctx, interval, func() (LinkCheck, bool, error) {
		l, err := c.LinkCheck(ctx, emailID)
		return l, l.Final(), err
	})
}

func linkCheckPath(emailID string) string {
	return "/api/emails/" + seg(emailID) + "/link-check"
}
