package store

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"encoding/binary"
	"fmt"
	"io"
	"log/slog"
	"os"
	"time"
)

// How the SQLite WAL is kept.
//
// The writer's commits are made durable by an fdatasync of the WAL (walSyncer).
// On ext4 and most other file systems, an fdatasync after writes that extend a
// file must also commit the new size and block allocation to the file system
// journal; after writes into blocks already written it only flushes data. The
// first costs more (docs/benchmarks.md, "Machine"). So the WAL is written once
// to its working size with zeros when the store opens (walPreallocBytes), and
// afterwards reused from its start instead of being truncated: SQLite ignores
// everything past the last frame whose salt and checksum chain are valid, and
// zeros never are.
//
// Checkpoints copy the WAL into the database file. maintainWAL runs them from
// its own connection (synchronous=FULL) when enough frames are waiting
// (walCheckpointPages) or the writer has gone quiet; a PASSIVE checkpoint never
// blocks the writer. Checkpointing less often than after every commit lets one
// copy of a page that many commits rewrote (index leaves, counters) stand for
// all of them. A small message writes about 24 KiB of frames (its commit's
// share of the pages it rewrote), so at 40 MiB a burst of about 1,700 of them
// passes without a checkpoint, whose copying and syncing would compete with
// ingest for the cores and the disk; its checkpoint comes when the writer
// goes quiet. At 16 MiB, small-message ingest was 0.9 times as fast
// (docs/benchmarks.md, "Ingest after issue 20").
//
// A WAL that has been checkpointed can be reused from its first frame only
// when no transaction is writing. Under steady ingest the writer almost always
// is, so once the WAL passes walRestartPages maintainWAL asks the writer to
// restart it between two transactions (restartWAL): a RESTART checkpoint on the
// writer's own connection, made durable like every other checkpoint, that has
// little left to copy because a PASSIVE checkpoint has just run. If readers
// still use the old frames it gives up quickly and is asked again later; the
// WAL meanwhile grows past its preallocated size, which only costs speed, and
// a fast writer can outrun the checkpoint the same way. The first commit after
// the restart cuts the file back to walPreallocBytes (the writer's
// journal_size_limit).
const (
	walPageBytes       = 4096
	walPreallocBytes   = 64 << 20 // the WAL's working size, written once at open
	walCheckpointPages = 10240    // ~40 MiB waiting: copy into the database file
	walRestartPages    = 12288    // ~48 MiB used: restart the WAL from its start
	walTruncatePages   = 65536    // ~256 MiB: restarts keep failing; truncate it
	walRestartBusy     = 100      // ms the writer waits for readers when restarting

	// maintainWAL reads the WAL's progress every walPollInterval (a 100-byte
	// read of the wal-index), so that a fast writer is asked to restart the
	// WAL long before it outgrows its preallocated size: between two polls at
	// 50 ms, even 100 MB/s of WAL adds 5 MiB. The writer counts as quiet when
	// walQuietPolls polls in a row (250 ms) found no new frame.
	walPollInterval = 50 * time.Millisecond
	walQuietPolls   = 5
)

// preallocateWAL extends the WAL file at path with zeros to walPreallocBytes
// and syncs it. Only bytes past the current end are written, and only before
// the writer's first transaction, so no frame is ever overwritten.
func preallocateWAL(path string) error {
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		return fmt.Errorf("open WAL: %w", err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return fmt.Errorf("stat WAL: %w", err)
	}
	size := st.Size()
	if size >= walPreallocBytes {
		return nil
	}
	zeros := make([]byte, 1<<20)
	for size < walPreallocBytes {
		n := min(int64(len(zeros)), walPreallocBytes-size)
		if _, err := f.WriteAt(zeros[:n], size); err != nil {
			return fmt.Errorf("preallocate WAL: %w", err)
		}
		size += n
	}
	if err := f.Sync(); err != nil {
		return fmt.Errorf("preallocate WAL: %w", err)
	}
	return nil
}

// walProgress is how far the WAL has been written and copied back, in frames.
type walProgress struct {
	round      uint32 // the WAL header's first salt: one more each time the WAL starts over
	frames     uint32 // valid frames in the WAL (mxFrame)
	backfilled uint32 // of those, already in the database file (nBackfill)
}

// Offsets into the wal-index (the -shm file), as documented in "WAL-mode File
// Format", sqlite.org/walformat.html section 2.1: two copies of the 48-byte
// WalIndexHdr, then WalCkptInfo. Integers are in the machine's byte order.
const (
	shmHeaderBytes  = 48
	shmIsInit       = 12  // u8, 1 once the header is valid
	shmMxFrame      = 16  // u32, index of the last valid frame
	shmSalt1        = 32  // u32 big-endian, as in the WAL header (aSalt[0])
	shmNBackfill    = 96  // u32, frames already copied into the database
	shmReadBytes    = 100 // enough for all three fields
	shmHeaderCopies = 2
)

// readWALProgress reads the WAL's progress from the wal-index header. SQLite
// writes the header's two copies in turn, so a read that finds them unequal
// came in the middle of an update and is reported as not ok; so is a header
// not yet initialised.
func readWALProgress(shm io.ReaderAt) (walProgress, bool) {
	var b [shmReadBytes]byte
	if _, err := shm.ReadAt(b[:], 0); err != nil {
		return walProgress{}, false
	}
	if b[shmIsInit] != 1 || string(b[:shmHeaderBytes]) != string(b[shmHeaderBytes:shmHeaderCopies*shmHeaderBytes]) {
		return walProgress{}, false
	}
	return walProgress{
		round:      binary.BigEndian.Uint32(b[shmSalt1:]),
		frames:     binary.NativeEndian.Uint32(b[shmMxFrame:]),
		backfilled: binary.NativeEndian.Uint32(b[shmNBackfill:]),
	}, true
}

// maintainWAL checkpoints the SQLite WAL from its own connection (see the
// comment at the top of this file for when and why).
func (db *DB) maintainWAL(m *sql.DB, shmPath string, stop <-chan struct{}) {
	defer db.wg.Done()
	defer m.Close()
	t := time.NewTicker(walPollInterval)
	defer t.Stop()
	var shm *os.File // opened once SQLite has created it
	defer func() {
		if shm != nil {
			shm.Close()
		}
	}()
	var last walProgress
	unchanged := 0 // polls in a row that found the WAL as before
	for {
		select {
		case <-stop:
			m.Exec("PRAGMA wal_checkpoint(TRUNCATE)")
			return
		case <-t.C:
		}
		if shm == nil {
			shm, _ = os.Open(shmPath)
		}
		p, known := walProgress{}, false
		if shm != nil {
			p, known = readWALProgress(shm)
		}
		if known && p == last {
			unchanged++
		} else {
			unchanged = 0
		}
		quiet := unchanged >= walQuietPolls
		last = p
		if known && p.frames-p.backfilled < walCheckpointPages && !(quiet && p.frames > p.backfilled) {
			continue
		}
		db.checkpoint(m)
	}
}

// checkpoint runs a PASSIVE checkpoint on m and, when the WAL has grown past
// walRestartPages, asks the writer to restart it.
func (db *DB) checkpoint(m *sql.DB) {
	defer func() {
		if p := recover(); p != nil {
			slog.Error("WAL checkpoint panicked", "panic", fmt.Sprint(p))
		}
	}()
	var busy, logPages, done int
	if err := m.QueryRow("PRAGMA wal_checkpoint(PASSIVE)").Scan(&busy, &logPages, &done); err != nil {
		slog.Warn("WAL checkpoint failed", "err", err)
		return
	}
	switch {
	case logPages >= walTruncatePages:
		m.Exec("PRAGMA wal_checkpoint(TRUNCATE)")
	case logPages >= walRestartPages:
		db.restartWAL.Store(true)
	}
}

// maybeRestartWAL restarts the WAL from its first frame when maintainWAL asked
// for it. It runs on the writer's connection between transactions, the only
// moment a restart can happen under steady ingest, with synchronous=FULL for
// the duration so that the database file is synced before any frame is
// overwritten. A failure is logged and leaves the WAL growing; it is retried
// when maintainWAL asks again.
func (db *DB) maybeRestartWAL(ctx context.Context) {
	if !db.restartWAL.Swap(false) {
		return
	}
	conn, err := db.W.Conn(ctx)
	if err != nil {
		return
	}
	defer conn.Close()
	var busy, logPages, done int
	err = func() error {
		if _, err := conn.ExecContext(ctx, "PRAGMA synchronous = FULL"); err != nil {
			return err
		}
		if _, err := conn.ExecContext(ctx, fmt.Sprintf("PRAGMA busy_timeout = %d", walRestartBusy)); err != nil {
			return err
		}
		return conn.QueryRowContext(ctx, "PRAGMA wal_checkpoint(RESTART)").Scan(&busy, &logPages, &done)
	}()
	// The writer must go back to synchronous=OFF and its long busy timeout; if
	// it cannot, the connection is dropped and the pool opens a fresh one with
	// the writer's settings.
	_, err1 := conn.ExecContext(ctx, "PRAGMA synchronous = OFF")
	_, err2 := conn.ExecContext(ctx, fmt.Sprintf("PRAGMA busy_timeout = %d", busyTimeoutMs))
	if err1 != nil || err2 != nil {
		conn.Raw(func(any) error { return driver.ErrBadConn })
	}
	if err != nil {
		slog.Warn("WAL restart failed", "err", err)
	}
}

// SQLiteWALFrames reports how many frames the WAL of the SQLite database at
// dbPath holds, read from its wal-index; ok is false when that cannot be read
// (no such database, not in WAL mode, or caught mid-update). It is meant for
// tests and diagnostics: the count drops when the WAL restarts.
func SQLiteWALFrames(dbPath string) (frames uint32, ok bool) {
	f, err := os.Open(dbPath + "-shm")
	if err != nil {
		return 0, false
	}
	defer f.Close()
	p, ok := readWALProgress(f)
	return p.frames, ok
}
