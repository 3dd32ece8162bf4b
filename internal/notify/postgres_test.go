package notify

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/catchbox/catchbox/internal/store"
	"github.com/catchbox/catchbox/internal/store/storetest"
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
	payloads := p.payloads(topics)
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

// woken waits for a wake-up of sub; a minute without one is a failure rather
// than a hung test.
func woken(t *testing.T, sub *Subscription) {
	t.Helper()
	select {
	case <-sub.C:
	case <-time.After(time.Minute):
		t.Fatalf("no wake-up of %s", sub.topic)
	}
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
