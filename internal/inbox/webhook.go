package inbox

import (
	"context"

	"github.com/catchbox/catchbox/internal/store"
	"github.com/catchbox/catchbox/internal/webhook"
)

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

// WebhookHook is the ingest hook that writes an email.received event for
// every stored email, in its transaction, for the namespace's organisation
// and the one it is shared with.
func WebhookHook(w *webhook.Service) IngestHook {
	return func(ctx context.Context, tx *store.Tx, st Stored) error {
		e := st.Email
		ev := webhook.Event{OrgID: st.Namespace.OrgID, Namespace: st.Namespace.Name, Type: webhook.EmailReceived,
			Data: ReceivedEvent{ID: e.ID, Namespace: st.Namespace.Name, From: e.From, To: e.To, Cc: e.Cc, Bcc: e.Bcc,
				Subject: e.Subject, ReceivedDate: e.ReceivedDate, ReceivedTimestamp: e.ReceivedTimestamp,
				ExpiresTimestamp: e.ExpiresTimestamp, Attachments: e.Attachments}}
		if err := w.Emit(ctx, tx, ev); err != nil {
			return err
		}
		if shared := st.Namespace.SharedOrgID; shared != "" && shared != ev.OrgID {
			ev.OrgID = shared
			return w.Emit(ctx, tx, ev)
		}
		return nil
	}
}
