package store

import (
	"errors"
	"fmt"
	"os"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
)

// walSyncer makes SQLite commits durable outside the writer connection.
//
// The writer runs with synchronous=OFF: a commit appends its frames to the WAL
// and returns without an fsync, so the next transaction can start at once. A
// committed transaction becomes durable when the WAL file is next synced, which
// walSyncer does on behalf of every caller waiting at the time (group fsync).
//
// Why this is as safe as synchronous=FULL for a caller that waits for Sync:
// the fsync covers every byte written to the WAL file so far, its header
// included, so the frames of every transaction committed before Sync was
// called, and the checksum chain that leads to them, are on disk when Sync
// returns. Recovery after a power loss replays the WAL up to its last valid
// commit frame. Checkpoints run on another connection (synchronous=FULL),
// which syncs the WAL before it copies frames into the database file, and
// syncs the database file before the WAL may be restarted, so no page reaches
// the database file ahead of the log that vouches for it.
type walSyncer struct {
	path  string
	trace atomic.Pointer[walTrace] // set by DB.TraceWAL (tests)

	mu        sync.Mutex
	cond      *sync.Cond
	f         *os.File
	requested uint64 // Sync calls so far
	done      uint64 // every call up to this one is durable
	running   bool   // an fsync is in progress
	broken    error  // a failed fsync: nothing is durable from here on

	flush func(*os.File) error // under mu: fdatasync, which DB.TraceWAL wraps
}

func newWALSyncer(path string) (*walSyncer, error) {
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		return nil, fmt.Errorf("open WAL for syncing: %w", err)
	}
	s := &walSyncer{path: path, f: f, flush: fdatasync}
	s.cond = sync.NewCond(&s.mu)
	return s, nil
}

// errWALBroken marks a syncer whose fsync failed once. After a failed fsync
// Linux may drop the dirty pages and report success on the next call, so a
// later success proves nothing: the store refuses to acknowledge writes until
// the process restarts and SQLite recovers from what is on disk.
var errWALBroken = errors.New("WAL fsync failed earlier; restart to recover")

// Sync returns when every transaction committed before the call is on disk.
// Concurrent callers share one fsync.
func (s *walSyncer) Sync() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.requested++
	me := s.requested
	for s.done < me && s.broken == nil {
		if s.running {
			s.cond.Wait()
			continue
		}
		// This fsync starts after every call counted so far was made, so it
		// covers all of them.
		upto := s.requested
		flush := s.flush
		s.running = true
		s.mu.Unlock()
		err := s.sync(flush)
		s.mu.Lock()
		s.running = false
		if err != nil {
			s.broken = fmt.Errorf("sync WAL: %w", err)
		} else {
			s.done = upto
		}
		s.cond.Broadcast()
	}
	if s.broken != nil {
		return errors.Join(errWALBroken, s.broken)
	}
	return nil
}

// sync flushes the WAL file with flush. It checks first that the open file is
// still the one at the WAL's path: SQLite deletes the WAL only when the last
// connection closes, which the store's own connections prevent, but syncing a
// stale file would silently make nothing durable, so a replaced file is
// reopened.
func (s *walSyncer) sync(flush func(*os.File) error) error {
	cur, err := os.Stat(s.path)
	if err != nil {
		return err
	}
	if st, err := s.f.Stat(); err != nil || !os.SameFile(st, cur) {
		f, err := os.OpenFile(s.path, os.O_RDWR, 0)
		if err != nil {
			return err
		}
		s.f.Close()
		s.f = f
	}
	return flush(s.f)
}

// StartWriteback starts writing the WAL's new frames to the device, so that a
// Sync soon after has less to wait for. Errors are ignored: the hint is only an
// optimisation, and Sync reports what matters.
func (s *walSyncer) StartWriteback() {
	s.mu.Lock()
	f := s.f
	s.mu.Unlock()
	_ = startWriteback(f)
}

func (s *walSyncer) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if t := s.trace.Load(); t != nil {
		t.shm.Close()
	}
	return s.f.Close()
}

// WALPos is a point in the history of a SQLite WAL: the round of the WAL's
// reuse and the number of valid frames it held. SQLite adds one to the WAL
// header's first salt each time the WAL starts over from its first frame
// ("WAL-mode File Format", sqlite.org/walformat.html, section 2.1; the WAL
// file format, sqlite.org/fileformat2.html, section 4.1), so that salt numbers
// the rounds; a round starts over only once every frame of the previous one
// has been copied into the database file and that file synced.
type WALPos struct {
	Round  uint32 // the WAL header's first salt
	Frames uint32 // valid frames in the WAL (mxFrame)
}

// Before reports whether p comes before q. Rounds are compared by their
// difference, which keeps the order when the salt wraps around.
func (p WALPos) Before(q WALPos) bool {
	if p.Round != q.Round {
		return int32(p.Round-q.Round) < 0
	}
	return p.Frames < q.Frames
}

// WALTrace receives, from a SQLite store, where each write transaction's
// commit ended in the WAL and how far each completed fsync of the WAL reached.
// With it a test proves that nothing is acknowledged before an fsync has
// covered it. ok is false when the wal-index could not be read.
type WALTrace struct {
	// Committed is called on the committing goroutine right after each
	// commit of InTx or InTxUnsynced, with the end of its frames.
	Committed func(end WALPos, ok bool)
	// Synced is called after each successful fsync of the WAL with a position
	// read before the fsync started: every frame up to it was written before
	// the fsync, so it is on disk. ok is also false when the file synced was
	// not the one at the WAL's path.
	Synced func(reach WALPos, ok bool)
}

// TraceWAL makes a SQLite store report its commits and WAL fsyncs to t, in
// place of any earlier trace. It is meant for tests, and costs nothing when not
// called: a store traces only from the call on, which must come before the
// store is written to from more than one goroutine. On PostgreSQL it does
// nothing.
func (db *DB) TraceWAL(t WALTrace) error {
	if db.wal == nil {
		return nil
	}
	path := strings.TrimPrefix(db.URL, "sqlite://")
	shm, err := os.Open(path + "-shm")
	if err != nil {
		return fmt.Errorf("trace WAL: %w", err)
	}
	tr := &walTrace{WALTrace: t, shm: shm, wal: path + "-wal"}
	s := db.wal
	s.mu.Lock()
	defer s.mu.Unlock()
	s.flush = func(f *os.File) error {
		reach, ok := tr.position()
		if err := fdatasync(f); err != nil {
			return err
		}
		if tr.Synced != nil {
			tr.Synced(reach, ok && tr.isWAL(f))
		}
		return nil
	}
	if old := s.trace.Swap(tr); old != nil {
		old.shm.Close()
	}
	return nil
}

// walTrace is an installed WALTrace, the wal-index it reads positions from and
// the WAL's path.
type walTrace struct {
	WALTrace
	shm *os.File
	wal string
}

// isWAL reports whether f is the file at the WAL's path: an fsync of any other
// file covers nothing of the WAL.
func (t *walTrace) isWAL(f *os.File) bool {
	st, err := f.Stat()
	cur, err2 := os.Stat(t.wal)
	return err == nil && err2 == nil && os.SameFile(st, cur)
}

// position reads the WAL's current end from the wal-index header, reading again
// while SQLite is seen in the middle of rewriting it.
func (t *walTrace) position() (WALPos, bool) {
	for range 10000 {
		if p, ok := readWALProgress(t.shm); ok {
			return WALPos{Round: p.round, Frames: p.frames}, true
		}
		runtime.Gosched()
	}
	return WALPos{}, false
}

// traceCommit reports the end of the commit just made, when traced.
func (db *DB) traceCommit() {
	if db.wal == nil {
		return
	}
	if t := db.wal.trace.Load(); t != nil && t.Committed != nil {
		t.Committed(t.position())
	}
}
