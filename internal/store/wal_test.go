package store

import (
	"context"
	"database/sql"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// openWALTestStore opens a SQLite store in a fresh directory with a table of
// blobs, and returns it with the database path.
func openWALTestStore(t *testing.T) (*DB, string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "wal.db")
	db, err := Open(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	if _, err := db.Exec(context.Background(), "CREATE TABLE t (id INTEGER PRIMARY KEY, b BLOB NOT NULL)"); err != nil {
		t.Fatal(err)
	}
	return db, path
}

// writePages commits n rows of about one WAL page each, in transactions of 64.
func writePages(t *testing.T, db *DB, n int) {
	t.Helper()
	ctx := context.Background()
	row := []byte(strings.Repeat("x", 3000))
	for done := 0; done < n; done += 64 {
		err := db.InTx(ctx, func(tx *Tx) error {
			for i := 0; i < 64 && done+i < n; i++ {
				if _, err := tx.Exec(ctx, "INSERT INTO t (b) VALUES (?)", row); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
}

func walSize(t *testing.T, path string) int64 {
	t.Helper()
	st, err := os.Stat(path + "-wal")
	if err != nil {
		t.Fatal(err)
	}
	return st.Size()
}

// The progress read from the wal-index agrees with what SQLite itself reports
// for the same WAL, before and after a checkpoint.
func TestReadWALProgressMatchesSQLite(t *testing.T) {
	db, path := openWALTestStore(t)
	writePages(t, db, 200)
	shm, err := os.Open(path + "-shm")
	if err != nil {
		t.Fatal(err)
	}
	defer shm.Close()
	before, ok := readWALProgress(shm)
	if !ok {
		t.Fatal("wal-index header not readable")
	}
	m, err := sql.Open("sqlite", "file:"+path)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	var busy, logPages, done int
	if err := m.QueryRow("PRAGMA wal_checkpoint(PASSIVE)").Scan(&busy, &logPages, &done); err != nil {
		t.Fatal(err)
	}
	if before.frames < 200 || int(before.frames) != logPages {
		t.Errorf("wal-index says %d frames, SQLite %d (at least 200 written)", before.frames, logPages)
	}
	after, ok := readWALProgress(shm)
	if !ok || after.frames != before.frames || int(after.backfilled) != done || done != logPages {
		t.Errorf("after a full checkpoint: %+v (ok %v), SQLite copied %d of %d", after, ok, done, logPages)
	}
}

// A torn or uninitialised header is not trusted.
func TestReadWALProgressRejectsTornHeader(t *testing.T) {
	var b [shmReadBytes]byte
	b[shmIsInit], b[shmHeaderBytes+shmIsInit] = 1, 1
	b[shmMxFrame], b[shmHeaderBytes+shmMxFrame] = 7, 7
	if p, ok := readWALProgress(strings.NewReader(string(b[:]))); !ok || p.frames != 7 {
		t.Fatalf("consistent header: %+v %v", p, ok)
	}
	b[shmHeaderBytes+shmMxFrame] = 8 // second copy mid-update
	if _, ok := readWALProgress(strings.NewReader(string(b[:]))); ok {
		t.Error("torn header accepted")
	}
	var zero [shmReadBytes]byte
	if _, ok := readWALProgress(strings.NewReader(string(zero[:]))); ok {
		t.Error("uninitialised header accepted")
	}
	if _, ok := readWALProgress(strings.NewReader("short")); ok {
		t.Error("short file accepted")
	}
}

// The WAL is written to its working size when the store opens, and under
// steady writes it is restarted from its start instead of growing past it
// or being truncated.
func TestWALPreallocatedAndRestarted(t *testing.T) {
	if testing.Short() {
		t.Skip("writes about 40 MB")
	}
	db, path := openWALTestStore(t)
	if got := walSize(t, path); got != walPreallocBytes {
		t.Fatalf("WAL is %d bytes after open, want %d", got, walPreallocBytes)
	}
	shm, err := os.Open(path + "-shm")
	if err != nil {
		t.Fatal(err)
	}
	defer shm.Close()

	// Past the restart threshold, maintainWAL (polling every 50 ms) checkpoints and
	// asks the writer to restart; the writer does so before its next
	// transaction. Keep writing until the WAL starts over.
	written := 0
	restarted := false
	deadline := time.Now().Add(60 * time.Second)
	peak := uint32(0)
	for !restarted && time.Now().Before(deadline) && written < 8*walRestartPages {
		writePages(t, db, 256)
		written += 256
		p, ok := readWALProgress(shm)
		if !ok {
			continue
		}
		if p.frames < peak {
			restarted = true
		}
		peak = max(peak, p.frames)
	}
	if !restarted {
		t.Fatalf("WAL never restarted: %d frames after %d rows", peak, written)
	}
	if peak < walRestartPages {
		t.Errorf("WAL restarted at %d frames, before the threshold %d", peak, walRestartPages)
	}
	if got := walSize(t, path); got != walPreallocBytes {
		t.Errorf("WAL is %d bytes after a restart, want it kept at %d", got, walPreallocBytes)
	}

	// After the restart the file holds new frames at its start and old ones
	// further on. Copied as they are (as after a power loss with both synced),
	// the database opens with every committed row and nothing else.
	writePages(t, db, 100)
	written += 100
	dir := t.TempDir()
	for _, suffix := range []string{"", "-wal"} {
		b, err := os.ReadFile(path + suffix)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "copy.db"+suffix), b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	c, err := sql.Open("sqlite", "file:"+filepath.Join(dir, "copy.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	var n int
	var check string
	if err := c.QueryRow("SELECT count(*) FROM t").Scan(&n); err != nil {
		t.Fatal(err)
	}
	if err := c.QueryRow("PRAGMA integrity_check").Scan(&check); err != nil {
		t.Fatal(err)
	}
	if n != written || check != "ok" {
		t.Errorf("copy has %d rows (want %d), integrity %q", n, written, check)
	}
}
