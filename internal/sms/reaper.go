package sms

import (
	"context"
	"fmt"
	"time"

	"github.com/catchbox/catchbox/internal/store"
)

// reapBatch bounds one delete, so the reaper never holds the writer long enough
// to stall ingest.
const reapBatch = 500

// Reap deletes messages whose retention has passed, in batches, and returns how
// many it deleted. It walks the sms_messages_expiry index, so its cost follows
// the number of expired messages. Search already hides expired messages; Reap
// reclaims their space.
func Reap(ctx context.Context, db *store.DB, now time.Time) (int, error) {
	n, err := db.ExecBatches(ctx, reapBatch, `DELETE FROM sms_messages WHERE seq IN
		(SELECT seq FROM sms_messages WHERE expires_ms <= ? ORDER BY expires_ms LIMIT ?)`, now.UnixMilli())
	if err != nil {
		return int(n), fmt.Errorf("reap expired sms messages: %w", err)
	}
	return int(n), nil
}
