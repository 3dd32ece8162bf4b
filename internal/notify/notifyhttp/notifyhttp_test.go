package notifyhttp

import (
	"context"
	"errors"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/catchbox/catchbox/internal/notify"
	"github.com/catchbox/catchbox/internal/testkit"
)

// arriveWhenHeld waits until a request is held on h, then marks the arrival
// and publishes topic. A request never held fails t, and the arrival is
// published all the same so that the hold ends instead of hanging the test.
func arriveWhenHeld(t *testing.T, h *notify.Hub, topic string) *atomic.Bool {
	var arrived atomic.Bool
	go func() {
		if !testkit.Eventually(testkit.Patience, func() bool { return h.Waiters() > 0 }) {
			t.Errorf("no request held on the hub after %v", testkit.Patience)
		}
		arrived.Store(true)
		h.Publish(context.Background(), topic)
	}()
	return &arrived
}

func TestAnswer(t *testing.T) {
	type page struct{ Total int }
	// answer holds for an hour, so a hold never ends by chance.
	answer := func(hold bool, h *notify.Hub, look func(context.Context) (page, bool, error)) (*httptest.ResponseRecorder, error) {
		w := httptest.NewRecorder()
		r := httptest.NewRequest("GET", "/api/x/inbox?wait=true&limit=5", nil)
		err := Answer(w, r, hold, h, notify.Want{Topic: "t"}, notify.Policy{Hold: time.Hour}, look)
		return w, err
	}
	none := func(context.Context) (page, bool, error) { return page{}, false, nil }
	t.Run("without hold, no match is a 200", func(t *testing.T) {
		w, err := answer(false, notify.NewHub(), none)
		if err != nil || w.Code != 200 || w.Body.String() != `{"Total":0}`+"\n" {
			t.Fatalf("%d %q, %v", w.Code, w.Body, err)
		}
	})
	t.Run("a hold that ends without a match is a 307 to the same URL", func(t *testing.T) {
		w := httptest.NewRecorder()
		r := httptest.NewRequest("GET", "/api/x/inbox?wait=true&limit=5", nil)
		err := Answer(w, r, true, notify.NewHub(), notify.Want{Topic: "t"}, notify.Policy{Hold: time.Nanosecond}, none)
		if err != nil || w.Code != 307 || w.Header().Get("Location") != "/api/x/inbox?wait=true&limit=5" || w.Body.Len() != 0 {
			t.Fatalf("%d %v %q, %v", w.Code, w.Header(), w.Body, err)
		}
	})
	t.Run("a held request is answered with the match", func(t *testing.T) {
		h := notify.NewHub()
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
			w, err := answer(hold, notify.NewHub(), func(context.Context) (page, bool, error) { return page{}, false, boom })
			if !errors.Is(err, boom) || w.Body.Len() != 0 || len(w.Header()) != 0 {
				t.Fatalf("hold %v: %d %q, %v", hold, w.Code, w.Body, err)
			}
		}
	})
}
