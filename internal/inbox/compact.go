package inbox

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/catchbox/catchbox/internal/metrics"
	"github.com/catchbox/catchbox/internal/store"
)

// Compaction. On SQLite one writer commits every message, and its pace sets
// ingest's; compressing a small message and its body took a sixth of the
// server's CPU time per message under load, on the path to the sender's 250
// (docs/benchmarks.md, "Ingest after issue 20"). So the SQLite ingester stores
// a small message's content, its raw source then its body, as it came
// (codecPending), and the compactor compresses it once ingest has been quiet
// for compactQuiet, or at once when compactBacklog bytes wait, so that a
// sustained load cannot grow the store without bound.
//
// A raw source is compressed by moving it: the compressed copy is inserted as a
// new row, the emails are pointed at it, and the old row deleted. Rewriting
// the row in place would leave each page as full as before, holding smaller
// rows; moved, the old rows free whole pages, which later rows reuse, so the
// store ends as small as if the content had been compressed at ingest.
//
// The compactor's place, inbox_compaction.raw_cursor, is committed with each
// batch: a crash loses at most a batch's work, which the next start redoes.
// On PostgreSQL, where several writers share the work, content is compressed
// at ingest and the compactor does not run.
const (
	compactQuiet   = 250 * time.Millisecond
	compactBacklog = 8 << 20
	compactBatch   = 64
	compactPoll    = 100 * time.Millisecond
)

// compactState is the ingester's record for the compactor.
type compactState struct {
	lastActive atomic.Int64 // UnixNano of the last batch the writer took
	pending    atomic.Int64 // bytes stored as codecPending and not compacted yet (an estimate)

	quiet, poll time.Duration // compactQuiet, compactPoll (tests change them)
	backlog     int64         // compactBacklog
	beforeMove  func()        // tests: runs between a batch's read and its move

	mu     sync.Mutex // one compaction at a time; guards cursor and loaded
	cursor int64      // inbox_compaction.raw_cursor
	loaded bool       // cursor has been read from the store
}

// notePending counts the pending content that rows just committed.
func (in *Ingester) notePending(rows []*row) {
	var seen *messageBytes
	for _, r := range rows {
		if r.keepRaw && r.bytes != seen && r.bytes.raw != nil && r.bytes.raw.codec == codecPending {
			seen = r.bytes
			metrics.CompactionPending(in.compact.pending.Add(int64(len(r.bytes.raw.data))))
		}
	}
}

// RunCompactor compresses pending content until ctx ends: whenever ingest has
// been quiet for compactQuiet, and under load once compactBacklog bytes wait.
// On PostgreSQL it returns at once.
func (in *Ingester) RunCompactor(ctx context.Context) error {
	if !in.deferSmall {
		return nil
	}
	t := time.NewTicker(in.compact.poll)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
		for ctx.Err() == nil && in.compactDue() {
			n, err := in.compactOnce(ctx)
			if err != nil {
				slog.Error("Compressing stored mail failed", "err", err)
				break
			}
			if n < compactBatch {
				break
			}
		}
	}
}

// compactDue reports whether the compactor should run a batch now.
func (in *Ingester) compactDue() bool {
	pending := in.compact.pending.Load()
	if pending <= 0 {
		return false
	}
	quiet := time.Since(time.Unix(0, in.compact.lastActive.Load())) >= in.compact.quiet
	return quiet || pending >= in.compact.backlog
}

// Compact compresses all pending content now, whatever the load, and returns
// how many raw sources it compressed.
func (in *Ingester) Compact(ctx context.Context) (int, error) {
	total := 0
	for {
		n, err := in.compactOnce(ctx)
		total += n
		if err != nil || n < compactBatch {
			return total, err
		}
	}
}

// pendingSource is a raw source to compress.
type pendingSource struct {
	id     int64
	size   int64
	stored int64 // bytes stored before
	packed packed
}

// compactOnce compresses up to compactBatch pending raw sources, the oldest
// first, and returns how many.
func (in *Ingester) compactOnce(ctx context.Context) (n int, err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("panic while compressing stored mail: %v", p)
		}
	}()
	if !in.deferSmall {
		return 0, nil // nothing is stored pending
	}
	c := &in.compact
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.loaded {
		if err := in.db.QueryRow(ctx, "SELECT raw_cursor FROM inbox_compaction WHERE id = 1").Scan(&c.cursor); err != nil {
			return 0, fmt.Errorf("read compaction cursor: %w", err)
		}
		c.loaded = true
	}
	pendingBefore := c.pending.Load()
	// Every row up to hi exists by now (ids only grow), so a scan that finds
	// fewer than a batch has seen everything pending up to hi.
	var hi int64
	if err := in.db.QueryRow(ctx, "SELECT COALESCE(MAX(id), 0) FROM raw_sources").Scan(&hi); err != nil {
		return 0, fmt.Errorf("find pending raw sources: %w", err)
	}
	batch, err := in.readPending(ctx, c.cursor, hi)
	if err != nil {
		return 0, err
	}
	next := hi
	if len(batch) == compactBatch {
		next = batch[len(batch)-1].id
	}
	// Compression runs here, outside the write transaction: the writer is
	// held only for the moves.
	for i := range batch {
		content := batch[i].packed.data
		batch[i].packed = pack(content)
		batch[i].packed.size = batch[i].size
	}
	if c.beforeMove != nil {
		c.beforeMove()
	}
	var freed int64
	start := time.Now()
	err = in.db.InTx(ctx, func(tx *store.Tx) error {
		freed = 0
		for _, p := range batch {
			moved, err := moveRawSource(ctx, tx, p)
			if err != nil {
				return err
			}
			if moved {
				freed += p.stored
			}
		}
		_, err := tx.Exec(ctx, "UPDATE inbox_compaction SET raw_cursor = ? WHERE id = 1", next)
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("compress stored mail: %w", err)
	}
	c.cursor = next
	metrics.Compacted(len(batch), time.Since(start))
	if len(batch) < compactBatch {
		// Nothing pending up to hi: what ingest added meanwhile keeps the
		// count above pendingBefore, and with it the next pass.
		c.pending.CompareAndSwap(pendingBefore, 0)
	} else if c.pending.Add(-freed) < 0 {
		c.pending.Store(1) // the estimate was low; the next pass finds out
	}
	metrics.CompactionPending(c.pending.Load())
	return len(batch), nil
}

// readPending returns up to compactBatch pending raw sources after cursor and
// up to hi, in id order.
func (in *Ingester) readPending(ctx context.Context, cursor, hi int64) ([]pendingSource, error) {
	rows, err := in.db.Query(ctx, "SELECT id, size, data FROM raw_sources WHERE id > ? AND id <= ? AND codec = ? ORDER BY id LIMIT ?",
		cursor, hi, codecPending, compactBatch)
	if err != nil {
		return nil, fmt.Errorf("read pending raw sources: %w", err)
	}
	defer rows.Close()
	var batch []pendingSource
	for rows.Next() {
		var p pendingSource
		if err := rows.Scan(&p.id, &p.size, &p.packed.data); err != nil {
			return nil, fmt.Errorf("read pending raw sources: %w", err)
		}
		p.stored = int64(len(p.packed.data))
		batch = append(batch, p)
	}
	return batch, rows.Err()
}

// moveRawSource replaces the pending raw source p.id by a new row holding
// p.packed and points its emails at it. It reports false, and changes
// nothing, when the source is gone (its emails were deleted meanwhile).
func moveRawSource(ctx context.Context, tx *store.Tx, p pendingSource) (bool, error) {
	res, err := tx.Exec(ctx, "DELETE FROM raw_sources WHERE id = ? AND codec = ?", p.id, codecPending)
	if err != nil {
		return false, fmt.Errorf("remove pending raw source: %w", err)
	}
	if n, err := res.RowsAffected(); err != nil || n == 0 {
		return false, err
	}
	id, err := tx.Insert(ctx, "INSERT INTO raw_sources (codec, size, data) VALUES (?, ?, ?)", "id",
		p.packed.codec, p.packed.size, p.packed.data)
	if err != nil {
		return false, fmt.Errorf("store compressed raw source: %w", err)
	}
	if _, err := tx.Exec(ctx, "UPDATE emails SET raw_id = ? WHERE raw_id = ?", id, p.id); err != nil {
		return false, fmt.Errorf("point emails at compressed raw source: %w", err)
	}
	return true, nil
}
