package outstore

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"strings"
	"time"

	"github.com/catchbox/catchbox/internal/store"
)

// Errors of RecordEvent.
var (
	// ErrDuplicateEvent: an event with the same provider_event_id is recorded
	// for the email already (a report delivered twice); nothing was written.
	ErrDuplicateEvent = errors.New("event already recorded")
	// ErrUnknownRecipient: the event names a recipient the email does not have.
	ErrUnknownRecipient = errors.New("not a recipient of the outbound email")
)

// NewEvent is an event to record: something that happened to some of an
// email's recipients.
type NewEvent struct {
	Type    EventType
	Subtype string // event_subtype, e.g. a bounce's "permanent"
	// Provider is who reports the event (ProviderInternal, ProviderSMTP), ""
	// for Catchbox's own (queued, suppressed, cancelled).
	Provider          string
	ProviderMessageID string // the provider's id of the message, e.g. the relay's queue id
	ProviderEventID   string // the provider's id of the event: recording it twice is ErrDuplicateEvent
	// OccurredAt is when it happened; zero means now.
	OccurredAt time.Time
	// FailureReason, when set, becomes the email's failure_reason.
	FailureReason string
	// Recipients are those the event concerns, at least one.
	Recipients []NewEventRecipient
}

// NewEventRecipient is one recipient of a NewEvent and what the event says
// of it. The SMTP fields are those of the reply or of the DSN's per-recipient
// fields (RFC 3464 section 2.3: Status, Diagnostic-Code, Action).
type NewEventRecipient struct {
	RecipientID string
	// Attempted: the event reports a delivery attempt to the recipient (a
	// reply to RCPT or DATA, an internal delivery, a connection that failed),
	// which adds one to its attempt_count. A later report (a DSN) does not.
	Attempted            bool
	SMTPCode             string // "250", "451", "550"
	EnhancedStatusCode   string // "2.0.0", "4.7.1", "5.1.1" (RFC 3463)
	SMTPResponse         string
	DiagnosticCode       string
	Action               string // a DSN's Action: failed, delayed, delivered, relayed, expanded
	BounceType           string // e.g. "hard", "soft"
	BounceSubtype        string
	BounceClassification string
	// ComplaintFeedbackType is an ARF report's Feedback-Type (RFC 5965
	// section 3.1), for a complained event.
	ComplaintFeedbackType string
}

// Status returns the delivery status an event of the type moves a recipient
// to, and false for opened and clicked, which move none.
func (t EventType) Status() (DeliveryStatus, bool) {
	switch t {
	case EventOpened, EventClicked:
		return "", false
	}
	for _, st := range timedStatuses {
		if string(st) == string(t) {
			return st, true
		}
	}
	return "", false
}

// Known reports whether t is one of the seed's event types.
func (t EventType) Known() bool {
	_, ok := t.Status()
	return ok || t == EventOpened || t == EventClicked
}

// Final reports whether the status is final: delivery has succeeded or
// failed for good (the package doc's table).
func (s DeliveryStatus) Final() bool {
	switch s {
	case DeliveryPending, DeliveryAccepted, DeliveryQueued, DeliveryDeferred, DeliveryDelayed:
		return false
	}
	return true
}

// Succeeded reports whether the status counts as a success for the email's
// status: the message reached the relay or the mailbox (sent, delivered), or
// reached it and drew a complaint or an unsubscription afterwards.
func (s DeliveryStatus) Succeeded() bool {
	switch s {
	case DeliverySent, DeliveryDelivered, DeliveryComplained, DeliveryUnsubscribed:
		return true
	}
	return false
}

// started reports whether a recipient in the status has had an attempt, or a
// final outcome without one: its email is sending at least.
func (s DeliveryStatus) started() bool {
	return s != DeliveryPending && s != DeliveryAccepted && s != DeliveryQueued
}

// canMove reports whether an event that means status to may move a recipient
// that is in status from (the package doc's table).
func canMove(from, to DeliveryStatus) bool {
	switch from {
	case DeliveryPending, DeliveryAccepted, DeliveryQueued, DeliveryDeferred, DeliveryDelayed:
		return true
	case DeliverySent:
		switch to {
		case DeliveryDelayed, DeliveryDelivered, DeliveryBounced, DeliveryExpired, DeliveryFailed,
			DeliveryRejected, DeliveryComplained, DeliveryUnsubscribed:
			return true
		}
	case DeliveryDelivered, DeliveryComplained, DeliveryUnsubscribed:
		return to == DeliveryComplained || to == DeliveryUnsubscribed
	}
	return false
}

// apply returns r after an event of type t that happened at at and says er of
// it: its status moved if the table allows; the event's <status>_at, last
// event and SMTP details if the event is the latest; attempt count, bounce
// and complaint details.
func apply(r Recipient, t EventType, at time.Time, er NewEventRecipient) Recipient {
	r.At = maps.Clone(r.At)
	if r.At == nil {
		r.At = map[DeliveryStatus]time.Time{}
	}
	if st, ok := t.Status(); ok {
		if at.After(r.At[st]) {
			r.At[st] = at
		}
		if canMove(r.Status, st) {
			r.Status = st
		}
	}
	if !at.Before(r.LastEventAt) { // the latest event so far
		r.LastEventType, r.LastEventAt = t, at
		if er.SMTPCode != "" || er.EnhancedStatusCode != "" || er.SMTPResponse != "" {
			r.LastSMTPCode, r.LastEnhancedStatusCode, r.LastSMTPResponse = er.SMTPCode, er.EnhancedStatusCode, er.SMTPResponse
		}
	}
	if er.Attempted {
		r.AttemptCount++
	}
	if er.BounceType != "" || er.BounceSubtype != "" || er.BounceClassification != "" {
		r.BounceType, r.BounceSubtype, r.BounceClassification = er.BounceType, er.BounceSubtype, er.BounceClassification
	}
	if er.ComplaintFeedbackType != "" {
		r.ComplaintFeedbackType = er.ComplaintFeedbackType
	}
	return r
}

// statusRank orders the email's statuses: it never moves to a lower rank.
var statusRank = map[Status]int{StatusQueued: 0, StatusSending: 1, StatusSent: 2, StatusFailed: 2}

// emailStatus is the status of an email in status cur whose recipients are rs:
// sent or failed when every recipient is final, sending once any has started,
// never back to a lower rank than cur.
func emailStatus(cur Status, rs []Recipient) Status {
	final, succeeded, started := true, false, false
	for _, r := range rs {
		final = final && r.Status.Final()
		succeeded = succeeded || r.Status.Succeeded()
		started = started || r.Status.started()
	}
	next := StatusQueued
	switch {
	case final && succeeded:
		next = StatusSent
	case final:
		next = StatusFailed
	case started:
		next = StatusSending
	}
	if statusRank[next] < statusRank[cur] {
		return cur
	}
	return next
}

// failureReason describes why no recipient succeeded: the failed statuses and
// how many recipients are in each, in the seed's order.
func failureReason(rs []Recipient) string {
	sum := Summarize(rs)
	var parts []string
	for _, st := range DeliveryStatuses {
		if sum[st] > 0 {
			parts = append(parts, fmt.Sprintf("%s %d", st, sum[st]))
		}
	}
	return "no recipient was delivered (" + strings.Join(parts, ", ") + ")"
}

// RecordEvent records an event of the email in tx and applies it: the one
// function through which recipient states change. It stores the event and its
// recipients; moves each recipient (its delivery_status when the package doc's
// table allows, the event type's <status>_at, last_event_type and
// last_event_at and the last SMTP details when the event is its latest, its
// attempt_count, bounce and complaint details); and derives the email's
// status and its times, its provider and provider message id (the first
// event's that names them) and its failure_reason. The email's row is locked
// first (FOR UPDATE on PostgreSQL; SQLite has one writer), so concurrent
// events of one email apply one after the other.
func (s *Store) RecordEvent(ctx context.Context, tx *store.Tx, emailID string, ev NewEvent) (Event, error) {
	if !ev.Type.Known() {
		return Event{}, fmt.Errorf("record outbound event: type %q", ev.Type)
	}
	if len(ev.Recipients) == 0 {
		return Event{}, errors.New("record outbound event: no recipients")
	}
	now := s.now()
	at := ev.OccurredAt.UTC().Truncate(time.Millisecond)
	if ev.OccurredAt.IsZero() {
		at = now
	}
	e, err := scanEmail(tx.QueryRow(ctx, "SELECT "+emailColumns+" FROM outbound_emails WHERE id = ?"+tx.ForUpdate(), emailID))
	if err != nil {
		return Event{}, fmt.Errorf("record outbound event of %s: %w", emailID, err)
	}
	if ev.ProviderEventID != "" {
		var n int
		if err := tx.QueryRow(ctx, "SELECT COUNT(*) FROM outbound_events WHERE outbound_email_id = ? AND provider_event_id = ?",
			emailID, ev.ProviderEventID).Scan(&n); err != nil {
			return Event{}, fmt.Errorf("record outbound event: %w", err)
		}
		if n > 0 {
			return Event{}, fmt.Errorf("event %s of %s: %w", ev.ProviderEventID, emailID, ErrDuplicateEvent)
		}
	}
	byEmail, err := recipients(ctx, tx, emailID)
	if err != nil {
		return Event{}, err
	}
	rs := byEmail[emailID]
	index := map[string]int{}
	for i, r := range rs {
		index[r.ID] = i
	}

	out := Event{ID: NewID(), Type: ev.Type, Subtype: ev.Subtype, Provider: ev.Provider,
		ProviderMessageID: ev.ProviderMessageID, ProviderEventID: ev.ProviderEventID, OccurredAt: at, CreatedAt: now}
	_, err = tx.Exec(ctx, `INSERT INTO outbound_events (id, outbound_email_id, event_type, event_subtype, provider,
		provider_message_id, provider_event_id, occurred_at, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		out.ID, emailID, out.Type, nullString(out.Subtype), nullString(out.Provider),
		nullString(out.ProviderMessageID), nullString(out.ProviderEventID), ms(at), ms(now))
	if err != nil {
		return Event{}, fmt.Errorf("insert outbound event: %w", err)
	}
	seen := map[string]bool{}
	for pos, er := range ev.Recipients {
		i, ok := index[er.RecipientID]
		if !ok || seen[er.RecipientID] {
			return Event{}, fmt.Errorf("event of %s names %q: %w", emailID, er.RecipientID, ErrUnknownRecipient)
		}
		seen[er.RecipientID] = true
		rs[i] = apply(rs[i], ev.Type, at, er)
		if err := updateRecipient(ctx, tx, rs[i]); err != nil {
			return Event{}, err
		}
		o := EventRecipient{ID: NewID(), RecipientID: rs[i].ID, Email: rs[i].Email, SMTPCode: er.SMTPCode,
			EnhancedStatusCode: er.EnhancedStatusCode, SMTPResponse: er.SMTPResponse, DiagnosticCode: er.DiagnosticCode,
			Action: er.Action, AttemptCount: rs[i].AttemptCount, BounceClassification: er.BounceClassification}
		_, err := tx.Exec(ctx, `INSERT INTO outbound_event_recipients (id, event_id, outbound_email_id, recipient_id,
			position, email, smtp_code, enhanced_status_code, smtp_response, diagnostic_code, action, attempt_count,
			bounce_classification) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
			o.ID, out.ID, emailID, o.RecipientID, pos, o.Email, nullString(o.SMTPCode), nullString(o.EnhancedStatusCode),
			nullString(o.SMTPResponse), nullString(o.DiagnosticCode), nullString(o.Action), o.AttemptCount,
			nullString(o.BounceClassification))
		if err != nil {
			return Event{}, fmt.Errorf("insert outbound event recipient: %w", err)
		}
		out.Recipients = append(out.Recipients, o)
	}
	after := applyToEmail(e, rs, ev, at, now)
	if err := updateEmail(ctx, tx, after); err != nil {
		return Event{}, err
	}
	return out, s.emitEvent(ctx, tx, e.Status, after, &out)
}

// applyToEmail returns e after an event that happened at at left its
// recipients as rs.
func applyToEmail(e Email, rs []Recipient, ev NewEvent, at, now time.Time) Email {
	next := emailStatus(e.Status, rs)
	if next != StatusQueued && e.SendingAt.IsZero() {
		e.SendingAt = at
	}
	if next != e.Status {
		switch next {
		case StatusSent:
			e.SentAt = at
		case StatusFailed:
			e.FailedAt = at
		}
		e.Status = next
	}
	if e.Provider == "" && ev.Provider != "" {
		e.Provider = ev.Provider
	}
	if e.ProviderMessageID == "" && ev.ProviderMessageID != "" {
		e.ProviderMessageID = ev.ProviderMessageID
	}
	if ev.FailureReason != "" {
		e.FailureReason = ev.FailureReason
	}
	if e.Status == StatusFailed && e.FailureReason == "" {
		e.FailureReason = failureReason(rs)
	}
	e.UpdatedAt = now
	return e
}

var updateRecipientSQL = `UPDATE outbound_recipients SET delivery_status = ?, last_event_type = ?, last_event_at = ?, ` +
	strings.ReplaceAll(timedColumns(), ",", " = ?,") + ` = ?, last_smtp_code = ?, last_enhanced_status_code = ?,
	last_smtp_response = ?, attempt_count = ?, bounce_type = ?, bounce_subtype = ?, bounce_classification = ?,
	complaint_feedback_type = ? WHERE id = ?`

func updateRecipient(ctx context.Context, tx *store.Tx, r Recipient) error {
	args := []any{r.Status, nullString(string(r.LastEventType)), optMs(r.LastEventAt)}
	for _, st := range timedStatuses {
		args = append(args, optMs(r.At[st]))
	}
	args = append(args, nullString(r.LastSMTPCode), nullString(r.LastEnhancedStatusCode),
		nullString(r.LastSMTPResponse), r.AttemptCount, nullString(r.BounceType), nullString(r.BounceSubtype),
		nullString(r.BounceClassification), nullString(r.ComplaintFeedbackType), r.ID)
	if _, err := tx.Exec(ctx, updateRecipientSQL, args...); err != nil {
		return fmt.Errorf("update outbound recipient: %w", err)
	}
	return nil
}

func updateEmail(ctx context.Context, tx *store.Tx, e Email) error {
	_, err := tx.Exec(ctx, `UPDATE outbound_emails SET status = ?, provider = ?, provider_message_id = ?,
		failure_reason = ?, sending_at = ?, sent_at = ?, failed_at = ?, updated_at = ? WHERE id = ?`,
		e.Status, nullString(e.Provider), nullString(e.ProviderMessageID), nullString(e.FailureReason),
		optMs(e.SendingAt), optMs(e.SentAt), optMs(e.FailedAt), ms(e.UpdatedAt), e.ID)
	if err != nil {
		return fmt.Errorf("update outbound email: %w", err)
	}
	return nil
}

// MarkSending moves a queued email to sending, in tx, and reports whether it
// did: a delivery attempt is starting (contract section 5). It is the one
// change of status RecordEvent does not make, as no recipient has changed yet.
func (s *Store) MarkSending(ctx context.Context, tx *store.Tx, emailID string) (bool, error) {
	now := ms(s.now())
	res, err := tx.Exec(ctx, `UPDATE outbound_emails SET status = ?, sending_at = ?, updated_at = ?
		WHERE id = ? AND status = ?`, StatusSending, now, now, emailID, StatusQueued)
	if err != nil {
		return false, fmt.Errorf("mark outbound email %s sending: %w", emailID, err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return false, fmt.Errorf("mark outbound email %s sending: %w", emailID, err)
	}
	if n == 1 {
		return true, s.emitSending(ctx, tx, emailID)
	}
	return false, nil
}

// events returns the email's events, oldest first, with their recipients.
func events(ctx context.Context, q querier, emailID string) ([]Event, error) {
	rows, err := q.Query(ctx, `SELECT id, event_type, event_subtype, provider, provider_message_id, provider_event_id,
		occurred_at, created_at FROM outbound_events WHERE outbound_email_id = ? ORDER BY occurred_at, created_at, id`, emailID)
	if err != nil {
		return nil, fmt.Errorf("read outbound events: %w", err)
	}
	defer rows.Close()
	var out []Event
	index := map[string]int{}
	for rows.Next() {
		var e Event
		if err := rows.Scan(&e.ID, &e.Type, optString{&e.Subtype}, optString{&e.Provider},
			optString{&e.ProviderMessageID}, optString{&e.ProviderEventID}, msTime{&e.OccurredAt},
			msTime{&e.CreatedAt}); err != nil {
			return nil, fmt.Errorf("read outbound event: %w", err)
		}
		index[e.ID] = len(out)
		out = append(out, e)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read outbound events: %w", err)
	}
	rows.Close()

	rows, err = q.Query(ctx, `SELECT event_id, id, recipient_id, email, smtp_code, enhanced_status_code, smtp_response,
		diagnostic_code, action, attempt_count, bounce_classification FROM outbound_event_recipients
		WHERE outbound_email_id = ? ORDER BY event_id, position`, emailID)
	if err != nil {
		return nil, fmt.Errorf("read outbound event recipients: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var eventID string
		var r EventRecipient
		if err := rows.Scan(&eventID, &r.ID, &r.RecipientID, &r.Email, optString{&r.SMTPCode},
			optString{&r.EnhancedStatusCode}, optString{&r.SMTPResponse}, optString{&r.DiagnosticCode},
			optString{&r.Action}, &r.AttemptCount, optString{&r.BounceClassification}); err != nil {
			return nil, fmt.Errorf("read outbound event recipient: %w", err)
		}
		if i, ok := index[eventID]; ok {
			out[i].Recipients = append(out[i].Recipients, r)
		}
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read outbound event recipients: %w", err)
	}
	return out, nil
}
