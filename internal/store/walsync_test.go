package store

import (
	"errors"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
)

// Concurrent callers all return without error, every one of them covered by a
// completed sync.
func TestWALSyncerSharesSyncs(t *testing.T) {
	path := filepath.Join(t.TempDir(), "db-wal")
	if err := os.WriteFile(path, []byte("frames"), 0o600); err != nil {
		t.Fatal(err)
	}
	s, err := newWALSyncer(path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var wg sync.WaitGroup
	errs := make(chan error, 64)
	for i := 0; i < 64; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs <- s.Sync()
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	if s.done != s.requested || s.requested != 64 {
		t.Errorf("done %d of %d requests, want all 64", s.done, s.requested)
	}
}

// A WAL file replaced at its path is reopened, so the sync reaches the file
// SQLite writes to.
func TestWALSyncerFollowsReplacedFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "db-wal")
	os.WriteFile(path, []byte("old"), 0o600)
	s, err := newWALSyncer(path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	next := filepath.Join(dir, "next")
	os.WriteFile(next, []byte("new"), 0o600)
	if err := os.Rename(next, path); err != nil {
		t.Fatal(err)
	}
	if err := s.Sync(); err != nil {
		t.Fatal(err)
	}
	st, _ := s.f.Stat()
	cur, _ := os.Stat(path)
	if !os.SameFile(st, cur) {
		t.Error("the syncer still holds the replaced file")
	}
}

// A failed fsync is final: later calls fail too, even if an fsync would now
// succeed, since the kernel may have dropped the pages it could not write.
func TestWALSyncerFailureIsSticky(t *testing.T) {
	path := filepath.Join(t.TempDir(), "db-wal")
	if err := syscall.Mkfifo(path, 0o600); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	s, err := newWALSyncer(path) // fsync of a FIFO fails with EINVAL
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := s.Sync(); err == nil {
		t.Fatal("sync of a FIFO succeeded; the test cannot make fsync fail")
	}
	// Put a regular file in its place: a fresh fsync would succeed.
	os.Remove(path)
	os.WriteFile(path, []byte("x"), 0o600)
	if err := s.Sync(); !errors.Is(err, errWALBroken) {
		t.Errorf("second sync: %v, want errWALBroken", err)
	}
}

// The trace reports each commit's end and each fsync's reach in the WAL's
// history: positions grow, the round goes up by one when the WAL starts over,
// and an fsync after a commit reaches at least its end.
func TestTraceWALFollowsRestarts(t *testing.T) {
	db, _ := openWALTestStore(t)
	var ends, reaches []WALPos
	err := db.TraceWAL(WALTrace{
		Committed: func(end WALPos, ok bool) {
			if !ok {
				t.Error("commit's end not readable")
			}
			ends = append(ends, end)
		},
		Synced: func(reach WALPos, ok bool) {
			if !ok {
				t.Error("fsync's reach not readable")
			}
			reaches = append(reaches, reach)
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	writePages(t, db, 64)
	writePages(t, db, 64)
	if _, err := db.W.Exec("PRAGMA wal_checkpoint(RESTART)"); err != nil {
		t.Fatal(err)
	}
	writePages(t, db, 64)
	if len(ends) != 3 || len(reaches) != 3 {
		t.Fatalf("%d commits and %d fsyncs traced, want 3 of each", len(ends), len(reaches))
	}
	// (The first two may also fall in two rounds, if the store went quiet long
	// enough between them for maintainWAL to copy the WAL back.)
	if a, b, c := ends[0], ends[1], ends[2]; !a.Before(b) || !b.Before(c) || c.Round != b.Round+1 {
		t.Errorf("commit ends %+v: want them in order, the last one round after the second", ends)
	}
	for i := range ends {
		if reaches[i].Before(ends[i]) {
			t.Errorf("fsync %d reached %+v, short of its commit's end %+v", i, reaches[i], ends[i])
		}
	}
}

// Rounds are ordered across the salt's wrap-around.
func TestWALPosBefore(t *testing.T) {
	for _, c := range []struct {
		p, q WALPos
		want bool
	}{
		{WALPos{5, 10}, WALPos{5, 11}, true},
		{WALPos{5, 11}, WALPos{5, 10}, false},
		{WALPos{5, 10}, WALPos{5, 10}, false},
		{WALPos{5, 900}, WALPos{6, 1}, true},
		{WALPos{6, 0}, WALPos{5, 900}, false},
		{WALPos{0xffffffff, 900}, WALPos{0, 1}, true},
	} {
		if got := c.p.Before(c.q); got != c.want {
			t.Errorf("%+v before %+v = %v, want %v", c.p, c.q, got, c.want)
		}
	}
}
