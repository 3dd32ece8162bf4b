package notify

import (
	"context"
	"testing"
)

func TestPublishWakesOnlyItsTopic(t *testing.T) {
	h := NewHub()
	a := h.Subscribe("a")
	b := h.Subscribe("b")
	defer a.Close()
	defer b.Close()
	h.Publish(context.Background(), "a", "a") // coalesced, never blocks
	select {
	case <-a.C:
	default:
		t.Fatal("subscriber of a not woken")
	}
	select {
	case <-b.C:
		t.Fatal("subscriber of b woken by a")
	default:
	}
	a.Close()
	a.Close()
	if n := h.Waiters(); n != 1 {
		t.Fatalf("Waiters = %d after close, want 1", n)
	}
}
