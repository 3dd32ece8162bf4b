package server

import (
	"bytes"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/catchbox/catchbox/internal/testkit"
)

// SyncBuffer is a bytes.Buffer safe for concurrent writers (the log's
// goroutines, the flush timer); the package's external tests use it too.
type SyncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *SyncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *SyncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// Info lines wait for their batch; a warning writes itself and every line
// before it at once; Flush writes the rest; each line is written whole, once.
func TestLogWriterBatchesUntilAWarning(t *testing.T) {
	var out SyncBuffer
	lw := newLogWriter(&out)
	lw.delay = time.Hour // only a warning, the size or Flush writes
	log := slog.New(levelFlusher{Handler: slog.NewTextHandler(lw, nil), w: lw}).With("component", "test")

	log.Info("first")
	log.Info("second")
	if got := out.String(); got != "" {
		t.Fatalf("info lines were written before their batch ended: %q", got)
	}
	log.Warn("trouble")
	got := out.String()
	for _, want := range []string{"msg=first", "msg=second", "msg=trouble"} {
		if strings.Count(got, want) != 1 {
			t.Errorf("after the warning the output holds %q %d times, want once:\n%s", want, strings.Count(got, want), got)
		}
	}
	log.Info("third")
	if strings.Contains(out.String(), "third") {
		t.Fatal("an info line after the warning was written at once")
	}
	lw.Flush()
	if got := out.String(); strings.Count(got, "msg=third") != 1 || strings.Count(got, "\n") != 4 {
		t.Errorf("after Flush:\n%s", got)
	}
}

// A batch is written when it reaches logBatchBytes, and otherwise after the
// delay without anyone calling Flush.
func TestLogWriterWritesFullBatchesAndLateOnes(t *testing.T) {
	var out SyncBuffer
	lw := newLogWriter(&out)
	lw.delay = time.Hour
	line := strings.Repeat("x", 1023) + "\n"
	for i := 0; i < logBatchBytes/len(line); i++ {
		lw.Write([]byte(line))
	}
	if n := len(out.String()); n != logBatchBytes {
		t.Fatalf("a full batch wrote %d bytes, want %d", n, logBatchBytes)
	}

	late := &SyncBuffer{}
	lw = newLogWriter(late)
	lw.delay = 20 * time.Millisecond
	lw.Write([]byte("late\n"))
	written := func(want string) func() (string, bool) {
		return func() (string, bool) { s := late.String(); return s, s == want }
	}
	testkit.Await(t, "the line written after the delay", written("late\n"))
	lw.Write([]byte("later\n")) // a new batch after the first was written
	testkit.Await(t, "the second batch written after the delay", written("late\nlater\n"))
}
