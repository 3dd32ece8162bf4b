package notify

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"
)

func TestUntil(t *testing.T) {
	ctx := context.Background()
	t.Run("match on the first look is answered without holding", func(t *testing.T) {
		h := NewHub()
		got, err := Until(ctx, h, "t", Policy{Hold: time.Hour}, func(context.Context) (int, bool, error) { return 7, true, nil })
		if got != 7 || err != nil {
			t.Fatalf("Until = %d, %v", got, err)
		}
		if h.Waiters() != 0 {
			t.Fatal("subscription left open")
		}
	})
	t.Run("a wake-up re-checks and answers", func(t *testing.T) {
		h := NewHub()
		var arrived atomic.Bool
		go func() {
			for h.Waiters() == 0 {
				time.Sleep(time.Millisecond)
			}
			arrived.Store(true)
			h.Publish(ctx, "other") // not ours: no answer
			h.Publish(ctx, "t")
		}()
		got, err := Until(ctx, h, "t", Policy{Hold: time.Hour}, func(context.Context) (string, bool, error) {
			return "mail", arrived.Load(), nil
		})
		if got != "mail" || err != nil {
			t.Fatalf("Until = %q, %v", got, err)
		}
	})
	t.Run("the hold ends with ErrHoldEnded", func(t *testing.T) {
		_, err := Until(ctx, NewHub(), "t", Policy{Hold: 20 * time.Millisecond}, func(context.Context) (int, bool, error) { return 0, false, nil })
		if !errors.Is(err, ErrHoldEnded) {
			t.Fatalf("err = %v, want ErrHoldEnded", err)
		}
	})
	t.Run("an error on the first look is returned", func(t *testing.T) {
		boom := errors.New("boom")
		_, err := Until(ctx, NewHub(), "t", Policy{Hold: time.Hour}, func(context.Context) (int, bool, error) { return 0, false, boom })
		if !errors.Is(err, boom) {
			t.Fatalf("err = %v, want boom", err)
		}
	})
	t.Run("while degraded, failing re-checks keep the hold until a match", func(t *testing.T) {
		var looks atomic.Int32
		got, err := Until(ctx, NewHub(), "t", Policy{Hold: time.Minute, Degraded: func() bool { return true }},
			func(context.Context) (int, bool, error) {
				switch n := looks.Add(1); {
				case n == 1:
					return 0, false, nil
				case n < 4:
					return 0, false, errors.New("database restarting")
				default:
					return int(n), true, nil
				}
			})
		if got != 4 || err != nil {
			t.Fatalf("Until = %d, %v; want the fourth look", got, err)
		}
	})
	t.Run("a client that goes away ends the hold", func(t *testing.T) {
		cctx, cancel := context.WithCancel(ctx)
		time.AfterFunc(20*time.Millisecond, cancel)
		_, err := Until(cctx, NewHub(), "t", Policy{Hold: time.Hour}, func(context.Context) (int, bool, error) { return 0, false, nil })
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("err = %v, want context.Canceled", err)
		}
	})
}
