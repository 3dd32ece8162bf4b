package store_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/catchbox/catchbox/internal/store"
)

// A reap job hands its store and the time it runs to the reaper, and the
// reaper's error to Every.
func TestReapJob(t *testing.T) {
	db := &store.DB{}
	boom := errors.New("boom")
	var gotDB *store.DB
	var gotNow time.Time
	job := store.ReapJob(db, "Deleted expired things", func(_ context.Context, d *store.DB, now time.Time) (int, error) {
		gotDB, gotNow = d, now
		return 2, boom
	})
	before := time.Now()
	if err := job(context.Background()); !errors.Is(err, boom) {
		t.Fatalf("err = %v", err)
	}
	if gotDB != db || gotNow.Before(before) || gotNow.After(time.Now()) {
		t.Fatalf("reaper called with %p at %v", gotDB, gotNow)
	}
}
