package outstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/catchbox/catchbox/internal/store"
)

// ErrNotCancellable: no recipient of the email can be cancelled any more:
// each has reached a final status or has had a delivery attempt.
var ErrNotCancellable = errors.New("no recipient of the outbound email can be cancelled")

// Cancel cancels the delivery of the organisation's email to every recipient
// no attempt has reached yet (an open status and attempt_count 0), through
// one cancelled event (RecordEvent), and returns the email's detail form.
// Recipients already attempted (deferred ones included, whose retry is
// scheduled) or final keep their status. ErrNotFound for no such email (or
// another organisation's), ErrNotCancellable when no recipient could be
// cancelled.
//
// The email's row is locked first, as RecordEvent locks it, so a delivery
// attempt that records its results at the same time applies before or after
// the cancel, never in between. An attempt already under way when the cancel
// commits is not stopped: its result is recorded as an event, and leaves the
// cancelled status as it is (a final status is not left).
func (s *Store) Cancel(ctx context.Context, orgID, id string) (Detail, error) {
	err := s.db.InTx(ctx, func(tx *store.Tx) error {
		var found string
		err := tx.QueryRow(ctx, "SELECT id FROM outbound_emails WHERE id = ? AND org_id = ?"+tx.ForUpdate(), id, orgID).Scan(&found)
		if errors.Is(err, sql.ErrNoRows) {
			return ErrNotFound
		}
		if err != nil {
			return fmt.Errorf("cancel outbound email %s: %w", id, err)
		}
		byEmail, err := recipients(ctx, tx, id)
		if err != nil {
			return err
		}
		ev := NewEvent{Type: EventCancelled}
		for _, r := range byEmail[id] {
			if !r.Status.Final() && r.AttemptCount == 0 {
				ev.Recipients = append(ev.Recipients, NewEventRecipient{RecipientID: r.ID})
			}
		}
		if len(ev.Recipients) == 0 {
			return ErrNotCancellable
		}
		_, err = s.RecordEvent(ctx, tx, id, ev)
		return err
	})
	if err != nil {
		return Detail{}, err
	}
	return s.Get(ctx, orgID, id)
}
