package client

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
)

// Email checks (docs/api.md): HTML client support, which email clients lack
// the HTML and CSS features a received email uses, from the caniemail data
// set; and previews, screenshots of the email rendered by the server.

// HTMLCheck is the answer of GET /api/emails/{emailId}/html-check.
type HTMLCheck struct {
	// Features are those at least one client lacks, the most unsupported first;
	// empty for an email without HTML or using only what every client supports.
	Features []HTMLFeature `json:"features"`
	// Clients sums the check up per client family, the lowest score first.
	Clients []HTMLClientFamily `json:"clients"`
	// Score is the mean of the families' scores, from 0 to 100.
	Score float64 `json:"score"`
	// CheckedFeatures is how many of the data set's features the HTML uses.
	CheckedFeatures int  `json:"checked_features"`
	HTMLBytes       int  `json:"html_bytes"`
	Truncated       bool `json:"truncated"`
	Data            struct {
		Source  string `json:"source"`
		Commit  string `json:"commit"`
		Date    string `json:"date"`
		Licence string `json:"licence"`
	} `json:"data"`
}

// Feature returns the feature of that name (the data set's title, such as
// "display:grid" or "<video> element"), and whether the check lists it.
func (h HTMLCheck) Feature(name string) (HTMLFeature, bool) {
	for _, f := range h.Features {
		if f.Name == name {
			return f, true
		}
	}
	return HTMLFeature{}, false
}

// HTMLFeature is one feature some clients do not support (Unsupported) or
// support in part (Partial); clients are named family.platform, such as
// outlook.windows or gmail.android.
type HTMLFeature struct {
	Slug        string      `json:"slug"`
	Name        string      `json:"name"`
	Kind        string      `json:"kind"` // html or css
	URL         string      `json:"url"`
	Count       int         `json:"count"`
	Places      []HTMLPlace `json:"places"`
	Unsupported []string    `json:"unsupported"`
	Partial     []string    `json:"partial"`
	Notes       []struct {
		Text    string   `json:"text"`
		Clients []string `json:"clients"`
	} `json:"notes"`
}

// HTMLPlace is where the HTML uses a feature: line and column (1-based, in
// characters) and the HTML there.
type HTMLPlace struct {
	Line   int    `json:"line"`
	Column int    `json:"column"`
	Text   string `json:"text"`
}

// HTMLClientFamily is the summary of a client family (Gmail, Outlook) and of
// each of its platforms.
type HTMLClientFamily struct {
	Family      string   `json:"family"`
	Name        string   `json:"name"`
	Score       float64  `json:"score"`
	Unsupported []string `json:"unsupported"`
	Partial     []string `json:"partial"`
	Platforms   []struct {
		Client      string   `json:"client"`
		Name        string   `json:"name"`
		Score       float64  `json:"score"`
		Unsupported []string `json:"unsupported"`
		Partial     []string `json:"partial"`
	} `json:"platforms"`
}

// HTMLCheck checks the HTML of the received email emailID against the email
// clients (GET /api/emails/{emailId}/html-check).
func (c *Client) HTMLCheck(ctx context.Context, emailID string) (HTMLCheck, error) {
	var out struct {
		Data HTMLCheck `json:"data"`
	}
	err := c.do(ctx, request{method: http.MethodGet, path: "/api/emails/" + seg(emailID) + "/html-check"}, &out)
	return out.Data, err
}

// PreviewOptions choose a preview: Width 375, 768 or 1280 (0: the server's
// default, 1280) and Scheme light or dark ("": light).
type PreviewOptions struct {
	Width  int
	Scheme string
}

// maxPreviewBytes bounds the image read: far above the largest preview.
const maxPreviewBytes = 64 << 20

// EmailPreview returns a PNG screenshot of the received email emailID
// (GET /api/emails/{emailId}/preview.png). A server without Chromium answers
// an *Error with code previews_unavailable (501).
func (c *Client) EmailPreview(ctx context.Context, emailID string, opts PreviewOptions) ([]byte, error) {
	q := url.Values{}
	if opts.Width != 0 {
		q.Set("width", strconv.Itoa(opts.Width))
	}
	if opts.Scheme != "" {
		q.Set("scheme", opts.Scheme)
	}
	resp, err := c.send(ctx, http.MethodGet, c.url("/api/emails/"+seg(emailID)+"/preview.png", q), nil)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, readError(resp)
	}
	b, err := io.ReadAll(io.LimitReader(resp.Body, maxPreviewBytes+1))
	if err != nil {
		return nil, fmt.Errorf("catchbox: preview of %s: %w", emailID, err)
	}
	if len(b) > maxPreviewBytes {
		return nil, fmt.Errorf("catchbox: preview of %s is over %d bytes", emailID, maxPreviewBytes)
	}
	return b, nil
}
