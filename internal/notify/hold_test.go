package notify

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/catchbox/catchbox/internal/testkit"
)

// arriveWhenHeld waits until a request is held on h, then marks the arrival
// and publishes the topics. A request never held fails t, and the arrival is
// published all the same so that the hold ends instead of hanging the test.
func arriveWhenHeld(t *testing.T, h *Hub, topics ...string) *atomic.Bool {
	var arrived atomic.Bool
	go func() {
		if !testkit.Eventually(testkit.Patience, func() bool { return h.Waiters() > 0 }) {
			t.Errorf("no request held on the hub after %v", testkit.Patience)
		}
		arrived.Store(true)
		for _, topic := range topics {
			h.Publish(context.Background(), topic)
		}
	}()
	return &arrived
}

func TestUntil(t *testing.T) {
	ctx := context.Background()
	t.Run("match on the first look is answered without holding", func(t *testing.T) {
		h := NewHub()
		got, err := Until(ctx, h, Want{Topic: "t"}, Policy{Hold: time.Hour}, func(context.Context) (int, bool, error) { return 7, true, nil })
		if got != 7 || err != nil {
			t.Fatalf("Until = %d, %v", got, err)
		}
		if h.Waiters() != 0 {
			t.Fatal("subscription left open")
		}
	})
	t.Run("a wake-up re-checks and answers", func(t *testing.T) {
		h := NewHub()
		arrived := arriveWhenHeld(t, h, "other", "t") // "other" is not ours: no answer
		got, err := Until(ctx, h, Want{Topic: "t"}, Policy{Hold: time.Hour}, func(context.Context) (string, bool, error) {
			return "mail", arrived.Load(), nil
		})
		if got != "mail" || err != nil {
			t.Fatalf("Until = %q, %v", got, err)
		}
	})
	t.Run("the hold ends with ErrHoldEnded", func(t *testing.T) {
		_, err := Until(ctx, NewHub(), Want{Topic: "t"}, Policy{Hold: 20 * time.Millisecond}, func(context.Context) (int, bool, error) { return 0, false, nil })
		if !errors.Is(err, ErrHoldEnded) {
			t.Fatalf("err = %v, want ErrHoldEnded", err)
		}
	})
	t.Run("a panic in a look is an error", func(t *testing.T) {
		_, err := Until(ctx, NewHub(), Want{Topic: "t"}, Policy{Hold: time.Hour}, func(context.Context) (int, bool, error) { panic("boom") })
		if err == nil || !strings.Contains(err.Error(), "look panicked: boom") {
			t.Fatalf("err = %v, want the panic as an error", err)
		}
	})
	t.Run("an error on the first look is returned", func(t *testing.T) {
		boom := errors.New("boom")
		_, err := Until(ctx, NewHub(), Want{Topic: "t"}, Policy{Hold: time.Hour}, func(context.Context) (int, bool, error) { return 0, false, boom })
		if !errors.Is(err, boom) {
			t.Fatalf("err = %v, want boom", err)
		}
	})
	t.Run("while degraded, failing re-checks keep the hold until a match", func(t *testing.T) {
		var looks atomic.Int32
		got, err := Until(ctx, NewHub(), Want{Topic: "t"}, Policy{Hold: time.Minute, Degraded: func() bool { return true }},
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
		_, err := Until(cctx, NewHub(), Want{Topic: "t"}, Policy{Hold: time.Hour}, func(context.Context) (int, bool, error) { return 0, false, nil })
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("err = %v, want context.Canceled", err)
		}
	})
}

func TestSearch(t *testing.T) {
	ctx := context.Background()
	looks := 0
	none := func(context.Context) (int, bool, error) { looks++; return 3, false, nil }
	t.Run("without hold, one look is the answer, match or not", func(t *testing.T) {
		looks = 0
		h := NewHub()
		got, err := Search(ctx, false, h, Want{Topic: "t"}, Policy{Hold: time.Hour}, none)
		if got != 3 || err != nil || looks != 1 || h.Waiters() != 0 {
			t.Fatalf("Search = %d, %v after %d looks, %d waiters", got, err, looks, h.Waiters())
		}
	})
	t.Run("with hold, no match ends the hold", func(t *testing.T) {
		got, err := Search(ctx, true, NewHub(), Want{Topic: "t"}, Policy{Hold: time.Nanosecond}, none)
		if got != 0 || !errors.Is(err, ErrHoldEnded) {
			t.Fatalf("Search = %d, %v; want ErrHoldEnded", got, err)
		}
	})
	t.Run("with hold, a match after an arrival is the answer", func(t *testing.T) {
		h := NewHub()
		arrived := arriveWhenHeld(t, h, "t")
		got, err := Search(ctx, true, h, Want{Topic: "t"}, Policy{Hold: time.Hour}, func(context.Context) (int, bool, error) {
			return 9, arrived.Load(), nil
		})
		if got != 9 || err != nil {
			t.Fatalf("Search = %d, %v", got, err)
		}
	})
}
