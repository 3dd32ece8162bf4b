package inbox

import (
	"context"
	"testing"
	"time"

	"github.com/catchbox/catchbox/internal/notify"
	"github.com/catchbox/catchbox/internal/store"
	"github.com/catchbox/catchbox/internal/store/storetest"
)

// Mail stored by one replica wakes the searches held on its namespace on
// another: the ingest transaction announces the namespace.
func TestDeliverWakesOtherReplicas(t *testing.T) {
	db := storetest.Open(t, store.Postgres) // skips without a PostgreSQL server
	ns := defaultNamespace(t, db)
	ctx, cancel := context.WithCancel(context.Background())
	a := notify.NewPostgres(ctx, db.URL) // the replica that receives the mail
	b := notify.NewPostgres(ctx, db.URL) // the replica holding the search
	defer func() { cancel(); <-a.Done(); <-b.Done() }()
	in := NewIngester(db, a)
	defer in.Close()
	deliver := func() {
		t.Helper()
		raw := []byte("From: a@example.com\r\nTo: x@default.localhost\r\nSubject: s\r\n\r\nbody\r\n")
		if _, err := in.Deliver(ctx, raw, Envelope{}, []Target{{Namespace: ns, Recipients: []string{"x@default.localhost"}}}); err != nil {
			t.Fatal(err)
		}
	}
	woken := func(sub *notify.Subscription) {
		t.Helper()
		select {
		case <-sub.C:
		case <-time.After(time.Minute):
			t.Fatal("the other replica was not woken")
		}
	}

	// Once b's first wake-up has come, whether from the announcement or from
	// its listener connecting (which wakes every waiter once), b is listening
	// and later subscriptions see announcements only.
	first := b.Subscribe(NamespaceTopic(ns.ID))
	deliver()
	woken(first)
	first.Close()

	held := b.Subscribe(NamespaceTopic(ns.ID))
	defer held.Close()
	deliver()
	woken(held)
}
