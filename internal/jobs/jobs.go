// Package jobs is the durable queue of Catchbox's background work: outbound
// deliveries, and after them deliverability reports, spam scoring and webhooks.
//
// A job is a row written in the same transaction as what causes it (Enqueue
// takes the caller's store.Tx): it exists if and only if its cause was
// committed. A worker claims a due job under a lease, which it renews while the
// handler runs; a replica that dies stops renewing, and once the lease has run
// out another replica takes the job over. Each attempt is recorded (the count,
// the last error, when it started and ended). A failed attempt is retried after
// an exponential backoff with jitter, or at the time the handler asks for,
// until the kind's attempt limit; then the job is dead, and stays visible with
// its error until its retention has passed.
//
// The contract is at least once, under a lease. A handler may run more than
// once for one job (its replica died, or its lease ran out, after it had done
// some work), so whatever it does outside the database must bear repetition:
// an SMTP delivery interrupted after the remote server's 250 is made again.
// What it writes to the database through Job.Finish is committed in the same
// transaction as the attempt's outcome, and only while its worker still holds
// the lease: those writes are made exactly once, and a later attempt sees
// them (a delivery records each recipient's result there, and its retry skips
// the recipients already done).
//
// docs/flow.md ("Background work") explains the design and why this package
// exists rather than a general queue library.
package jobs

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/catchbox/catchbox/internal/notify"
	"github.com/catchbox/catchbox/internal/store"
)

// State is where a job stands.
type State string

// The states of a job. Pending and Running jobs are live; the others have ended.
const (
	Pending   State = "pending"   // waiting for its run_at
	Running   State = "running"   // claimed by a worker under a lease
	Done      State = "done"      // an attempt succeeded
	Dead      State = "dead"      // failed for good: permanently, or at its attempt limit
	Cancelled State = "cancelled" // cancelled before it was done
)

// Handler makes one attempt at a job. It returns nil when the job is done, an
// error made by RetryAt to be tried again at a chosen time, one made by
// Permanent to fail for good, and any other error to be retried after a
// backoff. To commit database writes together with the outcome it calls
// job.Finish and returns what Finish returned. ctx ends at the kind's time
// limit, when the job is cancelled or its lease is lost, and when the queue
// stops without waiting any longer (context.Cause says which).
type Handler func(ctx context.Context, job *Job) error

// Limits bound one kind of job. Zero fields take the defaults below.
type Limits struct {
	// Workers is how many jobs of the kind this process runs at once (1).
	Workers int
	// MaxAttempts is how many attempts a job gets before it is dead (5).
	MaxAttempts int
	// Timeout is the time limit of one attempt (1 minute).
	Timeout time.Duration
	// Backoff is the delay before the first retry, doubled at each further
	// one (10 s); each delay is drawn between half and all of its value, so
	// jobs that failed together do not come back together.
	Backoff time.Duration
	// MaxBackoff caps the delay (1 hour).
	MaxBackoff time.Duration
}

func (l Limits) withDefaults() Limits {
	if l.Workers <= 0 {
		l.Workers = 1
	}
	if l.MaxAttempts <= 0 {
		l.MaxAttempts = 5
	}
	if l.Timeout <= 0 {
		l.Timeout = time.Minute
	}
	if l.Backoff <= 0 {
		l.Backoff = 10 * time.Second
	}
	if l.MaxBackoff <= 0 {
		l.MaxBackoff = time.Hour
	}
	return l
}

// Options configure a Queue. Zero fields take the defaults below.
type Options struct {
	// Lease is how long a claim holds without renewal (30 s): the time
	// another replica waits before it takes over the job of one that died.
	// A running worker renews it every third of it.
	Lease time.Duration
	// PollInterval is how often a worker looks for due jobs when nothing has
	// woken it (5 s). Enqueues wake workers at once; the poll covers a lost
	// wake-up.
	PollInterval time.Duration
	// Retention is how long done and cancelled jobs are kept (24 hours).
	Retention time.Duration
	// DeadRetention is how long dead jobs are kept, for an operator to read
	// their errors (30 days).
	DeadRetention time.Duration
	// PruneInterval is how often old jobs are deleted (10 minutes).
	PruneInterval time.Duration
	// Now is the clock (time.Now); tests move it.
	Now func() time.Time
}

func (o Options) withDefaults() Options {
	if o.Lease <= 0 {
		o.Lease = 30 * time.Second
	}
	if o.PollInterval <= 0 {
		o.PollInterval = 5 * time.Second
	}
	if o.Retention <= 0 {
		o.Retention = 24 * time.Hour
	}
	if o.DeadRetention <= 0 {
		o.DeadRetention = 30 * 24 * time.Hour
	}
	if o.PruneInterval <= 0 {
		o.PruneInterval = 10 * time.Minute
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	return o
}

// Errors of the queue.
var (
	// ErrUnknownKind is returned by Enqueue for a kind nobody registered.
	ErrUnknownKind = errors.New("job kind not registered")
	// ErrLeaseLost is returned by Job.Finish when the job is no longer its
	// worker's: the lease ran out and another worker took the job over, or the
	// job was cancelled. Nothing of the Finish was committed.
	ErrLeaseLost = errors.New("job lease lost")
	// ErrCancelled is the cause of a handler's context when its job is cancelled.
	ErrCancelled = errors.New("job cancelled")
	// ErrStopped is the cause of a handler's context when the queue stops
	// without waiting for it any longer; its lease is left to run out.
	ErrStopped = errors.New("job queue stopped")
	// ErrTimeout is the cause of a handler's context at its kind's time limit.
	ErrTimeout = errors.New("job attempt timed out")
)

// Queue runs the jobs of the kinds registered with it, and enqueues, cancels
// and reports on jobs. One Queue per process; replicas share the jobs table.
type Queue struct {
	db       *store.DB
	notifier notify.Notifier
	opts     Options
	owner    string // this process's name in lease_owner
	sql      queries

	mu      sync.Mutex
	kinds   map[string]*kind
	active  map[int64]*Job // claimed here and not yet ended
	started bool
	stopped bool

	stopClaims context.CancelFunc // ends the claim loops and pruning
	claimLoops sync.WaitGroup
	handlers   sync.WaitGroup
	handlerCtx context.Context // parent of every handler's context
	abort      context.CancelCauseFunc
	stopBeat   context.CancelFunc
	beatDone   chan struct{}
}

// SetClock replaces the queue's clock (Options.Now), before Start: the tests
// of a feature built by internal/server move time with it, to reach a
// retry's time or a deadline without waiting for it.
func (q *Queue) SetClock(now func() time.Time) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.started {
		panic("jobs: SetClock after Start")
	}
	q.opts.Now = now
}

// Wake makes every kind's workers in this process look for due jobs now, as
// an enqueue does: after the clock was moved, a job due by the new time
// runs without waiting for the poll.
func (q *Queue) Wake() {
	q.mu.Lock()
	defer q.mu.Unlock()
	for _, k := range q.kinds {
		select {
		case k.freed <- struct{}{}:
		default: // a wake-up is pending already
		}
	}
}

// kind is one registered kind and its workers.
type kind struct {
	name    string
	handler Handler
	limits  Limits
	topic   string
	running int           // handlers running now (under Queue.mu)
	freed   chan struct{} // a worker slot came free
}

// New returns a queue on db. notifier carries the wake-ups of enqueued jobs
// (notify.Postgres reaches every replica); nil keeps them in this process.
func New(db *store.DB, notifier notify.Notifier, opts Options) *Queue {
	if notifier == nil {
		notifier = notify.NewHub()
	}
	var b [8]byte
	rand.Read(b[:])
	return &Queue{
		db:       db,
		notifier: notifier,
		opts:     opts.withDefaults(),
		owner:    hex.EncodeToString(b[:]),
		sql:      newQueries(db.ForUpdateSkipLocked()),
		kinds:    map[string]*kind{},
		active:   map[int64]*Job{},
	}
}

// Register names the handler of a kind of job and its limits. Every kind is
// registered before Start, and before it is enqueued, by every replica alike.
// Registering a kind twice, or after Start, is a programming error and panics.
func (q *Queue) Register(name string, h Handler, limits Limits) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.started {
		panic("jobs: Register of " + name + " after Start")
	}
	if _, ok := q.kinds[name]; ok {
		panic("jobs: kind " + name + " registered twice")
	}
	q.kinds[name] = &kind{name: name, handler: h, limits: limits.withDefaults(),
		topic: "jobs:" + name, freed: make(chan struct{}, 1)}
}

func (q *Queue) kind(name string) *kind {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.kinds[name]
}

// EnqueueOptions are the choices of one Enqueue.
type EnqueueOptions struct {
	// RunAt is when the job may run first; zero means now.
	RunAt time.Time
}

// Enqueue adds a job of the kind to tx, and returns its id. The job exists
// once tx commits, and not if it rolls back; workers are woken after the
// commit. payload is the handler's input (JSON by convention); it never
// changes: what an attempt achieved belongs in the domain's own tables.
func (q *Queue) Enqueue(ctx context.Context, tx *store.Tx, kindName string, payload []byte, opts EnqueueOptions) (int64, error) {
	k := q.kind(kindName)
	if k == nil {
		return 0, fmt.Errorf("enqueue %q: %w", kindName, ErrUnknownKind)
	}
	now := q.opts.Now()
	runAt := now
	if !opts.RunAt.IsZero() {
		runAt = opts.RunAt
	}
	if payload == nil {
		payload = []byte{}
	}
	var id int64
	err := tx.QueryRow(ctx, `INSERT INTO jobs (kind, state, payload, run_at, created_at)
		VALUES (?, 'pending', ?, ?, ?) RETURNING id`, kindName, payload, runAt.UnixMilli(), now.UnixMilli()).Scan(&id)
	if err != nil {
		return 0, fmt.Errorf("enqueue %s: %w", kindName, err)
	}
	// The other replicas' workers hear of the job when tx commits; this
	// process's, once it is durable.
	if err := q.notifier.Announce(ctx, tx, k.topic); err != nil {
		return 0, fmt.Errorf("enqueue %s: %w", kindName, err)
	}
	tx.AfterCommit(func() { q.notifier.Publish(context.Background(), k.topic) })
	return id, nil
}

// Cancel ends the job with the id in tx, unless it has ended already, and
// reports whether it did. A running job's handler has its context cancelled
// (at once in this process; on another replica at its next lease renewal), and
// nothing it then passes to Finish is committed.
func (q *Queue) Cancel(ctx context.Context, tx *store.Tx, id int64) (bool, error) {
	now := q.opts.Now().UnixMilli()
	res, err := tx.Exec(ctx, `UPDATE jobs SET state = 'cancelled', run_at = ?, finished_at = ?, lease_owner = NULL
		WHERE id = ? AND state IN ('pending', 'running')`, now, now, id)
	if err != nil {
		return false, fmt.Errorf("cancel job %d: %w", id, err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return false, fmt.Errorf("cancel job %d: %w", id, err)
	}
	if n == 0 {
		return false, nil
	}
	tx.AfterCommit(func() {
		q.mu.Lock()
		j := q.active[id]
		q.mu.Unlock()
		if j != nil {
			j.cancel(ErrCancelled)
		}
	})
	return true, nil
}

// Info is a job as stored, for operators and tests.
type Info struct {
	ID          int64
	Kind        string
	State       State
	Payload     []byte
	Attempts    int
	LastError   string
	RunAt       time.Time // pending: not before; running: the lease's end; ended: when
	CreatedAt   time.Time
	AttemptedAt time.Time // zero before the first attempt
	FinishedAt  time.Time // zero while live
}

// Get returns the job with the id, or store.ErrNotFound.
func (q *Queue) Get(ctx context.Context, id int64) (Info, error) {
	var (
		in                      Info
		runAt, created          int64
		lastErr                 sql.NullString
		attemptedAt, finishedAt sql.NullInt64
	)
	err := q.db.QueryRow(ctx, `SELECT id, kind, state, payload, attempts, last_error, run_at, created_at, attempted_at, finished_at
		FROM jobs WHERE id = ?`, id).Scan(&in.ID, &in.Kind, &in.State, &in.Payload, &in.Attempts, &lastErr,
		&runAt, &created, &attemptedAt, &finishedAt)
	if errors.Is(err, sql.ErrNoRows) {
		return Info{}, store.ErrNotFound
	}
	if err != nil {
		return Info{}, fmt.Errorf("get job %d: %w", id, err)
	}
	in.LastError = lastErr.String
	in.RunAt, in.CreatedAt = time.UnixMilli(runAt), time.UnixMilli(created)
	if attemptedAt.Valid {
		in.AttemptedAt = time.UnixMilli(attemptedAt.Int64)
	}
	if finishedAt.Valid {
		in.FinishedAt = time.UnixMilli(finishedAt.Int64)
	}
	return in, nil
}

// Count is the number of jobs of one kind in one state.
type Count struct {
	Kind  string
	State State
	Jobs  int
}

// Counts returns how many jobs there are of each kind in each state (a state
// without jobs is left out), for metrics. It reads the jobs_due index only.
func (q *Queue) Counts(ctx context.Context) ([]Count, error) {
	rows, err := q.db.Query(ctx, "SELECT kind, state, COUNT(*) FROM jobs GROUP BY kind, state ORDER BY kind, state")
	if err != nil {
		return nil, fmt.Errorf("count jobs: %w", err)
	}
	defer rows.Close()
	var out []Count
	for rows.Next() {
		var c Count
		if err := rows.Scan(&c.Kind, &c.State, &c.Jobs); err != nil {
			return nil, fmt.Errorf("count jobs: %w", err)
		}
		out = append(out, c)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("count jobs: %w", err)
	}
	return out, nil
}

// RetryAt makes a handler's error that asks for the next attempt at t (an
// SMTP 4xx reply, or a remote's Retry-After). The attempt still counts towards
// the kind's limit.
func RetryAt(t time.Time, err error) error {
	if err == nil {
		err = errors.New("retry requested")
	}
	return &retryError{at: t, err: err}
}

// Permanent makes a handler's error that ends the job as dead at once: a
// retry cannot help (an SMTP 5xx reply, a payload that does not decode).
func Permanent(err error) error {
	if err == nil {
		err = errors.New("failed permanently")
	}
	return &permanentError{err: err}
}

type retryError struct {
	at  time.Time
	err error
}

func (e *retryError) Error() string { return e.err.Error() }
func (e *retryError) Unwrap() error { return e.err }

type permanentError struct{ err error }

func (e *permanentError) Error() string { return e.err.Error() }
func (e *permanentError) Unwrap() error { return e.err }
