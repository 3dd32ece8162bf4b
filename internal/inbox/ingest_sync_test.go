//go:build linux

package inbox

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"os"
	"sort"
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

// Every acknowledged message lies in the WAL below the reach of an fsync that
// completed before it was acknowledged, for many concurrent senders and across
// restarts of the WAL from its first frame. The SIGKILL crash test cannot show
// this (the kernel keeps a killed process's writes), so the store reports,
// through store.DB.TraceWAL, where each commit ended in the WAL and how far each
// completed fsync reached, and the test checks every acknowledgement against
// them at two moments:
//
//   - when the ingester wakes a batch's waiters, just before it answers the
//     batch's senders on the writer's goroutine: every commit made so far must
//     be covered (the next batch is still uncommitted then);
//   - when Deliver returns to a sender: the commit holding its message must be
//     covered.
//
// It fails if the fsync is skipped, or if a batch is answered before its fsync.
func TestAcknowledgedMailIsInTheSyncedWAL(t *testing.T) {
	if testing.Short() {
		t.Skip("writes some 50 MiB of WAL")
	}
	db := storetest.Open(t, store.SQLite)
	ctx := context.Background()
	ns := defaultNamespace(t, db)
	wal := &walLedger{}
	err := db.TraceWAL(store.WALTrace{
		Committed: func(end store.WALPos, ok bool) {
			// Called on the writer's goroutine before it can commit again, so
			// the newest email now is the newest of this commit.
			var newest int64
			err := db.QueryRow(ctx, "SELECT coalesce(max(seq), 0) FROM emails").Scan(&newest)
			wal.committed(end, ok && err == nil, newest)
		},
		Synced: wal.synced,
	})
	if err != nil {
		t.Fatal(err)
	}
	in := NewIngester(db, &ackCheck{Hub: notify.NewHub(), before: wal.checkAllCovered})
	defer in.Close()

	const senders, wantRounds, maxMessages = 16, 4, 4000
	var wg sync.WaitGroup
	var sent, delivered atomic.Int32
	for g := 0; g < senders; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for wal.rounds() < wantRounds && sent.Add(1) <= maxMessages && !wal.failed() {
				ids, err := in.Deliver(ctx, randomMessage(t, 128<<10), Envelope{},
					[]Target{{Namespace: ns, Recipients: []string{"x@default.localhost"}}})
				if err != nil {
					t.Errorf("deliver: %v", err)
					return
				}
				delivered.Add(1)
				var seq int64
				if err := db.QueryRow(ctx, "SELECT seq FROM emails WHERE id = ?", ids[0]).Scan(&seq); err != nil {
					t.Errorf("acknowledged email %s not found: %v", ids[0], err)
					return
				}
				wal.checkCovered(seq)
			}
		}()
	}
	wg.Wait()
	in.Close()
	commits, syncs, rounds := wal.counts()
	t.Logf("%d messages, %d commits, %d fsyncs, %d WAL rounds", delivered.Load(), commits, syncs, rounds)
	for _, f := range wal.failures() {
		t.Error(f)
	}
	if rounds < wantRounds && !wal.failed() {
		t.Errorf("the WAL started over %d times in %d messages; the test needs %d", rounds-1, maxMessages, wantRounds-1)
	}
}

// walLedger holds what store.WALTrace reported: the commits in order, the
// furthest reach of a completed fsync, and the WAL rounds seen.
type walLedger struct {
	mu        sync.Mutex
	commits   []tracedCommit
	reach     store.WALPos
	anySynced bool // some fsync has completed
	syncs     int
	round     uint32
	nRounds   int
	problems  []string
}

// tracedCommit is where one commit ended and the newest email it holds.
type tracedCommit struct {
	end    store.WALPos
	newest int64
}

func (l *walLedger) committed(end store.WALPos, ok bool, newest int64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !ok {
		l.fail("a commit's end in the WAL could not be read")
		return
	}
	if l.nRounds == 0 || end.Round != l.round {
		l.round = end.Round
		l.nRounds++
	}
	l.commits = append(l.commits, tracedCommit{end, newest})
}

func (l *walLedger) synced(reach store.WALPos, ok bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.syncs++
	if ok && (!l.anySynced || l.reach.Before(reach)) {
		l.reach, l.anySynced = reach, true
	}
}

// covered reports whether end is below the reach of a completed fsync; l.mu
// is held.
func (l *walLedger) covered(end store.WALPos) bool {
	return l.anySynced && !l.reach.Before(end)
}

// checkAllCovered records a failure unless every commit so far is covered.
func (l *walLedger) checkAllCovered() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if n := len(l.commits); n > 0 && !l.covered(l.commits[n-1].end) {
		l.fail(fmt.Sprintf("a batch was answered while commit %d (ending at %+v) was not synced (fsyncs reached %+v)",
			n, l.commits[n-1].end, l.reach))
	}
}

// checkCovered records a failure unless the commit that stored the email seq
// is covered.
func (l *walLedger) checkCovered(seq int64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	i := sort.Search(len(l.commits), func(i int) bool { return l.commits[i].newest >= seq })
	switch {
	case i == len(l.commits):
		l.fail(fmt.Sprintf("email %d acknowledged before any commit holding it was traced", seq))
	case !l.covered(l.commits[i].end):
		l.fail(fmt.Sprintf("email %d acknowledged while its commit (ending at %+v) was not synced (fsyncs reached %+v)",
			seq, l.commits[i].end, l.reach))
	}
}

// fail records a problem; l.mu is held. Only the first few are kept.
func (l *walLedger) fail(msg string) {
	if len(l.problems) < 5 {
		l.problems = append(l.problems, msg)
	}
}

func (l *walLedger) failed() bool { l.mu.Lock(); defer l.mu.Unlock(); return len(l.problems) > 0 }

func (l *walLedger) failures() []string { l.mu.Lock(); defer l.mu.Unlock(); return l.problems }

func (l *walLedger) rounds() int { l.mu.Lock(); defer l.mu.Unlock(); return l.nRounds }

func (l *walLedger) counts() (commits, syncs, rounds int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.commits), l.syncs, l.nRounds
}

// ackCheck is a notifier that calls before ahead of each wake-up, which the
// ingester makes right before it answers a batch's senders.
type ackCheck struct {
	*notify.Hub
	before func()
}

func (a *ackCheck) PublishEvents(ctx context.Context, events ...notify.Event) {
	a.before()
	a.Hub.PublishEvents(ctx, events...)
}

// randomMessage is a text message whose body is size bytes of random base64,
// which compression cannot shrink much, so the WAL fills quickly.
func randomMessage(t *testing.T, size int) []byte {
	data := make([]byte, size*3/4)
	if _, err := rand.Read(data); err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	b.WriteString("From: a@example.com\r\nTo: x@default.localhost\r\nSubject: fill\r\n\r\n")
	enc := base64.StdEncoding.EncodeToString(data)
	for len(enc) > 76 {
		b.WriteString(enc[:76] + "\r\n")
		enc = enc[76:]
	}
	b.WriteString(enc + "\r\n")
	return []byte(b.String())
}
