package inbox_test

import (
	"context"
	"errors"
	"testing"

	"github.com/catchbox/catchbox/internal/inbox"
	"github.com/catchbox/catchbox/internal/store"
	"github.com/catchbox/catchbox/internal/store/storetest"
	"github.com/catchbox/catchbox/internal/tenant"
)

// TestDeliverInTx: a message stored in the caller's transaction is there, with
// the id given, counted and searchable, once the transaction commits; nowhere
// when it rolls back; and storing the same id again fails, so a delivery
// made twice leaves one email.
func TestDeliverInTx(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		e := newEnv(t, db)
		ctx := context.Background()
		raw := []byte("From: a@example.com\r\nTo: box@default.localhost\r\nSubject: in a transaction\r\n\r\nhello\r\n")
		targets := []inbox.Target{{Namespace: e.ns, Recipients: []string{"box@default.localhost"}}}
		id := tenant.NewID()
		deliver := func(fail error) error {
			return db.InTx(ctx, func(tx *store.Tx) error {
				if err := e.ingester.DeliverInTx(ctx, tx, raw, inbox.Envelope{MailFrom: "bounce@localhost"}, targets, []string{id}); err != nil {
					return err
				}
				return fail
			})
		}
		rollback := errors.New("roll back")
		if err := deliver(rollback); !errors.Is(err, rollback) {
			t.Fatalf("deliver then roll back: %v", err)
		}
		var res struct {
			TotalCount int `json:"total_count"`
			Data       []struct {
				ID      string `json:"id"`
				Subject string `json:"subject"`
			} `json:"data"`
		}
		e.get(e.key, "/api/emails/default/inbox", &res)
		if res.TotalCount != 0 {
			t.Fatalf("a rolled back delivery is visible: %+v", res)
		}
		if err := deliver(nil); err != nil {
			t.Fatalf("deliver: %v", err)
		}
		e.get(e.key, "/api/emails/default/inbox?to_addr_prefix=box@", &res)
		if res.TotalCount != 1 || res.Data[0].ID != id || res.Data[0].Subject != "in a transaction" {
			t.Fatalf("after the commit: %+v", res)
		}
		if err := deliver(nil); !store.IsUniqueViolation(err) {
			t.Fatalf("the same id stored twice: %v", err)
		}
		e.get(e.key, "/api/emails/default/inbox", &res)
		if res.TotalCount != 1 {
			t.Fatalf("after a second delivery of the same id: %d emails", res.TotalCount)
		}
	})
}
