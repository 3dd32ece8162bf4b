package notify

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"strings"
	"testing"

	"github.com/catchbox/catchbox/internal/store"
	"github.com/catchbox/catchbox/internal/store/storetest"
	"github.com/catchbox/catchbox/internal/testkit"
)

// A topic announced in a transaction wakes the other replicas' waiters when the
// transaction commits, never when it rolls back, and not the writer's own
// waiters (Publish wakes those).
func TestAnnounceTravelsWithTheCommit(t *testing.T) {
	db := storetest.Open(t, store.Postgres) // skips without a PostgreSQL server
	ctx, cancel := context.WithCancel(context.Background())
	a := NewPostgres(ctx, db.URL) // the writer's replica
	b := NewPostgres(ctx, db.URL)
	defer func() { cancel(); <-a.Done(); <-b.Done() }()

	announce := func(from *Postgres, topic string, commit bool) {
		t.Helper()
		errRollback := errors.New("roll back")
		err := db.InTx(ctx, func(tx *store.Tx) error {
			if err := from.Announce(ctx, tx, topic); err != nil {
				return err
			}
			if !commit {
				return errRollback
			}
			return nil
		})
		if commit && err != nil || !commit && !errors.Is(err, errRollback) {
			t.Fatalf("announce %s (commit %v): %v", topic, commit, err)
		}
	}
	// listening returns once p's listener is up and has made the wake-up of
	// every waiter it makes when it connects: whichever woke the probe, that
	// wake-up or the probe's announcement, came after it.
	listening := func(p, from *Postgres) {
		probe := p.Subscribe(newTopic("probe"))
		defer probe.Close()
		announce(from, probe.topic, true)
		woken(t, probe)
	}
	listening(b, a)
	listening(a, b)

	rolledBack := b.Subscribe(newTopic("rolled-back"))
	defer rolledBack.Close()
	committed := b.Subscribe(newTopic("committed"))
	defer committed.Close()
	own := a.Subscribe(committed.topic)
	defer own.Close()
	announce(a, rolledBack.topic, false)
	announce(a, committed.topic, true)
	woken(t, committed)
	// PostgreSQL delivers notifications in commit order and a listener relays
	// them in order: had the rolled-back transaction sent one, its wake-up
	// would be here already.
	if pending(rolledBack) {
		t.Error("a rolled-back transaction woke the other replica")
	}
	// The same holds for a's listener, which must skip its own NOTIFY.
	marker := a.Subscribe(newTopic("marker"))
	defer marker.Close()
	announce(b, marker.topic, true)
	woken(t, marker)
	if pending(own) {
		t.Error("the writer's replica was woken by its own NOTIFY")
	}
}

// A topic list longer than one NOTIFY payload is split, each payload under
// PostgreSQL's limit and naming the replica.
func TestPayloadsStayUnderTheLimit(t *testing.T) {
	p := &Postgres{replica: "r1"}
	var topics []string
	for i := range 1000 {
		topics = append(topics, newTopic("ns")+string(rune('a'+i%26)))
	}
	events := make([]Event, len(topics))
	for i, t := range topics {
		events[i] = Event{Topic: t}
	}
	payloads := p.payloads(events)
	if len(payloads) < 2 {
		t.Fatalf("%d payloads for 1000 topics, want several", len(payloads))
	}
	n := 0
	for _, pl := range payloads {
		if len(pl) > maxPayload {
			t.Errorf("payload of %d bytes, over %d", len(pl), maxPayload)
		}
		sender, rest, _ := strings.Cut(pl, " ")
		if sender != "r1" {
			t.Errorf("payload starts with %q, want the replica id", sender)
		}
		n += len(strings.Fields(rest))
	}
	if n != len(topics) {
		t.Errorf("%d topics in the payloads, want %d", n, len(topics))
	}
}

// newTopic is a topic of this test run alone: other tests share the channel.
func newTopic(name string) string {
	var b [6]byte
	rand.Read(b[:])
	return name + ":" + hex.EncodeToString(b[:])
}

// woken waits for a wake-up of sub.
func woken(t *testing.T, sub *Subscription) {
	t.Helper()
	testkit.Receive(t, "a wake-up of "+sub.topic, sub.C)
}

// pending reports whether sub has a wake-up waiting.
func pending(sub *Subscription) bool {
	select {
	case <-sub.C:
		return true
	default:
		return false
	}
}

// An event announced with its facts wakes, on the other replica, the waiters
// whose terms hold on them and no other; an event that is not Complete, as an
// older replica announces every arrival, wakes them all.
func TestWatchAcrossReplicas(t *testing.T) {
	db := storetest.Open(t, store.Postgres) // skips without a PostgreSQL server
	ctx, cancel := context.WithCancel(context.Background())
	a := NewPostgres(ctx, db.URL)
	b := NewPostgres(ctx, db.URL)
	defer func() { cancel(); <-a.Done(); <-b.Done() }()
	announce := func(events ...Event) {
		t.Helper()
		if err := db.InTx(ctx, func(tx *store.Tx) error { return a.AnnounceEvents(ctx, tx, events...) }); err != nil {
			t.Fatalf("announce: %v", err)
		}
	}
	probe := b.Subscribe(newTopic("probe"))
	defer probe.Close()
	announce(Event{Topic: probe.topic})
	woken(t, probe)

	topic := newTopic("ns")
	order := b.Watch(Want{Topic: topic, Terms: []Term{{"to", Prefix, []string{"order-42@"}}}})
	defer order.Close()
	reset := b.Watch(Want{Topic: topic, Terms: []Term{{"subject", Contains, []string{"password reset"}}}})
	defer reset.Close()
	every := b.Subscribe(topic)
	defer every.Close()
	marker := b.Subscribe(newTopic("marker"))
	defer marker.Close()

	announce(Event{Topic: topic, Complete: true, Facts: []Fact{{"to", "order-42@x.example"}, {"subject", "your order"}}},
		Event{Topic: marker.topic})
	woken(t, marker) // notifications are relayed in order: the first is in
	if !pending(order) || pending(reset) || !pending(every) {
		t.Fatal("the event did not wake exactly the waiters it matches")
	}
	announce(Event{Topic: topic, Complete: true, Facts: []Fact{{"to", "someone@x.example"}, {"subject", "Password reset"}}},
		Event{Topic: marker.topic})
	woken(t, marker)
	if pending(order) || pending(reset) || !pending(every) {
		t.Fatal("an event whose facts hold for no conditional waiter woke one (facts are folded by the caller: Password is not password)")
	}
	announce(Event{Topic: topic})
	woken(t, order)
	woken(t, reset)
	woken(t, every)
}
