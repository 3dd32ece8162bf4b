package store

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// Fast fsyncs keep their processor (the raw call); one slower than
// rawFsyncLimit sends the fsyncs of the next rawFsyncBackoff through the
// scheduler, after which the raw call is tried again. EINTR is retried.
func TestFdatasyncLeavesTheRawCallWhenTheDiskIsSlow(t *testing.T) {
	clock := time.Unix(1_800_000_000, 0)
	var took time.Duration
	var calls []string
	var interrupt bool
	r := &rawFsync{now: func() time.Time { return clock }}
	call := func(name string) func(uintptr) error {
		return func(uintptr) error {
			calls = append(calls, name)
			clock = clock.Add(took)
			if interrupt {
				interrupt = false
				return syscall.EINTR
			}
			return nil
		}
	}
	r.raw, r.scheduled = call("raw"), call("scheduled")
	step := func(d time.Duration, want string) {
		t.Helper()
		took, calls = d, nil
		if err := r.sync(3); err != nil {
			t.Fatal(err)
		}
		if len(calls) == 0 || calls[len(calls)-1] != want {
			t.Fatalf("an fsync went through %v, want %s", calls, want)
		}
	}
	step(time.Millisecond, "raw")
	step(rawFsyncLimit/2, "raw")
	step(rawFsyncLimit+time.Millisecond, "raw") // slow: the next ones are scheduled
	step(time.Millisecond, "scheduled")
	clock = clock.Add(rawFsyncBackoff)
	step(time.Millisecond, "raw")
	interrupt = true
	step(time.Millisecond, "raw")
	if len(calls) != 2 {
		t.Errorf("an interrupted fsync was called %d times, want 2", len(calls))
	}
}

// Both calls flush a real file.
func TestFdatasyncCalls(t *testing.T) {
	f, err := os.Create(filepath.Join(t.TempDir(), "f"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for _, call := range []func(uintptr) error{dataSync.raw, dataSync.scheduled} {
		if _, err := f.Write([]byte("x")); err != nil {
			t.Fatal(err)
		}
		if err := call(f.Fd()); err != nil {
			t.Fatal(err)
		}
	}
	if err := dataSync.raw(^uintptr(0)); err == nil {
		t.Error("fdatasync of a bad descriptor succeeded")
	}
}
