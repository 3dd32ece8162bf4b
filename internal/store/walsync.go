package store

import (
	"errors"
	"fmt"
	"os"
	"sync"
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
	path string

	mu        sync.Mutex
	cond      *sync.Cond
	f         *os.File
	requested uint64 // Sync calls so far
	done      uint64 // every call up to this one is durable
	running   bool   // an fsync is in progress
	broken    error  // a failed fsync: nothing is durable from here on
}

func newWALSyncer(path string) (*walSyncer, error) {
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		return nil, fmt.Errorf("open WAL for syncing: %w", err)
	}
	s := &walSyncer{path: path, f: f}
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
		s.running = true
		s.mu.Unlock()
		err := s.sync()
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

// sync flushes the WAL file. It checks first that the open file is still the
// one at the WAL's path: SQLite deletes the WAL only when the last connection
// closes, which the store's own connections prevent, but syncing a stale file
// would silently make nothing durable, so a replaced file is reopened.
func (s *walSyncer) sync() error {
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
	return fdatasync(s.f)
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
	return s.f.Close()
}
