package server

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"sync"
	"time"
)

// logWriter gathers log lines and writes them to the process's output in
// batches: at most logDelay after the first line of a batch, at once when a
// batch reaches logBatchBytes, and at once after a warning or an error
// (levelFlusher). Without it every received message cost the SMTP listener a
// write system call for its transaction's line; under a load of small messages
// that was about a tenth of the server's CPU time with the formatting
// (docs/benchmarks.md, "Ingest after issue 20").
//
// What a batch holds is lost if the process is killed before logDelay has
// passed (docs/operations.md, "Logs"); Flush writes it out, and serve calls it
// when it stops.
type logWriter struct {
	w io.Writer

	mu      sync.Mutex
	buf     bytes.Buffer
	pending bool // a flush is scheduled
	delay   time.Duration
}

const (
	logDelay      = 100 * time.Millisecond
	logBatchBytes = 64 << 10
)

func newLogWriter(w io.Writer) *logWriter { return &logWriter{w: w, delay: logDelay} }

// Write queues p, which slog's handlers hand over one whole line at a time.
func (l *logWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.buf.Write(p)
	switch {
	case l.buf.Len() >= logBatchBytes:
		l.flushLocked()
	case !l.pending:
		l.pending = true
		time.AfterFunc(l.delay, l.Flush)
	}
	return len(p), nil
}

// Flush writes out what is queued.
func (l *logWriter) Flush() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.flushLocked()
	l.pending = false
}

func (l *logWriter) flushLocked() {
	if l.buf.Len() > 0 {
		// A log line that cannot be written has nowhere to be reported.
		_, _ = l.w.Write(l.buf.Bytes())
		l.buf.Reset()
	}
}

// levelFlusher is a handler that writes the lines of warnings and errors out at
// once, and with them every line before: what an operator looks for after a
// failure is never left waiting in a batch.
type levelFlusher struct {
	slog.Handler
	w *logWriter
}

func (h levelFlusher) Handle(ctx context.Context, r slog.Record) error {
	err := h.Handler.Handle(ctx, r)
	if r.Level >= slog.LevelWarn {
		h.w.Flush()
	}
	return err
}

func (h levelFlusher) WithAttrs(as []slog.Attr) slog.Handler {
	return levelFlusher{Handler: h.Handler.WithAttrs(as), w: h.w}
}

func (h levelFlusher) WithGroup(name string) slog.Handler {
	return levelFlusher{Handler: h.Handler.WithGroup(name), w: h.w}
}
