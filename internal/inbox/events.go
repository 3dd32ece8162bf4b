package inbox

import (
	"context"

	"github.com/catchbox/catchbox/internal/store"
)

// EventReceived is the type of the event written for every stored email.
const EventReceived = "email.received"

// Events receives the package's events in the transaction of their cause
// (webhook.Service writes them to its outbox, to be sent to the
// organisation's endpoints). It is defined here, where events are emitted,
// so that inbox needs nothing of whoever takes them.
type Events interface {
	// Emit writes an event of the organisation; namespace is "" for none.
	Emit(ctx context.Context, tx *store.Tx, orgID, namespace, eventType string, data any) error
}

// ReceivedEvent is the data of an email.received webhook event: the Email
// resource without its bodies and headers (GET /api/emails/{id} has them),
// and the namespace it arrived in. Links and codes are left out too: they are
// read with the bodies, after the event is written.
type ReceivedEvent struct {
	ID                string              `json:"id"`
	Namespace         string              `json:"namespace"`
	From              Address             `json:"from"`
	To                []Address           `json:"to"`
	Cc                []Address           `json:"cc,omitempty"`
	Bcc               []Address           `json:"bcc,omitempty"`
	Subject           string              `json:"subject,omitempty"`
	ReceivedDate      string              `json:"received_date"`
	ReceivedTimestamp int64               `json:"received_timestamp"`
	ExpiresTimestamp  int64               `json:"expires_timestamp"`
	Attachments       []AttachmentSummary `json:"attachments,omitempty"`
}

// ReceivedHook is the ingest hook that writes an email.received event for
// every stored email, in its transaction, for the namespace's organisation
// and the one it is shared with.
func ReceivedHook(events Events) IngestHook {
	return func(ctx context.Context, tx *store.Tx, st Stored) error {
		e, ns := st.Email, st.Namespace
		data := ReceivedEvent{ID: e.ID, Namespace: ns.Name, From: e.From, To: e.To, Cc: e.Cc, Bcc: e.Bcc,
			Subject: e.Subject, ReceivedDate: e.ReceivedDate, ReceivedTimestamp: e.ReceivedTimestamp,
			ExpiresTimestamp: e.ExpiresTimestamp, Attachments: e.Attachments}
		if err := events.Emit(ctx, tx, ns.OrgID, ns.Name, EventReceived, data); err != nil {
			return err
		}
		if shared := ns.SharedOrgID; shared != "" && shared != ns.OrgID {
			return events.Emit(ctx, tx, shared, ns.Name, EventReceived, data)
		}
		return nil
	}
}
