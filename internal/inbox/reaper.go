package inbox

import (
	"context"
	"fmt"
	"time"

	"github.com/catchbox/catchbox/internal/store"
)

// reapBatch bounds one delete transaction, so the reaper never holds the writer
// long enough to stall ingest.
const reapBatch = inChunk

// Reap deletes emails whose expires_timestamp has passed, with their recipients,
// attachments, raw source and the blobs nothing else refers to, in batches. It
// walks the emails_expiry index, so its cost follows the number of expired emails,
// not the size of the store. Search already hides expired emails; Reap reclaims
// their space.
func Reap(ctx context.Context, db *store.DB, now time.Time) (int, error) {
	total := 0
	for {
		var n int
		err := db.InTx(ctx, func(tx *store.Tx) error {
			seqs, ids, err := selectEmails(ctx, tx, "SELECT seq, id FROM emails WHERE expires_ms <= ? ORDER BY expires_ms LIMIT ?", now.UnixMilli(), reapBatch)
			if err != nil {
				return err
			}
			n = len(ids)
			return deleteEmails(ctx, tx, seqs, ids)
		})
		if err != nil {
			return total, fmt.Errorf("reap expired emails: %w", err)
		}
		total += n
		if n < reapBatch {
			return total, nil
		}
	}
}
