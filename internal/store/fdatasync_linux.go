package store

import (
	"os"
	"syscall"
)

// fdatasync flushes a file's data and the metadata needed to read it back (its
// size), which is all a WAL needs.
func fdatasync(f *os.File) error {
	for {
		err := syscall.Fdatasync(int(f.Fd()))
		if err != syscall.EINTR {
			return err
		}
	}
}

// startWriteback asks the kernel to start writing the file's dirty pages to the
// device now, without waiting for them (sync_file_range with
// SYNC_FILE_RANGE_WRITE). It is a hint that makes a later fdatasync shorter;
// it makes nothing durable by itself.
func startWriteback(f *os.File) error {
	return syscall.SyncFileRange(int(f.Fd()), 0, 0, 0x2 /* SYNC_FILE_RANGE_WRITE */)
}
