package inbox

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/catchbox/catchbox/internal/notify"
	"github.com/catchbox/catchbox/internal/secret"
	"github.com/catchbox/catchbox/internal/store"
	"github.com/catchbox/catchbox/internal/store/storetest"
	"github.com/catchbox/catchbox/internal/tenant"
	"github.com/catchbox/catchbox/internal/testkit"
)

// TestArrivalWakesOnlyItsWaiters: with 1,000 searches held on distinct
// recipient prefixes, a few on subjects and senders, and one waiting for any
// email, an email wakes the searches it matches and the one that waits for
// anything, and no other: on one replica (SQLite), and on another replica
// than the one that stored it (PostgreSQL).
func TestArrivalWakesOnlyItsWaiters(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		ns := defaultNamespace(t, db)
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		var writer, holder notify.Notifier
		if db.Dialect == store.Postgres {
			a, b := notify.NewPostgres(ctx, db.URL), notify.NewPostgres(ctx, db.URL)
			defer func() { cancel(); <-a.Done(); <-b.Done() }()
			writer, holder = a, b
			// b is listening once a probe announced by a has woken it.
			topic := "probe:" + tenant.NewID()
			probe := b.Subscribe(topic)
			if err := db.InTx(ctx, func(tx *store.Tx) error { return a.Announce(ctx, tx, topic) }); err != nil {
				t.Fatal(err)
			}
			woken(t, probe)
			probe.Close()
		} else {
			hub := notify.NewHub()
			writer, holder = hub, hub
		}
		in := NewIngester(db, writer)
		defer in.Close()
		deliver := func(ns tenant.Namespace, to, from, subject string) {
			t.Helper()
			raw := []byte("From: " + from + "\r\nTo: " + to + "\r\nSubject: " + subject + "\r\n\r\nbody\r\n")
			if _, err := in.Deliver(ctx, raw, Envelope{}, []Target{{Namespace: ns, Recipients: []string{to}}}); err != nil {
				t.Fatal(err)
			}
		}
		watch := func(q Query) *notify.Subscription {
			q.NamespaceID = ns.ID
			s := holder.Watch(q.want())
			t.Cleanup(s.Close)
			return s
		}
		prefixes := make([]*notify.Subscription, 1000)
		for i := range prefixes {
			prefixes[i] = watch(Query{ToAddrPrefix: fmt.Sprintf("User%04d@", i)})
		}
		subject := watch(Query{SubjectIncludes: "Reset"})
		sender := watch(Query{FromAddrIncludes: "shop"})
		anything := watch(Query{})
		// The marker namespace's email is stored after each email under
		// test: once its waiter is woken, the email before it has been
		// handled in full, here and on the other replica.
		ts := tenant.NewService(db, secret.New([]byte("test-secret-key-0123456789")), 24*time.Hour)
		markerNS, err := ts.CreateNamespace(ctx, ns.OrgID, "marker", tenant.Settings{})
		if err != nil {
			t.Fatal(err)
		}
		marker := holder.Subscribe(NamespaceTopic(markerNS.ID))
		defer marker.Close()
		settle := func() {
			t.Helper()
			deliver(markerNS, "m@marker.localhost", "m@example.org", "m")
			woken(t, marker)
		}
		check := func(what string, want ...*notify.Subscription) {
			t.Helper()
			wanted := map[*notify.Subscription]bool{}
			for _, s := range want {
				wanted[s] = true
			}
			all := append(append([]*notify.Subscription{}, prefixes...), subject, sender, anything)
			for i, s := range all {
				if got := pending(s); got != wanted[s] {
					t.Errorf("%s: waiter %d woken %v, want %v", what, i, got, wanted[s])
				}
			}
		}

		deliver(ns, "user0042@default.localhost", "a@example.org", "hello")
		settle()
		check("mail to user0042", prefixes[42], anything)

		deliver(ns, "USER0999@DEFAULT.LOCALHOST", "Shop@Example.org", "password RESET")
		settle()
		check("mail to USER0999 from a shop", prefixes[999], subject, sender, anything)

		deliver(ns, "user10000@default.localhost", "b@example.org", "none")
		settle()
		check("mail to no held prefix", anything)
	})
}

func woken(t *testing.T, s *notify.Subscription) {
	t.Helper()
	testkit.Receive(t, "a wake-up", s.C)
}

func pending(s *notify.Subscription) bool {
	select {
	case <-s.C:
		return true
	default:
		return false
	}
}
