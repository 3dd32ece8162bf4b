package outstore

import (
	"bytes"
	"crypto/rand"
	"encoding/base32"
	"encoding/json"
	"strconv"
	"strings"
	"time"

	"github.com/catchbox/catchbox/internal/httpx"
)

// Type is how an outbound email was made (the seed's OutboundEmail type).
type Type string

// The types of an outbound email.
const (
	TypeNew     Type = "new"
	TypeReply   Type = "reply"
	TypeForward Type = "forward"
)

// Status is an outbound email's status, derived from its recipients'.
type Status string

// The statuses of an outbound email.
const (
	StatusQueued  Status = "queued"
	StatusSending Status = "sending"
	StatusSent    Status = "sent"
	StatusFailed  Status = "failed"
)

// RecipientType is the header a recipient was named in.
type RecipientType string

// The recipient types.
const (
	To  RecipientType = "to"
	Cc  RecipientType = "cc"
	Bcc RecipientType = "bcc"
)

// DeliveryStatus is a recipient's delivery_status (the seed's States).
type DeliveryStatus string

// The delivery statuses, in the seed's order.
const (
	DeliveryPending      DeliveryStatus = "pending"
	DeliveryAccepted     DeliveryStatus = "accepted"
	DeliveryQueued       DeliveryStatus = "queued"
	DeliverySent         DeliveryStatus = "sent"
	DeliveryDelayed      DeliveryStatus = "delayed"
	DeliveryDeferred     DeliveryStatus = "deferred"
	DeliveryDelivered    DeliveryStatus = "delivered"
	DeliveryBounced      DeliveryStatus = "bounced"
	DeliveryExpired      DeliveryStatus = "expired"
	DeliveryComplained   DeliveryStatus = "complained"
	DeliveryUnsubscribed DeliveryStatus = "unsubscribed"
	DeliverySuppressed   DeliveryStatus = "suppressed"
	DeliveryRejected     DeliveryStatus = "rejected"
	DeliveryFailed       DeliveryStatus = "failed"
	DeliveryCancelled    DeliveryStatus = "cancelled"
)

// DeliveryStatuses lists every delivery status in the seed's order: the keys of
// delivery_summary.
var DeliveryStatuses = []DeliveryStatus{DeliveryPending, DeliveryAccepted, DeliveryQueued, DeliverySent,
	DeliveryDelayed, DeliveryDeferred, DeliveryDelivered, DeliveryBounced, DeliveryExpired, DeliveryComplained,
	DeliveryUnsubscribed, DeliverySuppressed, DeliveryRejected, DeliveryFailed, DeliveryCancelled}

// timedStatuses are the statuses with a <status>_at field on the recipient, in
// the seed's order (every one but pending).
var timedStatuses = DeliveryStatuses[1:]

// EventType is an event's event_type (the seed's Events).
type EventType string

// The event types. Each but opened and clicked has the delivery status of the
// same name.
const (
	EventAccepted     EventType = "accepted"
	EventQueued       EventType = "queued"
	EventSent         EventType = "sent"
	EventFailed       EventType = "failed"
	EventRejected     EventType = "rejected"
	EventDelayed      EventType = "delayed"
	EventDeferred     EventType = "deferred"
	EventDelivered    EventType = "delivered"
	EventBounced      EventType = "bounced"
	EventExpired      EventType = "expired"
	EventComplained   EventType = "complained"
	EventUnsubscribed EventType = "unsubscribed"
	EventSuppressed   EventType = "suppressed"
	EventCancelled    EventType = "cancelled"
	EventOpened       EventType = "opened"
	EventClicked      EventType = "clicked"
)

// Providers: who handled a recipient (contract section 5).
const (
	ProviderInternal = "internal" // delivered into an inbox of the sending namespace
	ProviderSMTP     = "smtp"     // handed to the relay (CATCHBOX_RELAY_URL)
)

// Address is the seed's OutboundEmailAddress; Name "" is absent.
type Address struct {
	Email string `json:"email"`
	Name  string `json:"name,omitempty"`
}

// Email is an outbound email without its bodies, recipients, attachments and
// events: the seed's summary form, which its MarshalJSON writes. Times that
// have not happened are zero (absent in JSON).
type Email struct {
	ID              string
	OrgID           string
	NamespaceID     string
	Type            Type
	Status          Status
	From            Address
	ReplyTo         *Address // nil: none
	Subject         string
	RecipientCount  int
	AttachmentCount int
	// MessageID is the Message-ID header's value, angle brackets included.
	MessageID string
	// SourceEmailID is the inbound email a reply or forward was made from.
	SourceEmailID string
	// ReturnPathToken is the random token of the first form of return paths,
	// still stored (return_path_token is NOT NULL UNIQUE) but read by nothing:
	// return paths are routing.Rule.ReturnPath's keyed form of the message id.
	ReturnPathToken string
	// HasExternal: a recipient is outside the sending namespace, so the
	// message counts as outbound usage.
	HasExternal bool
	// Provider and ProviderMessageID are those of the first event that named
	// them: who first took the message, and its id there.
	Provider          string
	ProviderMessageID string
	FailureReason     string
	QueuedAt          time.Time
	SendingAt         time.Time
	SentAt            time.Time
	FailedAt          time.Time
	CreatedAt         time.Time
	UpdatedAt         time.Time
}

// ListItem is the seed's list form: the summary and the recipients.
type ListItem struct {
	Email
	Recipients []Recipient
}

// Detail is the seed's detail form (get by id): everything about the email.
type Detail struct {
	Email
	HTML        string
	Text        string
	Attachments []Attachment
	Recipients  []Recipient
	Events      []Event // oldest first
}

// Recipient is the seed's OutboundRecipient. At holds the <status>_at times,
// each the latest event of that type for the recipient (a status without an
// event is absent from the map).
type Recipient struct {
	ID     string
	Type   RecipientType
	Email  string
	Name   string
	Status DeliveryStatus
	// Internal: the address is in the sending namespace, delivered into its
	// inbox rather than relayed.
	Internal               bool
	LastEventType          EventType
	LastEventAt            time.Time
	At                     map[DeliveryStatus]time.Time
	LastSMTPCode           string
	LastEnhancedStatusCode string
	LastSMTPResponse       string
	AttemptCount           int
	BounceType             string
	BounceSubtype          string
	BounceClassification   string
	ComplaintFeedbackType  string
}

// Attachment is an outbound attachment's metadata (the detail form's
// attachments). ContentExpiredAt is set once the bytes have expired (the time
// they did); ContentExpiresAt is when they do.
type Attachment struct {
	ID               string
	Filename         string
	ContentType      string
	Size             int64
	ContentID        string // without angle brackets; "" when none
	Disposition      string // "attachment" or "inline"
	ContentExpiresAt time.Time
	ContentExpiredAt time.Time
}

// Dispositions of an attachment.
const (
	DispositionAttachment = "attachment"
	DispositionInline     = "inline"
)

// Event is the seed's OutboundEvent.
type Event struct {
	ID                string
	Type              EventType
	Subtype           string
	Provider          string
	ProviderMessageID string
	ProviderEventID   string
	OccurredAt        time.Time
	CreatedAt         time.Time
	Recipients        []EventRecipient
}

// EventRecipient is one recipient of an event, with what the event says of it.
// AttemptCount is the recipient's count of attempts once the event was
// recorded.
type EventRecipient struct {
	ID                   string
	RecipientID          string
	Email                string
	SMTPCode             string
	EnhancedStatusCode   string
	SMTPResponse         string
	DiagnosticCode       string
	Action               string
	AttemptCount         int
	BounceClassification string
}

// DeliverySummary counts recipients by delivery status. It is written with a
// key for every status, zeros included, in the seed's order.
type DeliverySummary map[DeliveryStatus]int

// Summarize counts the recipients' statuses.
func Summarize(rs []Recipient) DeliverySummary {
	s := DeliverySummary{}
	for _, r := range rs {
		s[r.Status]++
	}
	return s
}

// DeliverySummary is the seed's delivery_summary of the email.
func (d Detail) DeliverySummary() DeliverySummary { return Summarize(d.Recipients) }

// MarshalJSON writes every status's count, in the seed's order.
func (s DeliverySummary) MarshalJSON() ([]byte, error) {
	var b strings.Builder
	b.WriteByte('{')
	for i, st := range DeliveryStatuses {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(`"` + string(st) + `":`)
		b.WriteString(strconv.Itoa(s[st]))
	}
	b.WriteByte('}')
	return []byte(b.String()), nil
}

// emailJSON is the seed's OutboundEmail in all three forms; the fields of the
// larger forms are nil in the smaller ones.
type emailJSON struct {
	ID                string           `json:"id"`
	OrganisationID    string           `json:"organisation_id"`
	Type              Type             `json:"type"`
	Status            Status           `json:"status"`
	From              Address          `json:"from"`
	ReplyTo           *Address         `json:"reply_to,omitempty"`
	Subject           string           `json:"subject"`
	RecipientCount    int              `json:"recipient_count"`
	AttachmentCount   int              `json:"attachment_count"`
	MessageID         string           `json:"message_id"`
	Provider          string           `json:"provider,omitempty"`
	ProviderMessageID string           `json:"provider_message_id,omitempty"`
	FailureReason     string           `json:"failure_reason,omitempty"`
	QueuedAt          string           `json:"queued_at"`
	SendingAt         string           `json:"sending_at,omitempty"`
	SentAt            string           `json:"sent_at,omitempty"`
	FailedAt          string           `json:"failed_at,omitempty"`
	CreatedAt         string           `json:"created_at"`
	UpdatedAt         string           `json:"updated_at"`
	HTML              string           `json:"html,omitempty"`
	Text              string           `json:"text,omitempty"`
	Attachments       *[]Attachment    `json:"attachments,omitempty"`
	DeliverySummary   *DeliverySummary `json:"delivery_summary,omitempty"`
	Recipients        *[]Recipient     `json:"recipients,omitempty"`
	Events            *[]Event         `json:"events,omitempty"`
}

func (e Email) toJSON() emailJSON {
	return emailJSON{ID: e.ID, OrganisationID: e.OrgID, Type: e.Type, Status: e.Status, From: e.From,
		ReplyTo: e.ReplyTo, Subject: e.Subject, RecipientCount: e.RecipientCount, AttachmentCount: e.AttachmentCount,
		MessageID: e.MessageID, Provider: e.Provider, ProviderMessageID: e.ProviderMessageID,
		FailureReason: e.FailureReason, QueuedAt: httpx.Time(e.QueuedAt), SendingAt: optTime(e.SendingAt),
		SentAt: optTime(e.SentAt), FailedAt: optTime(e.FailedAt), CreatedAt: httpx.Time(e.CreatedAt),
		UpdatedAt: httpx.Time(e.UpdatedAt)}
}

// MarshalJSON writes the summary form, the answer to send, reply and forward.
func (e Email) MarshalJSON() ([]byte, error) { return marshalJSON(e.toJSON()) }

// MarshalJSON writes the list form: the summary and the recipients.
func (l ListItem) MarshalJSON() ([]byte, error) {
	j := l.Email.toJSON()
	rs := nonNil(l.Recipients)
	j.Recipients = &rs
	return marshalJSON(j)
}

// MarshalJSON writes the detail form.
func (d Detail) MarshalJSON() ([]byte, error) {
	j := d.Email.toJSON()
	j.HTML, j.Text = d.HTML, d.Text
	as, rs, es := nonNil(d.Attachments), nonNil(d.Recipients), nonNil(d.Events)
	sum := d.DeliverySummary()
	j.Attachments, j.Recipients, j.Events, j.DeliverySummary = &as, &rs, &es, &sum
	return marshalJSON(j)
}

// nonNil makes an empty list [] in JSON rather than null.
func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}

// optTime formats t, or "" (left out) when it is zero.
func optTime(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return httpx.Time(t)
}

type recipientJSON struct {
	ID                     string         `json:"id"`
	Type                   RecipientType  `json:"type"`
	Email                  string         `json:"email"`
	Name                   string         `json:"name,omitempty"`
	DeliveryStatus         DeliveryStatus `json:"delivery_status"`
	LastEventType          EventType      `json:"last_event_type,omitempty"`
	LastEventAt            string         `json:"last_event_at,omitempty"`
	AcceptedAt             string         `json:"accepted_at,omitempty"`
	QueuedAt               string         `json:"queued_at,omitempty"`
	SentAt                 string         `json:"sent_at,omitempty"`
	DelayedAt              string         `json:"delayed_at,omitempty"`
	DeferredAt             string         `json:"deferred_at,omitempty"`
	DeliveredAt            string         `json:"delivered_at,omitempty"`
	BouncedAt              string         `json:"bounced_at,omitempty"`
	ExpiredAt              string         `json:"expired_at,omitempty"`
	ComplainedAt           string         `json:"complained_at,omitempty"`
	UnsubscribedAt         string         `json:"unsubscribed_at,omitempty"`
	SuppressedAt           string         `json:"suppressed_at,omitempty"`
	RejectedAt             string         `json:"rejected_at,omitempty"`
	FailedAt               string         `json:"failed_at,omitempty"`
	CancelledAt            string         `json:"cancelled_at,omitempty"`
	LastSMTPCode           string         `json:"last_smtp_code,omitempty"`
	LastEnhancedStatusCode string         `json:"last_enhanced_status_code,omitempty"`
	LastSMTPResponse       string         `json:"last_smtp_response,omitempty"`
	AttemptCount           int            `json:"attempt_count"`
	BounceType             string         `json:"bounce_type,omitempty"`
	BounceSubtype          string         `json:"bounce_subtype,omitempty"`
	BounceClassification   string         `json:"bounce_classification,omitempty"`
	ComplaintFeedbackType  string         `json:"complaint_feedback_type,omitempty"`
}

// MarshalJSON writes the seed's OutboundRecipient.
func (r Recipient) MarshalJSON() ([]byte, error) {
	at := func(s DeliveryStatus) string { return optTime(r.At[s]) }
	return marshalJSON(recipientJSON{ID: r.ID, Type: r.Type, Email: r.Email, Name: r.Name,
		DeliveryStatus: r.Status, LastEventType: r.LastEventType, LastEventAt: optTime(r.LastEventAt),
		AcceptedAt: at(DeliveryAccepted), QueuedAt: at(DeliveryQueued), SentAt: at(DeliverySent),
		DelayedAt: at(DeliveryDelayed), DeferredAt: at(DeliveryDeferred), DeliveredAt: at(DeliveryDelivered),
		BouncedAt: at(DeliveryBounced), ExpiredAt: at(DeliveryExpired), ComplainedAt: at(DeliveryComplained),
		UnsubscribedAt: at(DeliveryUnsubscribed), SuppressedAt: at(DeliverySuppressed),
		RejectedAt: at(DeliveryRejected), FailedAt: at(DeliveryFailed), CancelledAt: at(DeliveryCancelled),
		LastSMTPCode: r.LastSMTPCode, LastEnhancedStatusCode: r.LastEnhancedStatusCode,
		LastSMTPResponse: r.LastSMTPResponse, AttemptCount: r.AttemptCount, BounceType: r.BounceType,
		BounceSubtype: r.BounceSubtype, BounceClassification: r.BounceClassification,
		ComplaintFeedbackType: r.ComplaintFeedbackType})
}

type attachmentJSON struct {
	ID               string `json:"id"`
	Filename         string `json:"filename"`
	ContentType      string `json:"content_type"`
	Size             int64  `json:"size"`
	ContentID        string `json:"content_id,omitempty"`
	Disposition      string `json:"disposition"`
	ContentExpiredAt string `json:"content_expired_at,omitempty"`
}

// MarshalJSON writes an attachment of the detail form; content_expired_at
// appears once the bytes have expired.
func (a Attachment) MarshalJSON() ([]byte, error) {
	return marshalJSON(attachmentJSON{ID: a.ID, Filename: a.Filename, ContentType: a.ContentType, Size: a.Size,
		ContentID: a.ContentID, Disposition: a.Disposition, ContentExpiredAt: optTime(a.ContentExpiredAt)})
}

type eventJSON struct {
	ID                string           `json:"id"`
	Provider          string           `json:"provider,omitempty"`
	ProviderMessageID string           `json:"provider_message_id,omitempty"`
	ProviderEventID   string           `json:"provider_event_id,omitempty"`
	EventType         EventType        `json:"event_type"`
	EventSubtype      string           `json:"event_subtype,omitempty"`
	OccurredAt        string           `json:"occurred_at"`
	CreatedAt         string           `json:"created_at"`
	Recipients        []EventRecipient `json:"recipients"`
}

// MarshalJSON writes the seed's OutboundEvent.
func (e Event) MarshalJSON() ([]byte, error) {
	return marshalJSON(eventJSON{ID: e.ID, Provider: e.Provider, ProviderMessageID: e.ProviderMessageID,
		ProviderEventID: e.ProviderEventID, EventType: e.Type, EventSubtype: e.Subtype,
		OccurredAt: httpx.Time(e.OccurredAt), CreatedAt: httpx.Time(e.CreatedAt), Recipients: nonNil(e.Recipients)})
}

type eventRecipientJSON struct {
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

// MarshalJSON writes one entry of an OutboundEvent's recipients.
func (r EventRecipient) MarshalJSON() ([]byte, error) {
	return marshalJSON(eventRecipientJSON(r))
}

var tokenEncoding = base32.StdEncoding.WithPadding(base32.NoPadding)

// newReturnPathToken returns a fresh token: 128 random bits, lower-case
// base32 (letters and 2 to 7, safe in any local part and case-insensitive).
func newReturnPathToken() string {
	var b [16]byte
	rand.Read(b[:])
	return strings.ToLower(tokenEncoding.EncodeToString(b[:]))
}

// marshalJSON is json.Marshal without its HTML escaping: the API writes <, >
// and & as they are (httpx.WriteJSON), and a message_id or an html body
// escaped as \u003c would read badly in every response.
func marshalJSON(v any) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n")), nil
}
