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
