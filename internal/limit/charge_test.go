package limit

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/catchbox/catchbox/internal/testkit"
)

// Attempts charged at once never take more than the burst, however many
// arrive before any has ended: the charge is taken before the evaluation.
func TestChargeNeverExceedsBurst(t *testing.T) {
	b, _ := newClocked(1, 5)
	var ok, refused atomic.Int32
	var held sync.WaitGroup
	release := make(chan struct{})
	var wg sync.WaitGroup
	for i := 0; i < 100; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c, err := b.Charge(context.Background(), "addr")
			var r *Refused
			if errors.As(err, &r) {
				if r.Retry <= 0 {
					t.Errorf("refused with retry %v", r.Retry)
				}
				refused.Add(1)
				return
			}
			ok.Add(1)
			held.Add(1)
			go func() { defer held.Done(); <-release; c.Settle() }()
		}()
	}
	wg.Wait()
	close(release)
	held.Wait()
	if ok.Load() != 5 || refused.Load() != 95 {
		t.Fatalf("%d charged, %d refused; want 5 and 95", ok.Load(), refused.Load())
	}
	if _, err := b.Charge(context.Background(), "addr"); err == nil {
		t.Fatal("settled charges came back")
	}
}

// A refund gives the token back: a right password costs nothing.
func TestRefundGivesTheTokenBack(t *testing.T) {
	b, _ := newClocked(1, 2)
	for i := 0; i < 10; i++ {
		c, err := b.Charge(context.Background(), "k")
		if err != nil {
			t.Fatalf("charge %d: %v", i, err)
		}
		c.Refund()
		c.Settle() // after Refund: nothing more
	}
	c1, _ := b.Charge(context.Background(), "k")
	c2, _ := b.Charge(context.Background(), "k")
	c1.Settle()
	c2.Settle()
	if _, err := b.Charge(context.Background(), "k"); err == nil {
		t.Fatal("a third charge passed a burst of 2")
	}
	var nilCharge *Charge
	nilCharge.Refund()
	nilCharge.Settle()
	var none *Buckets
	if c, err := none.Charge(context.Background(), "k"); c != nil || err != nil {
		t.Fatal("nil buckets charged")
	}
}

// waiting reports whether an attempt waits on key's bucket.
func (b *Buckets) waiting(key string) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	bk := b.m[key]
	return bk != nil && bk.wake != nil
}

// An attempt that finds every token charged to attempts still being
// evaluated waits for them: a refund gives it the token, a failure leaves it
// refused.
func TestChargeWaitsForPending(t *testing.T) {
	b, _ := newClocked(0.001, 1)
	b.Wait = time.Minute
	first, err := b.Charge(context.Background(), "k")
	if err != nil {
		t.Fatal(err)
	}
	got := make(chan error, 1)
	var second *Charge
	go func() {
		c, err := b.Charge(context.Background(), "k")
		second = c
		got <- err
	}()
	testkit.WaitFor(t, "the second attempt to wait", func() bool { return b.waiting("k") })
	first.Refund()
	if err := <-got; err != nil {
		t.Fatalf("after the refund: %v", err)
	}
	go func() {
		_, err := b.Charge(context.Background(), "k")
		got <- err
	}()
	testkit.WaitFor(t, "the third attempt to wait", func() bool { return b.waiting("k") })
	second.Settle() // a failure: the token stays spent
	var r *Refused
	if err := <-got; !errors.As(err, &r) {
		t.Fatalf("after a failure: %v, want refused", err)
	}
	// Nothing pending: an empty bucket refuses at once, whatever Wait says.
	if _, err := b.Charge(context.Background(), "k"); !errors.As(err, &r) {
		t.Fatalf("empty bucket, nothing pending: %v", err)
	}
}

// A waiting attempt gives up when its context ends.
func TestChargeWaitEndsWithContext(t *testing.T) {
	b, _ := newClocked(0.001, 1)
	b.Wait = time.Hour
	first, _ := b.Charge(context.Background(), "k")
	defer first.Settle()
	ctx, cancel := context.WithCancel(context.Background())
	got := make(chan error, 1)
	go func() {
		_, err := b.Charge(ctx, "k")
		got <- err
	}()
	testkit.WaitFor(t, "the attempt to wait", func() bool { return b.waiting("k") })
	cancel()
	var r *Refused
	if err := <-got; !errors.As(err, &r) {
		t.Fatalf("%v, want refused", err)
	}
}

// Ready does not refuse a bucket whose tokens are charged to attempts that
// may yet give them back; a bucket with pending charges is never swept away.
func TestPendingBucketsKept(t *testing.T) {
	b, c := newClocked(10, 1)
	ch, _ := b.Charge(context.Background(), "k")
	if _, ok := b.Ready("k"); !ok {
		t.Fatal("Ready refused while the charge may be refunded")
	}
	c.advance(time.Hour)
	b.MaxKeys = 1
	b.Take("other")
	b.Take("third")
	if !func() bool { b.mu.Lock(); defer b.mu.Unlock(); return b.m["k"] != nil }() {
		t.Fatal("a bucket with a pending charge was dropped")
	}
	ch.Settle()
}
