package outstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/catchbox/catchbox/internal/store"
	"github.com/catchbox/catchbox/internal/tenant"
)

// Errors of the store; the HTTP layer maps them to statuses.
var (
	// ErrNotFound: no such outbound email, attachment or recipient, or one
	// of another organisation.
	ErrNotFound = store.ErrNotFound
	// ErrContentExpired: the attachment's bytes, or the built message, have
	// expired (410 for attachment content); the metadata stays.
	ErrContentExpired = errors.New("content has expired")
)

// DefaultContentTTL is how long the bytes of attachments and of the built
// message are kept (contract section 5: 7 days).
const DefaultContentTTL = 7 * 24 * time.Hour

// Store keeps outbound emails, their recipients, attachments and events.
type Store struct {
	db     *store.DB
	events Events
	// Now is the clock (time.Now); tests move it.
	Now func() time.Time
	// ContentTTL is how long attachment bytes and the built message are kept
	// after creation (DefaultContentTTL).
	ContentTTL time.Duration
}

// NewStore returns the outbound store over db. contentTTL is how long
// attachment bytes and the built message are kept (DefaultContentTTL when not
// positive); events, which may be nil, receives the outbound.event and
// outbound.status events in the transaction that records them (webhook.go).
func NewStore(db *store.DB, contentTTL time.Duration, events Events) *Store {
	if contentTTL <= 0 {
		contentTTL = DefaultContentTTL
	}
	return &Store{db: db, Now: time.Now, ContentTTL: contentTTL, events: events}
}

// now is the clock as stored: UTC, whole milliseconds.
func (s *Store) now() time.Time { return s.Now().UTC().Truncate(time.Millisecond) }

// Timestamp is the clock as the store records times: UTC, whole
// milliseconds. What an operation stamps itself (a message's Date) uses it,
// so that it agrees with the rows written.
func (s *Store) Timestamp() time.Time { return s.now() }

// NewEmail is an outbound email to create, checked and built by the caller.
type NewEmail struct {
	// ID is "" for a fresh one; a caller may choose it first (NewID), to name
	// the message in its Message-ID.
	ID            string
	OrgID         string
	NamespaceID   string
	Type          Type
	From          Address
	ReplyTo       *Address
	Subject       string
	HTML          string
	Text          string
	MessageID     string // the Message-ID header's value, angle brackets included
	SourceEmailID string // the inbound email replied to or forwarded
	Recipients    []NewRecipient
	Attachments   []NewAttachment
	// Source is the RFC 5322 message as built; every attempt sends it as it is.
	Source []byte
}

// NewRecipient is a recipient of a new email, in header order (to, cc, bcc).
type NewRecipient struct {
	Type  RecipientType
	Email string
	Name  string
	// Internal: in the sending namespace, delivered into its inbox.
	Internal bool
	// Suppressed is the reason the organisation no longer sends to the
	// address (a suppressions row), "" when it does: such a recipient is
	// recorded suppressed at creation, with no attempt.
	Suppressed string
}

// NewAttachment is an attachment of a new email, its bytes decoded.
type NewAttachment struct {
	Filename    string
	ContentType string
	ContentID   string // without angle brackets
	Disposition string // DispositionAttachment or DispositionInline
	Data        []byte
}

// NewID returns the id of a new outbound email, recipient or event: a UUID
// version 7, as every id (contract section 4).
func NewID() string { return tenant.NewID() }

// checkNew refuses what the schema would, with a clearer error: the caller
// validates requests, so these are programming errors.
func checkNew(in NewEmail) error {
	switch {
	case in.OrgID == "" || in.NamespaceID == "":
		return errors.New("outbound email without organisation or namespace")
	case in.Type != TypeNew && in.Type != TypeReply && in.Type != TypeForward:
		return fmt.Errorf("outbound email type %q", in.Type)
	case len(in.Recipients) == 0:
		return errors.New("outbound email without recipients")
	case in.MessageID == "" || len(in.Source) == 0:
		return errors.New("outbound email without its built message")
	}
	for _, r := range in.Recipients {
		if r.Type != To && r.Type != Cc && r.Type != Bcc {
			return fmt.Errorf("recipient type %q", r.Type)
		}
	}
	for _, a := range in.Attachments {
		if a.Disposition != DispositionAttachment && a.Disposition != DispositionInline {
			return fmt.Errorf("attachment disposition %q", a.Disposition)
		}
	}
	return nil
}

// Create stores a new outbound email in tx: the email, queued; its recipients;
// its attachments and built message, kept for ContentTTL; a count of outbound
// usage if a recipient is external; and the queued event of every recipient.
// The caller enqueues its delivery in the same tx (EnqueueDelivery), so that
// an email exists exactly when its delivery does.
func (s *Store) Create(ctx context.Context, tx *store.Tx, in NewEmail) (Email, error) {
	if err := checkNew(in); err != nil {
		return Email{}, err
	}
	now := s.now()
	e := Email{ID: in.ID, OrgID: in.OrgID, NamespaceID: in.NamespaceID, Type: in.Type, Status: StatusQueued,
		From: in.From, ReplyTo: in.ReplyTo, Subject: in.Subject, RecipientCount: len(in.Recipients),
		AttachmentCount: len(in.Attachments), MessageID: in.MessageID, SourceEmailID: in.SourceEmailID,
		ReturnPathToken: newReturnPathToken(), QueuedAt: now, CreatedAt: now, UpdatedAt: now}
	if e.ID == "" {
		e.ID = NewID()
	}
	for _, r := range in.Recipients {
		e.HasExternal = e.HasExternal || !r.Internal
	}
	var replyEmail any
	var replyName string
	if e.ReplyTo != nil {
		replyEmail, replyName = e.ReplyTo.Email, e.ReplyTo.Name
	}
	_, err := tx.Exec(ctx, `INSERT INTO outbound_emails (id, org_id, namespace_id, type, status, from_email, from_name,
		reply_to_email, reply_to_name, subject, message_id, source_email_id, return_path_token, has_external,
		recipient_count, attachment_count, queued_at, created_at, updated_at, body_html, body_text)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		e.ID, e.OrgID, e.NamespaceID, e.Type, e.Status, e.From.Email, e.From.Name, replyEmail, replyName,
		e.Subject, e.MessageID, nullString(e.SourceEmailID), e.ReturnPathToken, e.HasExternal,
		e.RecipientCount, e.AttachmentCount, ms(now), ms(now), ms(now), in.HTML, in.Text)
	if err != nil {
		return Email{}, fmt.Errorf("insert outbound email: %w", err)
	}
	queued := NewEvent{Type: EventQueued, OccurredAt: now}
	for i, r := range in.Recipients {
		id := NewID()
		_, err := tx.Exec(ctx, `INSERT INTO outbound_recipients (id, outbound_email_id, position, type, email, name,
			internal, delivery_status) VALUES (?, ?, ?, ?, ?, ?, ?, ?)`,
			id, e.ID, i, r.Type, r.Email, r.Name, r.Internal, DeliveryPending)
		if err != nil {
			return Email{}, fmt.Errorf("insert outbound recipient: %w", err)
		}
		queued.Recipients = append(queued.Recipients, NewEventRecipient{RecipientID: id})
	}
	expires := ms(now.Add(s.ContentTTL))
	for i, a := range in.Attachments {
		_, err := tx.Exec(ctx, `INSERT INTO outbound_attachments (id, outbound_email_id, position, filename,
			content_type, content_id, disposition, size, content_expires_at, data) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
			NewID(), e.ID, i, a.Filename, a.ContentType, a.ContentID, a.Disposition, len(a.Data), expires,
			nonNil(a.Data))
		if err != nil {
			return Email{}, fmt.Errorf("insert outbound attachment: %w", err)
		}
	}
	_, err = tx.Exec(ctx, "INSERT INTO outbound_sources (outbound_email_id, size, expires_at, data) VALUES (?, ?, ?, ?)",
		e.ID, len(in.Source), expires, in.Source)
	if err != nil {
		return Email{}, fmt.Errorf("insert outbound message: %w", err)
	}
	if e.HasExternal {
		_, err = tx.Exec(ctx, `INSERT INTO outbound_usage (org_id, month, messages) VALUES (?, ?, 1)
			ON CONFLICT (org_id, month) DO UPDATE SET messages = outbound_usage.messages + 1`, e.OrgID, usageMonth(now))
		if err != nil {
			return Email{}, fmt.Errorf("count outbound usage: %w", err)
		}
	}
	if _, err := s.RecordEvent(ctx, tx, e.ID, queued); err != nil {
		return Email{}, err
	}
	if err := s.recordSuppressed(ctx, tx, e.ID, in.Recipients, queued.Recipients); err != nil {
		return Email{}, err
	}
	return e, nil
}

// recordSuppressed records the suppressed event of the recipients of a new
// email whose addresses are suppressed, one event per reason: they become
// final at once, so the delivery job never takes them as pending. ids are the
// recipients' ids, in the order of rs.
func (s *Store) recordSuppressed(ctx context.Context, tx *store.Tx, emailID string, rs []NewRecipient, ids []NewEventRecipient) error {
	byReason := map[string][]NewEventRecipient{}
	var reasons []string
	for i, r := range rs {
		if r.Suppressed == "" {
			continue
		}
		if byReason[r.Suppressed] == nil {
			reasons = append(reasons, r.Suppressed)
		}
		byReason[r.Suppressed] = append(byReason[r.Suppressed], NewEventRecipient{RecipientID: ids[i].RecipientID})
	}
	for _, reason := range reasons {
		if _, err := s.RecordEvent(ctx, tx, emailID, NewEvent{Type: EventSuppressed, Subtype: reason,
			Recipients: byReason[reason]}); err != nil {
			return err
		}
	}
	return nil
}

// querier is what reads need: the store, or a transaction.
type querier interface {
	Query(ctx context.Context, q string, args ...any) (*sql.Rows, error)
	QueryRow(ctx context.Context, q string, args ...any) *sql.Row
}

const emailColumns = `id, org_id, namespace_id, type, status, from_email, from_name, reply_to_email, reply_to_name,
	subject, message_id, source_email_id, return_path_token, has_external, recipient_count, attachment_count,
	provider, provider_message_id, failure_reason, queued_at, sending_at, sent_at, failed_at, created_at, updated_at`

func scanEmail(row interface{ Scan(...any) error }) (Email, error) {
	var e Email
	var replyEmail, replyName string
	err := row.Scan(&e.ID, &e.OrgID, &e.NamespaceID, &e.Type, &e.Status, &e.From.Email, &e.From.Name,
		optString{&replyEmail}, &replyName, &e.Subject, &e.MessageID, optString{&e.SourceEmailID},
		&e.ReturnPathToken, &e.HasExternal, &e.RecipientCount, &e.AttachmentCount, optString{&e.Provider},
		optString{&e.ProviderMessageID}, optString{&e.FailureReason}, msTime{&e.QueuedAt}, msTime{&e.SendingAt},
		msTime{&e.SentAt}, msTime{&e.FailedAt}, msTime{&e.CreatedAt}, msTime{&e.UpdatedAt})
	if errors.Is(err, sql.ErrNoRows) {
		return Email{}, ErrNotFound
	}
	if err != nil {
		return Email{}, fmt.Errorf("read outbound email: %w", err)
	}
	if replyEmail != "" {
		e.ReplyTo = &Address{Email: replyEmail, Name: replyName}
	}
	return e, nil
}

var recipientColumns = `id, outbound_email_id, type, email, name, internal, delivery_status, last_event_type,
	last_event_at, ` + timedColumns() + `, last_smtp_code, last_enhanced_status_code, last_smtp_response,
	attempt_count, bounce_type, bounce_subtype, bounce_classification, complaint_feedback_type`

// timedColumns lists the <status>_at columns of a recipient.
func timedColumns() string {
	cols := make([]string, len(timedStatuses))
	for i, st := range timedStatuses {
		cols[i] = string(st) + "_at"
	}
	return strings.Join(cols, ", ")
}

// scanRecipient reads a row of recipientColumns, and the id of its email.
func scanRecipient(rows *sql.Rows) (string, Recipient, error) {
	var r Recipient
	var emailID string
	times := make([]time.Time, len(timedStatuses))
	dest := []any{&r.ID, &emailID, &r.Type, &r.Email, &r.Name, &r.Internal, &r.Status,
		optString{(*string)(&r.LastEventType)}, msTime{&r.LastEventAt}}
	for i := range times {
		dest = append(dest, msTime{&times[i]})
	}
	dest = append(dest, optString{&r.LastSMTPCode}, optString{&r.LastEnhancedStatusCode},
		optString{&r.LastSMTPResponse}, &r.AttemptCount, optString{&r.BounceType}, optString{&r.BounceSubtype},
		optString{&r.BounceClassification}, optString{&r.ComplaintFeedbackType})
	if err := rows.Scan(dest...); err != nil {
		return "", Recipient{}, fmt.Errorf("read outbound recipient: %w", err)
	}
	r.At = map[DeliveryStatus]time.Time{}
	for i, st := range timedStatuses {
		if !times[i].IsZero() {
			r.At[st] = times[i]
		}
	}
	return emailID, r, nil
}

// Recipients returns the recipients of the email, in order, read in tx: a
// delivery reads them again once it holds the email's row, since a cancel
// may have ended some meanwhile.
func (s *Store) Recipients(ctx context.Context, tx *store.Tx, emailID string) ([]Recipient, error) {
	byEmail, err := recipients(ctx, tx, emailID)
	return byEmail[emailID], err
}

// recipients returns the recipients of the emails with the ids, in order,
// by email id.
func recipients(ctx context.Context, q querier, ids ...string) (map[string][]Recipient, error) {
	out := map[string][]Recipient{}
	if len(ids) == 0 {
		return out, nil
	}
	args := make([]any, len(ids))
	for i, id := range ids {
		args[i] = id
	}
	rows, err := q.Query(ctx, "SELECT "+recipientColumns+" FROM outbound_recipients WHERE outbound_email_id IN "+
		store.Placeholders(len(ids))+" ORDER BY outbound_email_id, position", args...)
	if err != nil {
		return nil, fmt.Errorf("read outbound recipients: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		emailID, r, err := scanRecipient(rows)
		if err != nil {
			return nil, err
		}
		out[emailID] = append(out[emailID], r)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read outbound recipients: %w", err)
	}
	return out, nil
}

// Get returns the email with the id in the organisation's detail form, or
// ErrNotFound (also when it is another organisation's).
func (s *Store) Get(ctx context.Context, orgID, id string) (Detail, error) {
	var d Detail
	err := s.db.InReadTx(ctx, func(tx *store.Tx) error {
		var err error
		d, err = s.detail(ctx, tx, "id = ? AND org_id = ?", id, orgID)
		return err
	})
	return d, err
}

// ByID returns the email with the id in its detail form, whichever
// organisation's it is: for background work (the delivery job).
func (s *Store) ByID(ctx context.Context, id string) (Detail, error) {
	var d Detail
	err := s.db.InReadTx(ctx, func(tx *store.Tx) error {
		var err error
		d, err = s.detail(ctx, tx, "id = ?", id)
		return err
	})
	return d, err
}

// detail reads the one email matching where, with everything of its detail
// form, in one read transaction.
func (s *Store) detail(ctx context.Context, tx *store.Tx, where string, args ...any) (Detail, error) {
	var d Detail
	row := tx.QueryRow(ctx, "SELECT "+emailColumns+", body_html, body_text FROM outbound_emails WHERE "+where, args...)
	var err error
	d.Email, err = scanEmail(scanWith{row, []any{&d.HTML, &d.Text}})
	if err != nil {
		return Detail{}, err
	}
	rs, err := recipients(ctx, tx, d.ID)
	if err != nil {
		return Detail{}, err
	}
	d.Recipients = rs[d.ID]
	if d.Attachments, err = s.attachments(ctx, tx, d.ID); err != nil {
		return Detail{}, err
	}
	if d.Events, err = events(ctx, tx, d.ID); err != nil {
		return Detail{}, err
	}
	return d, nil
}

// scanWith scans a row into a scanner's destinations and then extra ones.
type scanWith struct {
	row   *sql.Row
	extra []any
}

func (s scanWith) Scan(dest ...any) error { return s.row.Scan(append(dest, s.extra...)...) }

const attachmentColumns = "id, filename, content_type, size, content_id, disposition, content_expires_at, data IS NULL"

func (s *Store) scanAttachment(row interface{ Scan(...any) error }) (Attachment, error) {
	var a Attachment
	var gone bool
	if err := row.Scan(&a.ID, &a.Filename, &a.ContentType, &a.Size, &a.ContentID, &a.Disposition,
		msTime{&a.ContentExpiresAt}, &gone); err != nil {
		return Attachment{}, err
	}
	if gone || !a.ContentExpiresAt.After(s.now()) {
		a.ContentExpiredAt = a.ContentExpiresAt
	}
	return a, nil
}

func (s *Store) attachments(ctx context.Context, q querier, emailID string) ([]Attachment, error) {
	rows, err := q.Query(ctx, "SELECT "+attachmentColumns+" FROM outbound_attachments WHERE outbound_email_id = ? ORDER BY position", emailID)
	if err != nil {
		return nil, fmt.Errorf("read outbound attachments: %w", err)
	}
	defer rows.Close()
	var out []Attachment
	for rows.Next() {
		a, err := s.scanAttachment(rows)
		if err != nil {
			return nil, fmt.Errorf("read outbound attachment: %w", err)
		}
		out = append(out, a)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read outbound attachments: %w", err)
	}
	return out, nil
}

// AttachmentContent returns an attachment of the organisation's email and its
// bytes; ErrNotFound when there is no such attachment, ErrContentExpired, with
// the metadata, once its bytes have expired.
func (s *Store) AttachmentContent(ctx context.Context, orgID, emailID, attachmentID string) (Attachment, []byte, error) {
	var data []byte
	row := s.db.QueryRow(ctx, "SELECT a."+strings.ReplaceAll(attachmentColumns, ", ", ", a.")+`, a.data
		FROM outbound_attachments a JOIN outbound_emails e ON e.id = a.outbound_email_id
		WHERE a.id = ? AND a.outbound_email_id = ? AND e.org_id = ?`, attachmentID, emailID, orgID)
	a, err := s.scanAttachment(scanWith{row, []any{&data}})
	if errors.Is(err, sql.ErrNoRows) {
		return Attachment{}, nil, ErrNotFound
	}
	if err != nil {
		return Attachment{}, nil, fmt.Errorf("read outbound attachment: %w", err)
	}
	if !a.ContentExpiredAt.IsZero() {
		return a, nil, ErrContentExpired
	}
	return a, data, nil
}

// Source returns the built message of the email: the bytes every delivery
// attempt sends. ErrContentExpired once it has expired (ContentTTL).
func (s *Store) Source(ctx context.Context, emailID string) ([]byte, error) {
	var data []byte
	var expires int64
	err := s.db.QueryRow(ctx, "SELECT data, expires_at FROM outbound_sources WHERE outbound_email_id = ?", emailID).
		Scan(&data, &expires)
	if errors.Is(err, sql.ErrNoRows) || err == nil && expires <= ms(s.now()) {
		return nil, fmt.Errorf("message of outbound email %s: %w", emailID, ErrContentExpired)
	}
	if err != nil {
		return nil, fmt.Errorf("read message of outbound email %s: %w", emailID, err)
	}
	return data, nil
}

// ExpireContent deletes the attachment bytes and built messages whose time has
// come, keeping the attachments' metadata, and reports how many of each it
// deleted. It is periodic work (store.Every).
func (s *Store) ExpireContent(ctx context.Context) (attachments, messages int64, err error) {
	now := ms(s.now())
	err = s.db.InTx(ctx, func(tx *store.Tx) error {
		res, err := tx.Exec(ctx, "UPDATE outbound_attachments SET data = NULL WHERE content_expires_at <= ? AND data IS NOT NULL", now)
		if err != nil {
			return fmt.Errorf("expire outbound attachments: %w", err)
		}
		attachments, _ = res.RowsAffected()
		res, err = tx.Exec(ctx, "DELETE FROM outbound_sources WHERE expires_at <= ?", now)
		if err != nil {
			return fmt.Errorf("expire outbound messages: %w", err)
		}
		messages, _ = res.RowsAffected()
		return nil
	})
	return attachments, messages, err
}

// Filter selects and pages the list of outbound emails.
type Filter struct {
	Limit  int    // 1 to 100; 0 means DefaultLimit
	Offset int    // from 0
	Status Status // "" for any
	Type   Type   // "" for any
}

// DefaultLimit is the list's page size when none is given (the seed's Limits).
const DefaultLimit = 20

// List returns a page of the organisation's outbound emails, newest first, in
// the list form, and the number of emails the filter matches. Both are read
// from one snapshot.
func (s *Store) List(ctx context.Context, orgID string, f Filter) ([]ListItem, int, error) {
	if f.Limit <= 0 {
		f.Limit = DefaultLimit
	}
	where, args := "org_id = ?", []any{orgID}
	if f.Status != "" {
		where, args = where+" AND status = ?", append(args, f.Status)
	}
	if f.Type != "" {
		where, args = where+" AND type = ?", append(args, f.Type)
	}
	var items []ListItem
	var total int
	err := s.db.InReadTx(ctx, func(tx *store.Tx) error {
		if err := tx.QueryRow(ctx, "SELECT COUNT(*) FROM outbound_emails WHERE "+where, args...).Scan(&total); err != nil {
			return fmt.Errorf("count outbound emails: %w", err)
		}
		rows, err := tx.Query(ctx, "SELECT "+emailColumns+" FROM outbound_emails WHERE "+where+
			" ORDER BY created_at DESC, id DESC LIMIT ? OFFSET ?", append(args, f.Limit, f.Offset)...)
		if err != nil {
			return fmt.Errorf("list outbound emails: %w", err)
		}
		defer rows.Close()
		var ids []string
		for rows.Next() {
			e, err := scanEmail(rows)
			if err != nil {
				return err
			}
			items = append(items, ListItem{Email: e})
			ids = append(ids, e.ID)
		}
		if err := rows.Err(); err != nil {
			return fmt.Errorf("list outbound emails: %w", err)
		}
		rs, err := recipients(ctx, tx, ids...)
		if err != nil {
			return err
		}
		for i := range items {
			items[i].Recipients = rs[items[i].ID]
		}
		return nil
	})
	if err != nil {
		return nil, 0, err
	}
	return items, total, nil
}

// Usage returns the organisation's outbound usage in the calendar month (UTC)
// of t: how many messages with an external recipient it created then.
func (s *Store) Usage(ctx context.Context, orgID string, t time.Time) (int64, error) {
	var n int64
	err := s.db.QueryRow(ctx, "SELECT messages FROM outbound_usage WHERE org_id = ? AND month = ?", orgID, usageMonth(t)).Scan(&n)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("read outbound usage: %w", err)
	}
	return n, nil
}

// usageMonth names the calendar month (UTC) of t as stored: "2006-01".
func usageMonth(t time.Time) string { return t.UTC().Format("2006-01") }

// ms is t as stored: Unix milliseconds.
func ms(t time.Time) int64 { return t.UnixMilli() }

// optMs is t as stored, NULL when zero.
func optMs(t time.Time) any {
	if t.IsZero() {
		return nil
	}
	return t.UnixMilli()
}

// nullString is s as stored, NULL when "".
func nullString(s string) any {
	if s == "" {
		return nil
	}
	return s
}

// msTime scans a nullable Unix-milliseconds column: zero for NULL, UTC.
type msTime struct{ t *time.Time }

func (m msTime) Scan(v any) error {
	switch x := v.(type) {
	case nil:
		*m.t = time.Time{}
	case int64:
		*m.t = time.UnixMilli(x).UTC()
	default:
		return fmt.Errorf("time column holds %T", v)
	}
	return nil
}

// optString scans a nullable text column: "" for NULL.
type optString struct{ s *string }

func (o optString) Scan(v any) error {
	switch x := v.(type) {
	case nil:
		*o.s = ""
	case string:
		*o.s = x
	case []byte:
		*o.s = string(x)
	default:
		return fmt.Errorf("text column holds %T", v)
	}
	return nil
}
