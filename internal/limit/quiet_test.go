package limit

import (
	"bytes"
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"
)

// lockedBuffer is a log destination safe for concurrent writers.
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

// newQuiet is a Quiet logging JSON to its own buffer, whose intervals never
// end by themselves during a test: the test ends them (flush), as the timer
// would.
func newQuiet() (*Quiet, *lockedBuffer) {
	var buf lockedBuffer
	return &Quiet{Interval: time.Hour, Logger: slog.New(slog.NewJSONHandler(&buf, nil))}, &buf
}

// A flood of one refusal from one source is one line at once and then, at
// the end of the interval, one line with the count of the rest; other
// sources and kinds have lines of their own. An interval with nothing new
// ends the source's record: its next refusal is logged at once again.
func TestQuietFoldsAFlood(t *testing.T) {
	q, buf := newQuiet()
	const kind, src = "401 invalid_api_key", "192.0.2.7"
	for i := 0; i < 10000; i++ {
		q.Log(slog.LevelWarn, "HTTP request", kind, src, slog.Int("n", i))
	}
	q.Log(slog.LevelWarn, "HTTP request", kind, "192.0.2.8")
	q.Log(slog.LevelWarn, "HTTP request", "429 too_many_auth_failures", src)
	first := buf.lines(t)
	if len(first) != 3 || first[0]["n"] != float64(0) {
		t.Fatalf("logged at once: %v, want the first of each kind and source", first)
	}

	q.flush(quietKey{kind, src})
	all := buf.lines(t)
	if len(all) != 4 {
		t.Fatalf("%d lines after the interval, want 4", len(all))
	}
	if l := all[3]; l["count"] != float64(9999) || l["refusal"] != kind || l["source"] != src ||
		l["level"] != "WARN" || l["msg"] != "HTTP request" || l["period_s"] != float64(3600) {
		t.Fatalf("count line %v", l)
	}

	q.flush(quietKey{kind, src}) // an interval with nothing new
	if n := len(buf.lines(t)); n != 4 {
		t.Fatalf("%d lines after a quiet interval, want 4", n)
	}
	q.Log(slog.LevelWarn, "HTTP request", kind, src, slog.Int("n", 10000))
	all = buf.lines(t)
	if len(all) != 5 || all[4]["n"] != float64(10000) {
		t.Fatalf("after a quiet interval: %v", all[len(all)-1])
	}
}

// Past maxQuietSources sources at once, new sources share one record.
func TestQuietBoundsSources(t *testing.T) {
	q, buf := newQuiet()
	for i := 0; i < 3*maxQuietSources; i++ {
		q.Log(slog.LevelInfo, "SMTP authentication failed", "smtp_auth_failed", fmt.Sprint("198.51.100.", i))
	}
	lines := buf.lines(t)
	if n := len(lines); n != maxQuietSources+1 {
		t.Fatalf("%d lines, want %d", n, maxQuietSources+1)
	}
	if last := lines[maxQuietSources]; last["source"] != "others" {
		t.Fatalf("the line past the cap: %v", last)
	}
	q.flush(quietKey{"smtp_auth_failed", "\x00others"})
	if last := buf.lines(t)[maxQuietSources+1]; last["source"] != "others" || last["count"] != float64(2*maxQuietSources-1) {
		t.Fatalf("the count of the others: %v", last)
	}
}
