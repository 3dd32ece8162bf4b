package notify

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"log/slog"
	"net/url"
	"strings"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/catchbox/catchbox/internal/store"
)

// Channel is the PostgreSQL NOTIFY channel every replica listens on.
const Channel = "catchbox_wake"

// maxPayload keeps a NOTIFY payload under PostgreSQL's 8000-byte limit.
const maxPayload = 7000

// Postgres is a Notifier for several replicas sharing one PostgreSQL database.
// Announce adds a NOTIFY to the writer's transaction: PostgreSQL delivers it to
// every listening replica when the transaction commits, and drops it if the
// transaction rolls back (SQL command NOTIFY, "Notes"), so the wake-up is
// atomic with the rows and costs no transaction of its own. The price is that
// PostgreSQL commits transactions that notify one at a time (docs/flow.md,
// section 5). Each replica's listener turns the NOTIFY into local wake-ups; the
// writer's own replica wakes its waiters with Publish once the commit has
// returned.
//
// A listener connection can be lost. While it is down, Healthy is false and
// waiting requests fall back to re-checking on a short interval; when it is back,
// every local waiter is woken once to re-check, so an arrival announced while the
// listener was away is never missed.
type Postgres struct {
	*Hub
	url     string
	replica string // payload prefix, so a replica ignores its own NOTIFYs
	healthy atomic.Bool
	done    chan struct{}
}

// NewPostgres starts listening on url (a pgx connection string). It stops when
// ctx ends.
func NewPostgres(ctx context.Context, url string) *Postgres {
	var b [6]byte
	rand.Read(b[:])
	p := &Postgres{Hub: NewHub(), url: url, replica: hex.EncodeToString(b[:]), done: make(chan struct{})}
	go p.listen(ctx)
	return p
}

// Healthy reports whether the listener connection is up.
func (p *Postgres) Healthy() bool { return p.healthy.Load() }

// Done is closed when the listener has stopped.
func (p *Postgres) Done() <-chan struct{} { return p.done }

// Announce implements Notifier: the topics' waiters on the other replicas
// are all woken (AnnounceEvents with events that are not Complete).
func (p *Postgres) Announce(ctx context.Context, tx *store.Tx, topics ...string) error {
	events := make([]Event, len(topics))
	for i, t := range topics {
		events[i] = Event{Topic: t}
	}
	return p.AnnounceEvents(ctx, tx, events...)
}

// AnnounceEvents implements Notifier: one pg_notify in tx per maxPayload bytes
// of events, all in one statement. A failure fails tx, as any failed
// statement does on PostgreSQL.
func (p *Postgres) AnnounceEvents(ctx context.Context, tx *store.Tx, events ...Event) error {
	payloads := p.payloads(events)
	if len(payloads) == 0 {
		return nil
	}
	var q strings.Builder
	args := make([]any, 0, 2*len(payloads))
	q.WriteString("SELECT ")
	for i, payload := range payloads {
		if i > 0 {
			q.WriteString(", ")
		}
		q.WriteString("pg_notify(?, ?)")
		args = append(args, Channel, payload)
	}
	if _, err := tx.Exec(ctx, q.String(), args...); err != nil {
		return fmt.Errorf("announce to the other replicas: %w", err)
	}
	return nil
}

// maxEventToken bounds the encoding of one event with its facts; a longer
// one (a long subject, many recipients) is announced by its topic alone,
// which wakes every waiter of the topic on the other replicas.
const maxEventToken = 2000

// payloads packs events into NOTIFY payloads of at most maxPayload bytes, each
// starting with the replica's id, then the events separated by spaces: a
// topic alone for an event that is not Complete (every waiter of the topic is
// woken, as older versions announced every arrival), or the topic, "?" and
// the facts as a URL query (field=value&...), which escapes every space.
func (p *Postgres) payloads(events []Event) []string {
	whole := map[string]bool{}
	for _, e := range events {
		if !e.Complete {
			whole[e.Topic] = true
		}
	}
	var out []string
	var b strings.Builder
	add := func(tok string) {
		if b.Len() > 0 && b.Len()+1+len(tok) > maxPayload {
			out = append(out, b.String())
			b.Reset()
		}
		if b.Len() == 0 {
			b.WriteString(p.replica)
		}
		b.WriteByte(' ')
		b.WriteString(tok)
	}
	sent := map[string]bool{}
	for _, e := range events {
		if whole[e.Topic] {
			if !sent[e.Topic] {
				sent[e.Topic] = true
				add(e.Topic)
			}
			continue
		}
		tok := encodeEvent(e)
		if len(tok) > maxEventToken {
			whole[e.Topic] = true
			if !sent[e.Topic] {
				sent[e.Topic] = true
				add(e.Topic)
			}
			continue
		}
		add(tok)
	}
	if b.Len() > 0 {
		out = append(out, b.String())
	}
	return out
}

// encodeEvent is a Complete event as a payload token: topic?field=value&...
func encodeEvent(e Event) string {
	v := url.Values{}
	for _, f := range e.Facts {
		v.Add(f.Field, f.Value)
	}
	return e.Topic + "?" + v.Encode()
}

// decodeEvents reads the events of a payload's tokens. A token that does not
// decode wakes every waiter of its topic.
func decodeEvents(tokens []string) []Event {
	events := make([]Event, 0, len(tokens))
	for _, tok := range tokens {
		topic, query, ok := strings.Cut(tok, "?")
		if !ok {
			events = append(events, Event{Topic: tok})
			continue
		}
		v, err := url.ParseQuery(query)
		if err != nil {
			events = append(events, Event{Topic: topic})
			continue
		}
		e := Event{Topic: topic, Complete: true}
		for field, values := range v {
			for _, value := range values {
				e.Facts = append(e.Facts, Fact{Field: field, Value: value})
			}
		}
		events = append(events, e)
	}
	return events
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
		p.Hub.PublishEvents(ctx, decodeEvents(strings.Fields(topics))...)
	}
}
