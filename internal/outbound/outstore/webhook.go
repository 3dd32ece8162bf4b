package outstore

import (
	"context"
	"fmt"

	"github.com/catchbox/catchbox/internal/httpx"
	"github.com/catchbox/catchbox/internal/store"
)

// The types of the events the package writes.
const (
	// EventRecorded is written for every event recorded of a recipient.
	EventRecorded = "outbound.event"
	// EventStatusChanged is written when an email's status changes.
	EventStatusChanged = "outbound.status"
)

// Events receives the package's events in the transaction of their cause
// (webhook.Service writes them to its outbox, to be sent to the
// organisation's endpoints). It is defined here, where events are emitted,
// so that outstore needs nothing of whoever takes them.
type Events interface {
	// Emit writes an event of the organisation in the namespace.
	Emit(ctx context.Context, tx *store.Tx, orgID, namespace, eventType string, data any) error
	// Active reports whether anything of the organisation takes events at
	// all, and Wants whether anything takes events of the type in the
	// namespace: the name of an email's namespace costs a query, which an
	// organisation that takes no events never pays.
	Active(ctx context.Context, orgID string) (bool, error)
	Wants(ctx context.Context, orgID, namespace, eventType string) (bool, error)
}

// EventData is the data of an outbound.event webhook event: the
// OutboundEvent as GET /api/emails/outbound/{id} shows it, with its email
// and the namespace it was sent from.
type EventData struct {
	OutboundEmailID string `json:"outbound_email_id"`
	Namespace       string `json:"namespace"`
	Event           Event  `json:"event"`
}

// StatusData is the data of an outbound.status webhook event: the email's
// status changed from PreviousStatus to Status.
type StatusData struct {
	OutboundEmailID string `json:"outbound_email_id"`
	Namespace       string `json:"namespace"`
	Status          Status `json:"status"`
	PreviousStatus  Status `json:"previous_status"`
	FailureReason   string `json:"failure_reason,omitempty"`
	UpdatedAt       string `json:"updated_at"`
}

// emitEvent writes, in tx, the outbound.event of ev and, when the email's
// status moved from before, its outbound.status.
func (s *Store) emitEvent(ctx context.Context, tx *store.Tx, before Status, e Email, ev *Event) error {
	ns, err := s.webhookNamespace(ctx, tx, e.OrgID, e.NamespaceID, before != e.Status)
	if err != nil || ns == nil {
		return err
	}
	err = s.events.Emit(ctx, tx, e.OrgID, *ns, EventRecorded, EventData{OutboundEmailID: e.ID, Namespace: *ns, Event: *ev})
	if err != nil || before == e.Status {
		return err
	}
	return s.emitStatus(ctx, tx, *ns, before, e)
}

// emitSending writes the outbound.status event of an email MarkSending moved.
func (s *Store) emitSending(ctx context.Context, tx *store.Tx, emailID string) error {
	if s.events == nil {
		return nil
	}
	e, err := scanEmail(tx.QueryRow(ctx, "SELECT "+emailColumns+" FROM outbound_emails WHERE id = ?", emailID))
	if err != nil {
		return fmt.Errorf("outbound status event of %s: %w", emailID, err)
	}
	ns, err := s.webhookNamespace(ctx, tx, e.OrgID, e.NamespaceID, true)
	if err != nil || ns == nil {
		return err
	}
	return s.emitStatus(ctx, tx, *ns, StatusQueued, e)
}

func (s *Store) emitStatus(ctx context.Context, tx *store.Tx, ns string, before Status, e Email) error {
	return s.events.Emit(ctx, tx, e.OrgID, ns, EventStatusChanged, StatusData{OutboundEmailID: e.ID, Namespace: ns,
		Status: e.Status, PreviousStatus: before, FailureReason: e.FailureReason, UpdatedAt: httpx.Time(e.UpdatedAt)})
}

// webhookNamespace returns the name of the email's namespace when an
// endpoint of the organisation may want an event of it, nil when none does:
// the name costs a query, which an organisation without webhooks never pays.
func (s *Store) webhookNamespace(ctx context.Context, tx *store.Tx, orgID, nsID string, status bool) (*string, error) {
	if s.events == nil {
		return nil, nil
	}
	if active, err := s.events.Active(ctx, orgID); err != nil || !active {
		return nil, err
	}
	var name string
	if err := tx.QueryRow(ctx, "SELECT name FROM namespaces WHERE id = ?", nsID).Scan(&name); err != nil {
		return nil, fmt.Errorf("outbound webhook event: %w", err)
	}
	want, err := s.events.Wants(ctx, orgID, name, EventRecorded)
	if err == nil && !want && status {
		want, err = s.events.Wants(ctx, orgID, name, EventStatusChanged)
	}
	if err != nil || !want {
		return nil, err
	}
	return &name, nil
}
