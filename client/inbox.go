package client

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"time"
)

// Address is a mailbox of an email's header.
type Address struct {
	Address string `json:"address"`
	Name    string `json:"name,omitempty"`
}

// Link is a link of a message that a test can follow: its URL and the text
// shown for it ("" for a URL written out in the text).
type Link struct {
	Href string `json:"href"`
	Text string `json:"text,omitempty"`
}

// Email is a received email.
type Email struct {
	ID                string              `json:"id"`
	From              Address             `json:"from"`
	To                []Address           `json:"to"`
	Cc                []Address           `json:"cc,omitempty"`
	Bcc               []Address           `json:"bcc,omitempty"` // envelope recipients of the namespace named in no header
	Subject           string              `json:"subject,omitempty"`
	HTML              string              `json:"html,omitempty"`
	Text              string              `json:"text,omitempty"`
	ReceivedDate      time.Time           `json:"received_date"`
	ReceivedTimestamp int64               `json:"received_timestamp"` // Unix seconds
	ExpiresTimestamp  int64               `json:"expires_timestamp"`  // Unix seconds
	SpamScore         *float64            `json:"spam_score,omitempty"`
	Headers           map[string]string   `json:"headers,omitempty"` // lower-case names
	Attachments       []AttachmentSummary `json:"attachments,omitempty"`
	// Links are the email's http and https links in reading order, each URL
	// once; Codes its one-time codes, best first. The server reads both when
	// the email arrives (docs/api.md, "Links and codes").
	Links []Link   `json:"links"`
	Codes []string `json:"codes"`
}

// AttachmentSummary is an attachment as listed on its email.
type AttachmentSummary struct {
	ID          string `json:"id"`
	Filename    string `json:"filename"`
	ContentType string `json:"content_type"`
	Size        int64  `json:"size"`
	ContentID   string `json:"content_id,omitempty"`
}

// Attachment is an attachment's download metadata. DownloadURL is a signed
// link that needs no API key, valid for an hour.
type Attachment struct {
	ID          string     `json:"id"`
	Filename    string     `json:"filename"`
	ContentType string     `json:"content_type"`
	Size        int64      `json:"size"`
	ContentID   string     `json:"content_id,omitempty"`
	ExpiresAt   *time.Time `json:"expires_at"`
	DownloadURL string     `json:"download_url"`
}

// SearchQuery is a search of a namespace's emails. Zero fields are left out:
// the server's defaults apply (10 emails from the newest).
type SearchQuery struct {
	Limit            int       // 1 to 20
	Offset           int       //
	Since            time.Time // received at or after (second precision)
	Until            time.Time // received at or before (the whole second included)
	ToAddrPrefix     string    // a To, Cc or envelope recipient starts with this (case-insensitive)
	FromAddrIncludes string    // the From address contains this (case-insensitive)
	SubjectIncludes  string    // the subject contains this (case-insensitive)
	// Wait holds the search until at least one email matches, following the
	// server's redirects until ctx ends (see WaitForEmail).
	Wait bool
}

func (q SearchQuery) values() url.Values {
	v := url.Values{}
	setInt(v, "limit", q.Limit)
	setInt(v, "offset", q.Offset)
	if !q.Since.IsZero() {
		v.Set("from_timestamp", strconv.FormatInt(q.Since.Unix(), 10))
	}
	if !q.Until.IsZero() {
		v.Set("to_timestamp", strconv.FormatInt(q.Until.Unix(), 10))
	}
	setString(v, "to_addr_prefix", q.ToAddrPrefix)
	setString(v, "from_addr_includes", q.FromAddrIncludes)
	setString(v, "subject_includes", q.SubjectIncludes)
	if q.Wait {
		v.Set("wait", "true")
	}
	return v
}

// SearchOptions echoes the search the server applied.
type SearchOptions struct {
	Limit            int     `json:"limit"`
	Offset           int     `json:"offset"`
	FromTimestamp    *int64  `json:"from_timestamp,omitempty"`
	ToTimestamp      *int64  `json:"to_timestamp,omitempty"`
	ToAddrPrefix     *string `json:"to_addr_prefix,omitempty"`
	FromAddrIncludes *string `json:"from_addr_includes,omitempty"`
	SubjectIncludes  *string `json:"subject_includes,omitempty"`
	Wait             *bool   `json:"wait,omitempty"`
}

// EmailPage is one page of a search, newest first.
type EmailPage struct {
	TotalCount int           `json:"total_count"` // every match, not only this page
	Options    SearchOptions `json:"options"`
	Data       []Email       `json:"data"`
}

// SearchEmails searches a namespace's emails (GET /api/emails/{namespace}/inbox).
func (c *Client) SearchEmails(ctx context.Context, namespace string, q SearchQuery) (EmailPage, error) {
	var out EmailPage
	target := c.url("/api/emails/"+seg(namespace)+"/inbox", q.values())
	if q.Wait {
		return out, c.follow(ctx, target, &out)
	}
	resp, err := c.send(ctx, http.MethodGet, target, nil)
	if err != nil {
		return out, err
	}
	return out, decode(resp, &out)
}

// Filter chooses the email WaitForEmail waits for. Empty fields match
// anything, except Since.
type Filter struct {
	To      string // a recipient starts with this: a whole address, or its local part and "@"
	From    string // the From address contains this
	Subject string // the subject contains this
	// Since: received at or after (second precision). Zero is RecentWindow
	// before the call: a wait never passes on mail an earlier run left.
	// time.Unix(0, 0) matches mail of any age.
	Since time.Time
}

// RecentWindow is how far back a wait looks when its filter sets no Since:
// mail or SMS received at most this long before the call (to the second),
// enough for a message sent just before the wait started, or by a machine
// whose clock is a little ahead. catchbox wait follows the same rule.
const RecentWindow = 30 * time.Second

// since is a filter's Since, or RecentWindow before now when it is zero.
func since(t time.Time) time.Time {
	if t.IsZero() {
		return time.Now().Add(-RecentWindow)
	}
	return t
}

// ErrWaitEnded is wrapped by the error of a wait whose context ended first.
var ErrWaitEnded = errors.New("no match before the wait ended")

// WaitForEmail returns the newest email of the namespace that matches f,
// waiting until one arrives. The server holds each request until a match is
// stored (answering at once) or its hold ends (a 307 to the same search, which
// WaitForEmail follows); so the wait ends only with a match, an API error, or
// ctx. A ctx that ends first gives an error wrapping ErrWaitEnded and ctx's
// error.
//
// Only mail received since f.Since is looked at, by default RecentWindow
// before the call: an email left by an earlier run of the same test, more
// than 30 s ago, does not answer the wait. A match received since then is
// returned at once, though: give each test its own namespace
// (catchboxtest.Inbox), or a unique recipient.
func (c *Client) WaitForEmail(ctx context.Context, namespace string, f Filter) (Email, error) {
	page, err := c.SearchEmails(ctx, namespace, SearchQuery{Limit: 1, ToAddrPrefix: f.To,
		FromAddrIncludes: f.From, SubjectIncludes: f.Subject, Since: since(f.Since), Wait: true})
	if err != nil {
		return Email{}, waitError(ctx, err)
	}
	if len(page.Data) == 0 {
		return Email{}, fmt.Errorf("catchbox: wait answered %d matches and no email", page.TotalCount)
	}
	return page.Data[0], nil
}

// waitError marks the error of a wait ended by its context.
func waitError(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return fmt.Errorf("catchbox: %w: %w", ErrWaitEnded, ctx.Err())
	}
	return err
}

// LatestEmail returns the namespace's newest email (GET
// /api/emails/{namespace}/latest); an empty namespace is an *Error with code
// "no_emails".
func (c *Client) LatestEmail(ctx context.Context, namespace string) (Email, error) {
	var out struct {
		Data Email `json:"data"`
	}
	err := c.do(ctx, request{method: http.MethodGet, path: "/api/emails/" + seg(namespace) + "/latest"}, &out)
	return out.Data, err
}

// Email returns one email by id (GET /api/emails/{emailId}).
func (c *Client) Email(ctx context.Context, id string) (Email, error) {
	var out struct {
		Data Email `json:"data"`
	}
	err := c.do(ctx, request{method: http.MethodGet, path: "/api/emails/" + seg(id)}, &out)
	return out.Data, err
}

// Attachments returns the download metadata of an email's attachments (GET
// /api/emails/{emailId}/attachments).
func (c *Client) Attachments(ctx context.Context, emailID string) ([]Attachment, error) {
	var out struct {
		Data []Attachment `json:"data"`
	}
	err := c.do(ctx, request{method: http.MethodGet, path: "/api/emails/" + seg(emailID) + "/attachments"}, &out)
	return out.Data, err
}

// Attachment returns one attachment's download metadata (GET /api/attachments/{id}).
func (c *Client) Attachment(ctx context.Context, id string) (Attachment, error) {
	var out struct {
		Data Attachment `json:"data"`
	}
	err := c.do(ctx, request{method: http.MethodGet, path: "/api/attachments/" + seg(id)}, &out)
	return out.Data, err
}

// Download fetches the bytes behind a signed download URL (an Attachment's or
// a RawSource's DownloadURL). The URL is its own credential: no API key is
// sent with it.
func (c *Client) Download(ctx context.Context, downloadURL string) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, downloadURL, nil)
	if err != nil {
		return nil, fmt.Errorf("catchbox: download: %w", err)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return nil, fmt.Errorf("catchbox: download: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, readError(resp)
	}
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, fmt.Errorf("catchbox: download: %w", err)
	}
	return b, nil
}

// RawSource is a signed link to an email's raw RFC 5322 source.
type RawSource struct {
	DownloadURL string    `json:"download_url"`
	ExpiresAt   time.Time `json:"expires_at"` // when the link stops working
	Size        int64     `json:"size"`
	ContentType string    `json:"content_type"` // message/rfc822
}

// RawSource returns a link to the raw source of an email of the namespace (GET
// /api/emails/{namespace}/{emailId}/deliverability-report/raw-source);
// receivedTimestamp is the email's ReceivedTimestamp. An email that arrived
// while its namespace did not keep raw sources is an *Error with code
// "raw_not_captured".
func (c *Client) RawSource(ctx context.Context, namespace, emailID string, receivedTimestamp int64) (RawSource, error) {
	var out struct {
		Data RawSource `json:"data"`
	}
	err := c.do(ctx, request{method: http.MethodGet,
		path:  "/api/emails/" + seg(namespace) + "/" + seg(emailID) + "/deliverability-report/raw-source",
		query: url.Values{"received_timestamp": {strconv.FormatInt(receivedTimestamp, 10)}}}, &out)
	return out.Data, err
}

// ShareLink is a signed link through which any organisation's key reads one
// email.
type ShareLink struct {
	EncodedEmailID string    `json:"encoded_email_id"`
	URL            string    `json:"url"`
	ExpiresAt      time.Time `json:"expires_at"`
}

// ShareEmail creates a share link to an email (POST /api/emails/{emailId}/share),
// valid for expiresIn (whole seconds; 0 for the server's default of 7 days),
// never past the email's expiry.
func (c *Client) ShareEmail(ctx context.Context, emailID string, expiresIn time.Duration) (ShareLink, error) {
	body := map[string]any{}
	if expiresIn > 0 {
		body["expires_in"] = int64(expiresIn / time.Second)
	}
	var out struct {
		Data ShareLink `json:"data"`
	}
	err := c.do(ctx, request{method: http.MethodPost, path: "/api/emails/" + seg(emailID) + "/share", body: body}, &out)
	return out.Data, err
}

// SharedEmail reads the email of a share link (GET /api/share/email/{encodedEmailId}).
func (c *Client) SharedEmail(ctx context.Context, encodedEmailID string) (Email, error) {
	var out struct {
		Data Email `json:"data"`
	}
	err := c.do(ctx, request{method: http.MethodGet, path: "/api/share/email/" + seg(encodedEmailID)}, &out)
	return out.Data, err
}

// SharedAttachment returns the download metadata of an attachment of a shared
// email (GET /api/share/email/{encodedEmailId}/attachment/{attachmentId}).
func (c *Client) SharedAttachment(ctx context.Context, encodedEmailID, attachmentID string) (Attachment, error) {
	var out struct {
		Data Attachment `json:"data"`
	}
	err := c.do(ctx, request{method: http.MethodGet,
		path: "/api/share/email/" + seg(encodedEmailID) + "/attachment/" + seg(attachmentID)}, &out)
	return out.Data, err
}

func setInt(v url.Values, key string, n int) {
	if n != 0 {
		v.Set(key, strconv.Itoa(n))
	}
}

func setString(v url.Values, key, s string) {
	if s != "" {
		v.Set(key, s)
	}
}

// DeleteEmail deletes one email with its attachments and raw source at once
// (DELETE /api/emails/{emailId}).
func (c *Client) DeleteEmail(ctx context.Context, id string) error {
	return c.do(ctx, request{method: http.MethodDelete, path: "/api/emails/" + seg(id)}, nil)
}

// ClearInbox deletes every email of the namespace (DELETE
// /api/emails/{namespace}/inbox), for a test that starts from an empty inbox.
func (c *Client) ClearInbox(ctx context.Context, namespace string) error {
	return c.do(ctx, request{method: http.MethodDelete, path: "/api/emails/" + seg(namespace) + "/inbox"}, nil)
}
