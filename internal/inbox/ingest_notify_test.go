package inbox

import (
	"context"
	"testing"

	"github.com/catchbox/catchbox/internal/notify"
	"github.com/catchbox/catchbox/internal/store"
	"github.com/catchbox/catchbox/internal/store/storetest"
	"github.com/catchbox/catchbox/internal/tenant"
	"github.com/catchbox/catchbox/internal/testkit"
)

// Mail stored by one replica wakes the searches held on its namespace on
// another, and a batch whose transaction rolled back wakes nobody.
func TestDeliverWakesOtherReplicas(t *testing.T) {
	db := storetest.Open(t, store.Postgres) // skips without a PostgreSQL server
	ns := defaultNamespace(t, db)
	ctx, cancel := context.WithCancel(context.Background())
	a := notify.NewPostgres(ctx, db.URL) // the replica that receives the mail
	b := notify.NewPostgres(ctx, db.URL) // the replica holding the searches
	defer func() { cancel(); <-a.Done(); <-b.Done() }()
	in := NewIngester(db, a)
	defer in.Close()
	deliver := func(ns tenant.Namespace) error {
		raw := []byte("From: a@example.com\r\nTo: x@default.localhost\r\nSubject: s\r\n\r\nbody\r\n")
		_, err := in.Deliver(ctx, raw, Envelope{}, []Target{{Namespace: ns, Recipients: []string{"x@default.localhost"}}})
		return err
	}
	woken := func(sub *notify.Subscription) {
		t.Helper()
		testkit.Receive(t, "the other replica's wake-up", sub.C)
	}

	// Once the probe has woken, whether by a's NOTIFY or by b's listener
	// connecting (which wakes every waiter once), b is listening and later
	// subscriptions see NOTIFYs only.
	probeTopic := "probe:" + tenant.NewID()
	probe := b.Subscribe(probeTopic)
	if err := db.InTx(ctx, func(tx *store.Tx) error { return a.Announce(ctx, tx, probeTopic) }); err != nil {
		t.Fatal(err)
	}
	woken(probe)
	probe.Close()

	// A namespace that does not exist fails the insert (its foreign key), so
	// its transaction rolls back.
	gone := ns
	gone.ID = tenant.NewID()
	rolledBack := b.Subscribe(NamespaceTopic(gone.ID))
	defer rolledBack.Close()
	held := b.Subscribe(NamespaceTopic(ns.ID))
	defer held.Close()
	if err := deliver(gone); err == nil {
		t.Fatal("delivery into a namespace that does not exist succeeded")
	}
	if err := deliver(ns); err != nil {
		t.Fatal(err)
	}
	woken(held)
	// NOTIFYs reach b in commit order, and b relays each in full before the
	// next: once the wake-up of a batch committed after the one above was
	// seen is here, one for the failed batch would have been too.
	if err := deliver(ns); err != nil {
		t.Fatal(err)
	}
	woken(held)
	select {
	case <-rolledBack.C:
		t.Error("a batch that rolled back woke the other replica")
	default:
	}
}
