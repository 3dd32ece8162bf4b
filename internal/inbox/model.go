// Package inbox is the inbound half of Catchbox: it turns a received message into
// the seed's Email resource (ingest), stores it durably with group commit and
// compactly (content-addressed, compressed blobs), finds it again (search, wait,
// latest, by id), serves its attachments and raw source through signed links,
// shares it through signed tokens, and deletes it when its namespace's retention
// runs out (reaper) or its quota overflows (at ingest).
//
// docs/flow.md follows one message through this package; docs/inbox.md covers raw
// source, share links, settings, storage and how MIME is read.
package inbox

import "github.com/catchbox/catchbox/internal/message"

// Address is the seed's EmailAddress: a mailbox as internal/message reads it
// from the message's headers, returned as it is.
type Address = message.Address

// Link is one link of an email, as internal/message reads it: its href and the
// text shown for it.
type Link = message.Link

// AttachmentSummary is the seed's EmailAttachmentSummary. ContentID, beyond the
// seed's fields, is the part's Content-ID without angle brackets, so a test can
// match an inline image to the html's cid: reference; it is left out when the
// part has none.
type AttachmentSummary struct {
	ID          string `json:"id"`
	Filename    string `json:"filename"`
	ContentType string `json:"content_type"`
	Size        int64  `json:"size"`
	ContentID   string `json:"content_id,omitempty"`
}

// Email is the seed's Email resource, as returned by the API. Links and Codes,
// beyond the seed's fields, are what a test wants from a sign-in or reset mail:
// its links and its one-time codes, best first (message.Extract). They are read
// once per message at ingest and stored with the bodies they come from
// (after the raw source or in emails.body, see messageBytes), and always present, empty when the email has
// none.
type Email struct {
	ID                string              `json:"id"`
	From              Address             `json:"from"`
	To                []Address           `json:"to"`
	Cc                []Address           `json:"cc,omitempty"`
	Bcc               []Address           `json:"bcc,omitempty"`
	Subject           string              `json:"subject,omitempty"`
	HTML              string              `json:"html,omitempty"`
	Text              string              `json:"text,omitempty"`
	ReceivedDate      string              `json:"received_date"`
	ReceivedTimestamp int64               `json:"received_timestamp"`
	ExpiresTimestamp  int64               `json:"expires_timestamp"`
	SpamScore         *float64            `json:"spam_score,omitempty"`
	Headers           map[string]string   `json:"headers,omitempty"`
	Attachments       []AttachmentSummary `json:"attachments,omitempty"`
	Links             []Link              `json:"links"`
	Codes             []string            `json:"codes"`
}

// Attachment is the seed's Attachment download metadata, with ContentID as in
// AttachmentSummary.
type Attachment struct {
	ID          string  `json:"id"`
	Filename    string  `json:"filename"`
	ContentType string  `json:"content_type"`
	Size        int64   `json:"size"`
	ContentID   string  `json:"content_id,omitempty"`
	ExpiresAt   *string `json:"expires_at"`
	DownloadURL string  `json:"download_url"`
}
