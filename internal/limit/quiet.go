package limit

import (
	"context"
	"log/slog"
	"sync"
	"time"
)

// DefaultQuietInterval is how often Quiet logs one kind of refusal from one
// source at most.
const DefaultQuietInterval = 10 * time.Second

// maxQuietSources bounds the sources Quiet follows; refusals from more
// sources at once are logged together, as from "others".
const maxQuietSources = 1000

// Quiet writes the log lines of refusals, the answers a flood is made of
// (429s, unknown API keys, failed sign-ins and SMTP AUTH), at most once per
// interval for each kind of refusal and source (a client address): the first
// at once, with its details, then at the end of every interval in which more
// came, one line with the same message, the kind (refusal), the source and
// the number that came (count) over the interval (period_s, in seconds). A flood of any
// size is a few lines a minute; the metrics count every refusal. The zero
// value is ready to use.
type Quiet struct {
	// Interval is the least time between two lines of one kind and source;
	// 0 is DefaultQuietInterval. Set before use.
	Interval time.Duration
	// Logger receives the lines; nil is slog.Default() at the time of each.
	Logger *slog.Logger

	mu sync.Mutex
	m  map[quietKey]*quietEntry
}

type quietKey struct{ kind, source string }

// quietEntry is a kind and source logged lately: its first line's message
// and level, and how many more came since the last line.
type quietEntry struct {
	level slog.Level
	msg   string
	more  int
}

// Log logs a refusal of kind from source, unless one was logged less than an
// interval ago; then it is counted into the next line.
func (q *Quiet) Log(level slog.Level, msg, kind, source string, attrs ...slog.Attr) {
	if q == nil {
		slog.LogAttrs(context.Background(), level, msg, attrs...)
		return
	}
	log := q.logger()
	k := quietKey{kind, source}
	q.mu.Lock()
	if q.m == nil {
		q.m = map[quietKey]*quietEntry{}
	}
	if e := q.m[k]; e != nil {
		e.more++
		q.mu.Unlock()
		return
	}
	if len(q.m) >= maxQuietSources {
		k.source = "\x00others"
		if e := q.m[k]; e != nil {
			e.more++
			q.mu.Unlock()
			return
		}
		attrs = []slog.Attr{slog.String("refusal", kind), slog.String("source", "others")}
	}
	q.m[k] = &quietEntry{level: level, msg: msg}
	q.mu.Unlock()
	log.LogAttrs(context.Background(), level, msg, attrs...)
	time.AfterFunc(q.interval(), func() { q.flush(k) })
}

func (q *Quiet) logger() *slog.Logger {
	if q.Logger != nil {
		return q.Logger
	}
	return slog.Default()
}

func (q *Quiet) interval() time.Duration {
	if q.Interval > 0 {
		return q.Interval
	}
	return DefaultQuietInterval
}

// flush ends an interval of k: the refusals counted in it are logged in one
// line and a new interval begins, or, when none came, k is forgotten and its
// next refusal is logged at once.
func (q *Quiet) flush(k quietKey) {
	q.mu.Lock()
	e := q.m[k]
	if e == nil {
		q.mu.Unlock()
		return
	}
	n := e.more
	if n == 0 {
		delete(q.m, k)
		q.mu.Unlock()
		return
	}
	e.more = 0
	q.mu.Unlock()
	source := k.source
	if source == "\x00others" {
		source = "others"
	}
	q.logger().LogAttrs(context.Background(), e.level, e.msg, slog.String("refusal", k.kind), slog.String("source", source),
		slog.Int("count", n), slog.Float64("period_s", q.interval().Seconds()))
	time.AfterFunc(q.interval(), func() { q.flush(k) })
}
