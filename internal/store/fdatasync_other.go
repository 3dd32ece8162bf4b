//go:build !linux

package store

import "os"

// fdatasync flushes a file; elsewhere than Linux, File.Sync is the portable
// full flush (F_FULLFSYNC on macOS).
func fdatasync(f *os.File) error { return f.Sync() }

// startWriteback has no portable equivalent: the later fsync does all the work.
func startWriteback(*os.File) error { return nil }
