package notify

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"fmt"
	"log/slog"
	"strings"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
)

// Channel is the PostgreSQL NOTIFY channel every replica listens on.
const Channel = "catchbox_wake"

// maxPayload keeps a NOTIFY payload under PostgreSQL's 8000-byte limit.
const maxPayload = 7000

// Postgres is a Notifier for several replicas sharing one PostgreSQL database.
// Publish wakes local waiters at once and sends one NOTIFY; every other replica's
// listener turns the NOTIFY into local wake-ups.
//
// A listener connection can be lost. While it is down, Healthy is false and
// waiting requests fall back to re-checking on a short interval; when it is back,
// every local waiter is woken once to re-check, so an arrival announced while the
// listener was away is never missed.
type Postgres struct {
	*Hub
	db      *sql.DB
	url     string
	replica string // payload prefix, so a replica ignores its own NOTIFYs
	healthy atomic.Bool
	done    chan struct{}
}

// NewPostgres starts listening on url (a pgx connection string) and publishes
// through db. It stops when ctx ends.
func NewPostgres(ctx context.Context, db *sql.DB, url string) *Postgres {
	var b [6]byte
	rand.Read(b[:])
	p := &Postgres{Hub: NewHub(), db: db, url: url, replica: hex.EncodeToString(b[:]), done: make(chan struct{})}
	go p.listen(ctx)
	return p
}

// Healthy reports whether the listener connection is up.
func (p *Postgres) Healthy() bool { return p.healthy.Load() }

// Done is closed when the listener has stopped.
func (p *Postgres) Done() <-chan struct{} { return p.done }

// Publish implements Notifier: local waiters first, then the other replicas.
func (p *Postgres) Publish(ctx context.Context, topics ...string) {
	if len(topics) == 0 {
		return
	}
	p.Hub.Publish(ctx, topics...)
	var b strings.Builder
	flush := func() {
		if b.Len() == 0 {
			return
		}
		nctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		if _, err := p.db.ExecContext(nctx, "SELECT pg_notify($1, $2)", Channel, p.replica+" "+b.String()); err != nil {
			// The waiters of other replicas re-check when their listener
			// recovers; nothing is lost, only delayed.
			slog.Warn("Cross-replica wake-up failed", "err", err)
		}
		b.Reset()
	}
	for _, t := range topics {
		if b.Len()+len(t)+1 > maxPayload {
			flush()
		}
		if b.Len() > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(t)
	}
	flush()
}

// Reconnection delays of the listener: doubled after each failed attempt up to
// the maximum, and back to the minimum once a connection has worked, so that a
// database restart long after an earlier one is not waited out at the maximum.
const (
	minListenBackoff = 100 * time.Millisecond
	maxListenBackoff = 5 * time.Second
)

func (p *Postgres) listen(ctx context.Context) {
	defer close(p.done)
	backoff := minListenBackoff
	lost := false
	for ctx.Err() == nil {
		err := p.listenOnce(ctx, lost)
		wasHealthy := p.healthy.Swap(false)
		if ctx.Err() != nil {
			return
		}
		lost = true
		if wasHealthy {
			backoff = minListenBackoff
		}
		slog.Warn("Wake-up listener lost its connection; waiting requests re-check until it is back", "err", err, "retry_in", backoff)
		select {
		case <-ctx.Done():
			return
		case <-time.After(backoff):
		}
		if backoff < maxListenBackoff {
			backoff = min(2*backoff, maxListenBackoff)
		}
	}
}

// listenOnce connects, listens and relays notifications until the connection
// fails. reconnect says an earlier connection was lost (it is then logged when
// the listener is back).
func (p *Postgres) listenOnce(ctx context.Context, reconnect bool) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("listener panicked: %v", r)
		}
	}()
	cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	conn, err := pgx.Connect(cctx, p.url)
	cancel()
	if err != nil {
		return fmt.Errorf("connect: %w", err)
	}
	defer conn.Close(context.WithoutCancel(ctx))
	if _, err := conn.Exec(ctx, "LISTEN "+Channel); err != nil {
		return fmt.Errorf("listen: %w", err)
	}
	p.healthy.Store(true)
	if reconnect {
		slog.Info("Wake-up listener is back; waiting requests re-check once")
	}
	// Anything announced while no listener was up is caught by waking every
	// local waiter to re-check once.
	p.Hub.PublishAll()
	for {
		n, err := conn.WaitForNotification(ctx)
		if err != nil {
			return err
		}
		sender, topics, ok := strings.Cut(n.Payload, " ")
		if !ok || sender == p.replica {
			continue
		}
		p.Hub.Publish(ctx, strings.Fields(topics)...)
	}
}
