//go:build linux

package inbox

import (
	"context"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"

	"github.com/catchbox/catchbox/internal/notify"
	"github.com/catchbox/catchbox/internal/store"
	"github.com/catchbox/catchbox/internal/store/storetest"
)

// A message is acknowledged only once the WAL's fsync has succeeded: when the
// fsync fails, Deliver fails, and so does every later one (the store stops
// acknowledging until it is restarted).
func TestDeliverWaitsForTheWALFsync(t *testing.T) {
	db := storetest.Open(t, store.SQLite)
	ctx := context.Background()
	ns := defaultNamespace(t, db)
	in := NewIngester(db, notify.NewHub())
	defer in.Close()
	deliver := func() error {
		raw := []byte("From: a@example.com\r\nTo: x@default.localhost\r\nSubject: s\r\n\r\nbody\r\n")
		_, err := in.Deliver(ctx, raw, Envelope{}, []Target{{Namespace: ns, Recipients: []string{"x@default.localhost"}}})
		return err
	}
	if err := deliver(); err != nil {
		t.Fatal(err)
	}
	// The syncer reopens the file at the WAL's path when it changes: a FIFO
	// there makes its fdatasync fail (EINVAL). SQLite keeps writing to the
	// file it has open.
	wal := strings.TrimPrefix(db.URL, "sqlite://") + "-wal"
	if err := os.Rename(wal, wal+".moved"); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(wal, 0o600); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	// Concurrent senders: batches overlap (one committed, awaiting its fsync,
	// while the next is inserted), and none may be acknowledged.
	var wg sync.WaitGroup
	var acked atomic.Int32
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 5; i++ {
				if deliver() == nil {
					acked.Add(1)
				}
			}
		}()
	}
	wg.Wait()
	if n := acked.Load(); n > 0 {
		t.Fatalf("%d deliveries acknowledged although the WAL fsync failed", n)
	}
}
