package limit

import (
	"bytes"
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
)

// lockedBuffer is a log destination safe for the timers' goroutines.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) lines(t *testing.T) []map[string]any {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []map[string]any
	for _, line := range strings.Split(strings.TrimSpace(l.b.String()), "\n") {
		if line == "" {
			continue
		}
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("log line %q: %v", line, err)
		}
		out = append(out, m)
	}
	return out
}

// A flood of one refusal from one source is one line at once and then one
// line with the count of the rest; other sources and kinds have lines of
// their own.
func TestQuietFoldsAFlood(t *testing.T) {
	var buf lockedBuffer
	saved := slog.Default()
	slog.SetDefault(slog.New(slog.NewJSONHandler(&buf, nil)))
	t.Cleanup(func() { slog.SetDefault(saved) })

	q := &Quiet{Interval: 50e6} // 50 ms: the test waits for the line, it does not time it
	for i := 0; i < 10000; i++ {
		q.Log(slog.LevelWarn, "HTTP request refused", "401 invalid_api_key", "192.0.2.7", slog.Int("n", i))
	}
	q.Log(slog.LevelWarn, "HTTP request refused", "401 invalid_api_key", "192.0.2.8")
	q.Log(slog.LevelWarn, "HTTP request refused", "429 too_many_auth_failures", "192.0.2.7")
	first := buf.lines(t)
	if len(first) != 3 || first[0]["n"] != float64(0) {
		t.Fatalf("logged at once: %v, want the first of each kind and source", first)
	}
	var count float64
	waitFor(t, "the line with the count", func() bool {
		for _, l := range buf.lines(t) {
			if c, ok := l["count"].(float64); ok {
				count = c
				if l["refusal"] != "401 invalid_api_key" || l["source"] != "192.0.2.7" || l["level"] != "WARN" {
					t.Fatalf("count line %v", l)
				}
				return true
			}
		}
		return false
	})
	if count != 9999 {
		t.Fatalf("count %v, want 9999", count)
	}
	// An interval with nothing new ends the source's record: its next
	// refusal is logged at once again, with its details.
	waitFor(t, "the source to be forgotten", func() bool {
		q.mu.Lock()
		defer q.mu.Unlock()
		return len(q.m) == 0
	})
	q.Log(slog.LevelWarn, "HTTP request refused", "401 invalid_api_key", "192.0.2.7", slog.Int("n", 10000))
	all := buf.lines(t)
	if last := all[len(all)-1]; last["n"] != float64(10000) {
		t.Fatalf("after a quiet interval: %v", last)
	}
	if len(all) != 5 {
		t.Fatalf("%d lines in all, want 5", len(all))
	}
}

// Past maxQuietSources sources at once, new sources share one record.
func TestQuietBoundsSources(t *testing.T) {
	var buf lockedBuffer
	saved := slog.Default()
	slog.SetDefault(slog.New(slog.NewJSONHandler(&buf, nil)))
	t.Cleanup(func() { slog.SetDefault(saved) })
	q := &Quiet{Interval: 1e12}
	for i := 0; i < 3*maxQuietSources; i++ {
		q.Log(slog.LevelInfo, "SMTP authentication failed", "smtp_auth_failed", fmt.Sprint("198.51.100.", i))
	}
	if n := len(buf.lines(t)); n != maxQuietSources+1 {
		t.Fatalf("%d lines, want %d", n, maxQuietSources+1)
	}
}
