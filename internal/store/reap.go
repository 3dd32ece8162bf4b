package store

import (
	"context"
	"log/slog"
	"time"
)

// ReapJob makes a periodic job for Every out of a reaper (inbox.Reap, sms.Reap):
// each run deletes what has expired by the time it starts, and logs how many rows
// went, under done ("Deleted expired emails"), when there were any.
func ReapJob(db *DB, done string, reap func(context.Context, *DB, time.Time) (int, error)) func(context.Context) error {
	return func(ctx context.Context) error {
		n, err := reap(ctx, db, time.Now())
		if n > 0 {
			slog.Info(done, "count", n)
		}
		return err
	}
}
