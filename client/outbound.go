package client

import (
	"context"
	"net/http"
	"net/url"
	"time"
)

// Outbound email: send, reply, forward, and what happened to each recipient
// (docs/api.md, "Outbound email").

// OutboundAddress is a sender or reply-to address of an outbound email.
type OutboundAddress struct {
	Email string `json:"email"`
	Name  string `json:"name,omitempty"`
}

// OutboundAttachment is a file to attach. Content is sent as base64.
type OutboundAttachment struct {
	Filename    string `json:"filename"`
	ContentType string `json:"content_type"`         // e.g. application/pdf; not multipart
	Content     []byte `json:"content_base64"`       // the bytes (encoding/json writes them as base64)
	ContentID   string `json:"content_id,omitempty"` // for an inline part the HTML shows as cid:<id>
	Disposition string `json:"disposition,omitempty"`
}

// SendRequest is a new email from a namespace. To, Cc and Bcc hold addresses,
// bare or with a display name ("Jane <jane@example.com>"), at most 4 in all.
type SendRequest struct {
	From        *OutboundAddress     `json:"from,omitempty"` // default outbound-delivery@<namespace>.<mail domain>
	ReplyTo     *OutboundAddress     `json:"reply_to,omitempty"`
	To          []string             `json:"to,omitempty"`
	Cc          []string             `json:"cc,omitempty"`
	Bcc         []string             `json:"bcc,omitempty"`
	Subject     string               `json:"subject"`
	HTML        string               `json:"html,omitempty"`
	Text        string               `json:"text,omitempty"`
	Attachments []OutboundAttachment `json:"attachments,omitempty"`
}

// ReplyRequest is a reply to a received email: it goes to the email's
// Reply-To, or else its From. Subject defaults to "Re: <subject>".
type ReplyRequest struct {
	From        *OutboundAddress     `json:"from,omitempty"`
	Cc          []string             `json:"cc,omitempty"`
	Bcc         []string             `json:"bcc,omitempty"`
	Subject     string               `json:"subject,omitempty"`
	HTML        string               `json:"html,omitempty"`
	Text        string               `json:"text,omitempty"`
	Attachments []OutboundAttachment `json:"attachments,omitempty"`
}

// ForwardRequest forwards a received email, with its attachments, to To.
// HTML and Text, when given, come before the forwarded message.
type ForwardRequest struct {
	From        *OutboundAddress     `json:"from,omitempty"`
	To          []string             `json:"to"`
	Cc          []string             `json:"cc,omitempty"`
	Bcc         []string             `json:"bcc,omitempty"`
	Subject     string               `json:"subject,omitempty"`
	HTML        string               `json:"html,omitempty"`
	Text        string               `json:"text,omitempty"`
	Attachments []OutboundAttachment `json:"attachments,omitempty"`
}

// OutboundEmail is an email sent from a namespace. Send, Reply and Forward
// return its summary; OutboundEmails adds Recipients; OutboundEmail fills
// every field.
type OutboundEmail struct {
	ID                string           `json:"id"`
	OrganisationID    string           `json:"organisation_id"`
	Type              string           `json:"type"`   // new, reply or forward
	Status            string           `json:"status"` // queued, sending, sent or failed
	From              OutboundAddress  `json:"from"`
	ReplyTo           *OutboundAddress `json:"reply_to,omitempty"`
	Subject           string           `json:"subject"`
	RecipientCount    int              `json:"recipient_count"`
	AttachmentCount   int              `json:"attachment_count"`
	MessageID         string           `json:"message_id"`
	Provider          string           `json:"provider,omitempty"`
	ProviderMessageID string           `json:"provider_message_id,omitempty"`
	FailureReason     string           `json:"failure_reason,omitempty"`
	QueuedAt          time.Time        `json:"queued_at"`
	SendingAt         *time.Time       `json:"sending_at,omitempty"`
	SentAt            *time.Time       `json:"sent_at,omitempty"`
	FailedAt          *time.Time       `json:"failed_at,omitempty"`
	CreatedAt         time.Time        `json:"created_at"`
	UpdatedAt         time.Time        `json:"updated_at"`

	// The detail form's fields.
	HTML            string                   `json:"html,omitempty"`
	Text            string                   `json:"text,omitempty"`
	Attachments     []OutboundAttachmentInfo `json:"attachments,omitempty"`
	DeliverySummary map[string]int           `json:"delivery_summary,omitempty"` // recipients per delivery status
	Recipients      []OutboundRecipient      `json:"recipients,omitempty"`
	Events          []OutboundEvent          `json:"events,omitempty"` // oldest first
}

// Final reports whether the email's status will not change again.
func (e OutboundEmail) Final() bool { return e.Status == "sent" || e.Status == "failed" }

// OutboundAttachmentInfo is an attachment of a sent email. Its bytes can be
// read with OutboundAttachment until ContentExpiredAt is set.
type OutboundAttachmentInfo struct {
	ID               string     `json:"id"`
	Filename         string     `json:"filename"`
	ContentType      string     `json:"content_type"`
	Size             int64      `json:"size"`
	ContentID        string     `json:"content_id,omitempty"`
	Disposition      string     `json:"disposition"`
	ContentExpiredAt *time.Time `json:"content_expired_at,omitempty"`
}

// OutboundRecipient is one recipient of an outbound email and what happened
// to it. At holds the time of each delivery status it reached ("sent",
// "delivered", "bounced", ...).
type OutboundRecipient struct {
	ID                     string `json:"id"`
	Type                   string `json:"type"` // to, cc or bcc
	Email                  string `json:"email"`
	Name                   string `json:"name,omitempty"`
	DeliveryStatus         string `json:"delivery_status"`
	LastEventType          string `json:"last_event_type,omitempty"`
	LastSMTPCode           string `json:"last_smtp_code,omitempty"`
	LastEnhancedStatusCode string `json:"last_enhanced_status_code,omitempty"`
	LastSMTPResponse       string `json:"last_smtp_response,omitempty"`
	AttemptCount           int    `json:"attempt_count"`
	BounceType             string `json:"bounce_type,omitempty"`
	BounceSubtype          string `json:"bounce_subtype,omitempty"`
	BounceClassification   string `json:"bounce_classification,omitempty"`
	ComplaintFeedbackType  string `json:"complaint_feedback_type,omitempty"`

	LastEventAt    *time.Time `json:"last_event_at,omitempty"`
	AcceptedAt     *time.Time `json:"accepted_at,omitempty"`
	QueuedAt       *time.Time `json:"queued_at,omitempty"`
	SentAt         *time.Time `json:"sent_at,omitempty"`
	DelayedAt      *time.Time `json:"delayed_at,omitempty"`
	DeferredAt     *time.Time `json:"deferred_at,omitempty"`
	DeliveredAt    *time.Time `json:"delivered_at,omitempty"`
	BouncedAt      *time.Time `json:"bounced_at,omitempty"`
	ExpiredAt      *time.Time `json:"expired_at,omitempty"`
	ComplainedAt   *time.Time `json:"complained_at,omitempty"`
	UnsubscribedAt *time.Time `json:"unsubscribed_at,omitempty"`
	SuppressedAt   *time.Time `json:"suppressed_at,omitempty"`
	RejectedAt     *time.Time `json:"rejected_at,omitempty"`
	FailedAt       *time.Time `json:"failed_at,omitempty"`
	CancelledAt    *time.Time `json:"cancelled_at,omitempty"`
}

// OutboundEvent is one change of one or more recipients' delivery status.
type OutboundEvent struct {
	ID                string                   `json:"id"`
	Provider          string                   `json:"provider,omitempty"`
	ProviderMessageID string                   `json:"provider_message_id,omitempty"`
	ProviderEventID   string                   `json:"provider_event_id,omitempty"`
	EventType         string                   `json:"event_type"`
	EventSubtype      string                   `json:"event_subtype,omitempty"`
	OccurredAt        time.Time                `json:"occurred_at"`
	CreatedAt         time.Time                `json:"created_at"`
	Recipients        []OutboundEventRecipient `json:"recipients"`
}

// OutboundEventRecipient is a recipient an event concerns, with the SMTP
// details of that event.
type OutboundEventRecipient struct {
	ID                   string `json:"id"`
	RecipientID          string `json:"outbound_email_recipient_id"`
	Email                string `json:"email"`
	SMTPCode             string `json:"smtp_code,omitempty"`
	EnhancedStatusCode   string `json:"enhanced_status_code,omitempty"`
	SMTPResponse         string `json:"smtp_response,omitempty"`
	DiagnosticCode       string `json:"diagnostic_code,omitempty"`
	Action               string `json:"action,omitempty"`
	AttemptCount         int    `json:"attempt_count"`
	BounceClassification string `json:"bounce_classification,omitempty"`
}

// OutboundQuery is a page of the organisation's outbound emails, newest
// first. Zero fields are left out: 20 emails of every status and type.
type OutboundQuery struct {
	Limit  int    // 1 to 100
	Offset int    //
	Status string // queued, sending, sent or failed
	Type   string // new, reply or forward
}

// OutboundPage is one page of outbound emails.
type OutboundPage struct {
	TotalCount int `json:"total_count"`
	Options    struct {
		Limit  int    `json:"limit"`
		Offset int    `json:"offset"`
		Status string `json:"status,omitempty"`
		Type   string `json:"type,omitempty"`
	} `json:"options"`
	Data []OutboundEmail `json:"data"`
}

// OutboundAttachmentContent is an attachment's bytes as sent.
type OutboundAttachmentContent struct {
	ID          string `json:"id"`
	Filename    string `json:"filename"`
	ContentType string `json:"content_type"`
	Size        int64  `json:"size"`
	Content     []byte `json:"content_base64"`
}

// Send sends a new email from namespace (POST /api/emails/send). The email is
// queued: follow it with OutboundEmail or WaitForOutbound.
func (c *Client) Send(ctx context.Context, namespace string, req SendRequest) (OutboundEmail, error) {
	var out OutboundEmail
	q := url.Values{"namespace": {namespace}}
	return out, c.do(ctx, request{method: http.MethodPost, path: "/api/emails/send", query: q, body: req}, &out)
}

// Reply replies to the received email emailID from its namespace
// (POST /api/emails/{emailId}/reply).
func (c *Client) Reply(ctx context.Context, emailID string, req ReplyRequest) (OutboundEmail, error) {
	var out OutboundEmail
	return out, c.do(ctx, request{method: http.MethodPost, path: "/api/emails/" + seg(emailID) + "/reply", body: req}, &out)
}

// Forward forwards the received email emailID from its namespace
// (POST /api/emails/{emailId}/forward).
func (c *Client) Forward(ctx context.Context, emailID string, req ForwardRequest) (OutboundEmail, error) {
	var out OutboundEmail
	return out, c.do(ctx, request{method: http.MethodPost, path: "/api/emails/" + seg(emailID) + "/forward", body: req}, &out)
}

// OutboundEmail returns an outbound email with its recipients, events and
// attachments (GET /api/emails/outbound/{id}).
func (c *Client) OutboundEmail(ctx context.Context, id string) (OutboundEmail, error) {
	var out OutboundEmail
	return out, c.do(ctx, request{method: http.MethodGet, path: "/api/emails/outbound/" + seg(id)}, &out)
}

// OutboundEmails lists the organisation's outbound emails, newest first
// (GET /api/emails/outbound).
func (c *Client) OutboundEmails(ctx context.Context, q OutboundQuery) (OutboundPage, error) {
	v := url.Values{}
	setInt(v, "limit", q.Limit)
	setInt(v, "offset", q.Offset)
	setString(v, "status", q.Status)
	setString(v, "type", q.Type)
	var out OutboundPage
	return out, c.do(ctx, request{method: http.MethodGet, path: "/api/emails/outbound", query: v}, &out)
}

// OutboundAttachment returns the bytes of an outbound email's attachment; an
// *Error with status 410 once they have expired.
func (c *Client) OutboundAttachment(ctx context.Context, emailID, attachmentID string) (OutboundAttachmentContent, error) {
	var out OutboundAttachmentContent
	path := "/api/emails/outbound/" + seg(emailID) + "/attachments/" + seg(attachmentID)
	return out, c.do(ctx, request{method: http.MethodGet, path: path}, &out)
}

// CancelOutbound cancels the recipients of an outbound email not yet
// attempted, and returns the email as it then stands
// (POST /api/emails/outbound/{id}/cancel).
func (c *Client) CancelOutbound(ctx context.Context, id string) (OutboundEmail, error) {
	var out OutboundEmail
	return out, c.do(ctx, request{method: http.MethodPost, path: "/api/emails/outbound/" + seg(id) + "/cancel"}, &out)
}

// WaitForOutbound reads the outbound email id until its status is final (sent
// or failed) and returns it, or fails when ctx ends. The server has no held
// wait for outbound email: it is read every interval (250 ms when zero).
func (c *Client) WaitForOutbound(ctx context.Context, id string, interval time.Duration) (OutboundEmail, error) {
	return poll(ctx, interval, func() (OutboundEmail, bool, error) {
		e, err := c.OutboundEmail(ctx, id)
		return e, e.Final(), err
	})
}

// poll calls get every interval until it reports done, fails, or ctx ends.
func poll[T any](ctx context.Context, interval time.Duration, get func() (T, bool, error)) (T, error) {
	if interval <= 0 {
		interval = 250 * time.Millisecond
	}
	for {
		v, done, err := get()
		if err != nil || done {
			return v, err
		}
		t := time.NewTimer(interval)
		select {
		case <-ctx.Done():
			t.Stop()
			return v, waitError(ctx, ctx.Err())
		case <-t.C:
		}
	}
}
