package store

import (
	"log/slog"
	"os"
	"sync/atomic"
	"syscall"
	"time"
)

// fdatasync flushes a file's data and the metadata needed to read it back (its
// size), which is all a WAL needs.
//
// While the disk answers quickly it is called without telling Go's scheduler
// (RawSyscall), so the calling goroutine keeps its processor (P) across the
// call. Through syscall.Syscall a call longer than about 20 µs, as every fsync
// is, loses its P to the runtime's monitor; when it returns, the goroutine
// waits in the global run queue for a P to come free, and threads are woken
// and parked on the way. The ingest writer, whose pace sets ingest's, does
// this once per commit: keeping the P made small-message ingest 1.09 times
// as fast, with a tenth less CPU time per message (docs/benchmarks.md,
// "Ingest after issue 20"). The price is that the P is idle for the fsync's
// length and that a stop-the-world pause of the garbage collector waits for
// the fsync to end. So an fsync that takes longer than rawFsyncLimit, a disk
// that has become slow, sends the next rawFsyncBackoff of fsyncs through the
// scheduler: a stalled disk then stalls ingest, not the whole process.
func fdatasync(f *os.File) error { return dataSync.sync(f.Fd()) }

const (
	rawFsyncLimit   = 20 * time.Millisecond
	rawFsyncBackoff = time.Minute
)

// rawFsync is fdatasync's policy, with its system calls (tests replace them).
type rawFsync struct {
	raw, scheduled func(fd uintptr) error
	now            func() time.Time
	slowUntil      atomic.Int64 // UnixNano until which fsyncs go through the scheduler
}

var dataSync = &rawFsync{
	raw: func(fd uintptr) error {
		_, _, e := syscall.RawSyscall(syscall.SYS_FDATASYNC, fd, 0, 0)
		if e != 0 {
			return e
		}
		return nil
	},
	scheduled: func(fd uintptr) error { return syscall.Fdatasync(int(fd)) },
	now:       time.Now,
}

func (r *rawFsync) sync(fd uintptr) error {
	call := r.scheduled
	start := r.now()
	raw := start.UnixNano() >= r.slowUntil.Load()
	if raw {
		call = r.raw
	}
	for {
		err := call(fd)
		if err == syscall.EINTR {
			continue
		}
		if took := r.now().Sub(start); raw && took > rawFsyncLimit {
			r.slowUntil.Store(r.now().Add(rawFsyncBackoff).UnixNano())
			// Info, not Warn: a slow disk for a moment needs nothing of an operator.
			slog.Info("An fsync of the WAL was slow; the next ones go through Go's scheduler for a while",
				"took_ms", took.Milliseconds(), "for_s", int(rawFsyncBackoff.Seconds()))
		}
		return err
	}
}

// startWriteback asks the kernel to start writing the file's dirty pages to the
// device now, without waiting for them (sync_file_range with
// SYNC_FILE_RANGE_WRITE). It is a hint that makes a later fdatasync shorter;
// it makes nothing durable by itself.
func startWriteback(f *os.File) error {
	return syscall.SyncFileRange(int(f.Fd()), 0, 0, 0x2 /* SYNC_FILE_RANGE_WRITE */)
}
