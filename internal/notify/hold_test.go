package notify

import (
	"context"
	"errors"
	"net/http/httptest"
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

func TestAnswer(t *testing.T) {
	type page struct{ Total int }
	// answer holds for an hour, so a hold never ends by chance.
	answer := func(hold bool, h *Hub, look func(context.Context) (page, bool, error)) (*httptest.ResponseRecorder, error) {
		w := httptest.NewRecorder()
		r := httptest.NewRequest("GET", "/api/x/inbox?wait=true&limit=5", nil)
		err := Answer(w, r, hold, h, Want{Topic: "t"}, Policy{Hold: time.Hour}, look)
		return w, err
	}
	none := func(context.Context) (page, bool, error) { return page{}, false, nil }
	t.Run("without hold, no match is a 200", func(t *testing.T) {
		w, err := answer(false, NewHub(), none)
		if err != nil || w.Code != 200 || w.Body.String() != `{"Total":0}`+"\n" {
			t.Fatalf("%d %q, %v", w.Code, w.Body, err)
		}
	})
	t.Run("a hold that ends without a match is a 307 to the same URL", func(t *testing.T) {
		w := httptest.NewRecorder()
		r := httptest.NewRequest("GET", "/api/x/inbox?wait=true&limit=5", nil)
		err := Answer(w, r, true, NewHub(), Want{Topic: "t"}, Policy{Hold: time.Nanosecond}, none)
		if err != nil || w.Code != 307 || w.Header().Get("Location") != "/api/x/inbox?wait=true&limit=5" || w.Body.Len() != 0 {
			t.Fatalf("%d %v %q, %v", w.Code, w.Header(), w.Body, err)
		}
	})
	t.Run("a held request is answered with the match", func(t *testing.T) {
		h := NewHub()
		arrived := arriveWhenHeld(t, h, "t")
		w, err := answer(true, h, func(context.Context) (page, bool, error) {
			if arrived.Load() {
				return page{Total: 1}, true, nil
			}
			return page{}, false, nil
		})
		if err != nil || w.Code != 200 || w.Body.String() != `{"Total":1}`+"\n" {
			t.Fatalf("%d %q, %v", w.Code, w.Body, err)
		}
	})
	t.Run("an error is returned, nothing written", func(t *testing.T) {
		boom := errors.New("boom")
		for _, hold := range []bool{false, true} {
			w, err := answer(hold, NewHub(), func(context.Context) (page, bool, error) { return page{}, false, boom })
			if !errors.Is(err, boom) || w.Body.Len() != 0 || len(w.Header()) != 0 {
				t.Fatalf("hold %v: %d %q, %v", hold, w.Code, w.Body, err)
			}
		}
	})
}
