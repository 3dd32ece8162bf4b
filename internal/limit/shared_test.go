package limit

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/catchbox/catchbox/internal/store"
	"github.com/catchbox/catchbox/internal/store/storetest"
)

// Two replicas charging one shared bucket at once never take more than its
// burst between them; a refund gives a token back to both, time refills it,
// and the reaper drops it once it is full.
func TestSharedNeverExceedsBurst(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		c := &clock{t: time.Date(2026, 11, 22, 3, 23, 50, 0, time.UTC)}
		var mu sync.Mutex
		now := func() time.Time { mu.Lock(); defer mu.Unlock(); return c.now() }
		advance := func(d time.Duration) { mu.Lock(); c.advance(d); mu.Unlock() }
		replicas := []*Shared{NewShared(db, "test", 0.5, 3), NewShared(db, "test", 0.5, 3)}
		for _, r := range replicas {
			r.Now = now
		}
		ctx := context.Background()
		var wg sync.WaitGroup
		charges := make(chan *Charge, 40)
		refusals := make(chan time.Duration, 40)
		for i := 0; i < 40; i++ {
			wg.Add(1)
			go func(s *Shared) {
				defer wg.Done()
				ch, err := s.Charge(ctx, "addr")
				var r *Refused
				switch {
				case errors.As(err, &r):
					refusals <- r.Retry
				case err != nil:
					t.Error(err)
				default:
					charges <- ch
				}
			}(replicas[i%2])
		}
		wg.Wait()
		close(charges)
		close(refusals)
		if len(charges) != 3 || len(refusals) != 37 {
			t.Fatalf("%d charged, %d refused; want 3 and 37", len(charges), len(refusals))
		}
		for r := range refusals {
			if r <= 0 || r > 2*time.Second {
				t.Fatalf("retry %v, want within the 2 s a token takes", r)
			}
		}
		for ch := range charges {
			ch.Settle()
		}
		// One key charged by one replica, refused by the other, then
		// refunded: the refund is the store's, but the replica that was
		// refused remembers its refusal until its retry has passed, and is
		// refused until then (never the reverse).
		var k2 []*Charge
		for i := 0; i < 3; i++ {
			ch, err := replicas[0].Charge(ctx, "k2")
			if err != nil {
				t.Fatalf("charge %d: %v", i, err)
			}
			k2 = append(k2, ch)
		}
		if _, err := replicas[1].Charge(ctx, "k2"); err == nil {
			t.Fatal("a fourth charge")
		}
		k2[0].Refund()
		if _, err := replicas[1].Charge(ctx, "k2"); err == nil {
			t.Fatal("the remembered refusal was forgotten")
		}
		if _, err := replicas[0].Charge(ctx, "k2"); err != nil {
			t.Fatalf("after a refund: %v", err)
		}
		if _, err := replicas[0].Charge(ctx, "k2"); err == nil {
			t.Fatal("two charges after one refund")
		}
		advance(2 * time.Second)
		if _, err := replicas[1].Charge(ctx, "k2"); err != nil {
			t.Fatalf("after a token's time: %v", err)
		}
		if _, err := replicas[1].Charge(ctx, "k2"); err == nil {
			t.Fatal("two charges after one token's time")
		}
		if _, err := replicas[1].Charge(ctx, "other"); err != nil {
			t.Fatalf("another key: %v", err)
		}
		if n, err := ReapShared(ctx, db, now()); err != nil || n != 0 {
			t.Fatalf("reaped %d (%v) while the buckets are not full", n, err)
		}
		if n, err := ReapShared(ctx, db, now().Add(time.Minute)); err != nil || n != 3 {
			t.Fatalf("reaped %d (%v) once full, want 3", n, err)
		}
	})
}
