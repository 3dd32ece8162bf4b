package sms_test

import (
	"context"
	"testing"

	"github.com/catchbox/catchbox/internal/notify"
	"github.com/catchbox/catchbox/internal/sms"
	"github.com/catchbox/catchbox/internal/store"
	"github.com/catchbox/catchbox/internal/store/storetest"
	"github.com/catchbox/catchbox/internal/testkit"
)

// A message received on one replica wakes the searches held on its number on
// another: Receive announces the number's topic in the transaction that stores
// the message.
func TestReceiveWakesOtherReplicas(t *testing.T) {
	db := storetest.Open(t, store.Postgres) // skips without a PostgreSQL server
	e := newEnv(t, db)
	ctx, cancel := context.WithCancel(context.Background())
	a := notify.NewPostgres(ctx, db.URL) // the replica that receives
	b := notify.NewPostgres(ctx, db.URL) // the replica holding the search
	defer func() { cancel(); <-a.Done(); <-b.Done() }()
	svc := sms.NewService(db, a, 0, nil)
	receive := func(n sms.Number, body string) {
		t.Helper()
		if _, _, err := svc.Receive(ctx, n, sms.Inbound{From: "+15551230001", Body: body}); err != nil {
			t.Fatal(err)
		}
	}
	woken := func(sub *notify.Subscription) {
		t.Helper()
		testkit.Receive(t, "the other replica's wake-up", sub.C)
	}

	// Once b's first wake-up has come, whether from the announcement or from
	// its listener connecting (which wakes every waiter once), b is listening
	// and later subscriptions see announcements only.
	first := b.Subscribe(sms.Topic(e.otherNum.ID))
	receive(e.otherNum, "first")
	woken(first)
	first.Close()

	held := b.Subscribe(sms.Topic(e.active.ID))
	defer held.Close()
	receive(e.active, "code 123456")
	woken(held)
}
