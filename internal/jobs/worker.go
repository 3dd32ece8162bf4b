package jobs

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"runtime/debug"
	"slices"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/catchbox/catchbox/internal/metrics"
	"github.com/catchbox/catchbox/internal/notify"
	"github.com/catchbox/catchbox/internal/store"
)

// Job is one attempt at a job, as its Handler receives it.
type Job struct {
	ID        int64
	Kind      string
	Payload   []byte
	Attempt   int // this attempt's number, from 1
	CreatedAt time.Time
	LastError string // the previous attempt's error, if any

	q        *Queue
	k        *kind
	deadline time.Time // the lease is renewed until then (the attempt's time limit)
	cancel   context.CancelCauseFunc

	mu       sync.Mutex
	finished bool
}

// Finish records this attempt's outcome, and runs effects (when not nil) in the
// same transaction, with the context to use in it: the job's database writes are committed together with its
// outcome or not at all. outcome is what a Handler would return: nil for done,
// or an error (RetryAt, Permanent, or any other for a retry after a backoff).
//
// The outcome is recorded first, and only if this worker still holds the job's
// lease (on PostgreSQL the row stays locked until the commit, so no other
// worker can take the job over meanwhile). If it does not, Finish returns
// ErrLeaseLost and effects does not run. A handler that calls Finish returns
// what Finish returned; if that is an error other than ErrLeaseLost, the worker
// records it as the attempt's failure.
//
// Finish goes on when ctx ends (at the attempt's time limit, or when the
// commit it is making ends the lease and the renewal cancels the handler), up
// to finishTimeout: an outcome being committed is not abandoned half way, nor
// reported as failed once the store has committed it.
func (j *Job) Finish(ctx context.Context, outcome error, effects func(context.Context, *store.Tx) error) error {
	j.mu.Lock()
	finished := j.finished
	j.mu.Unlock()
	if finished {
		return fmt.Errorf("finish job %d: already finished", j.ID)
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), finishTimeout)
	defer cancel()
	var ended State
	var retryAt time.Time
	err := j.q.db.InTx(ctx, func(tx *store.Tx) error {
		var err error
		if ended, retryAt, err = j.q.record(ctx, tx, j, outcome); err != nil {
			return err
		}
		if effects != nil {
			return effects(ctx, tx)
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("finish job %d: %w", j.ID, err)
	}
	j.mu.Lock()
	j.finished = true
	j.mu.Unlock()
	metrics.JobAttempt(j.Kind, outcomeWord(ended))
	switch ended {
	case Dead:
		slog.Warn("Job is dead", "kind", j.Kind, "job_id", j.ID, "attempts", j.Attempt, "err", outcome)
	case Pending:
		slog.Info("Job attempt failed; it will be retried", "kind", j.Kind, "job_id", j.ID, "attempt", j.Attempt,
			"retry_at", retryAt, "err", outcome)
	}
	return nil
}

// outcomeWord names what an attempt led to, for the metrics.
func outcomeWord(s State) string {
	switch s {
	case Pending:
		return "retry"
	case Dead:
		return "dead"
	}
	return "done"
}

// maxErrorBytes bounds a stored error message.
const maxErrorBytes = 2000

// record writes the outcome of j's attempt in tx, if j's worker still holds
// its lease (ErrLeaseLost if not), and returns the job's new state and, when
// it is pending again, the time of its next attempt.
func (q *Queue) record(ctx context.Context, tx *store.Tx, j *Job, outcome error) (State, time.Time, error) {
	now := q.opts.Now()
	state, runAt := Done, now
	var retry *retryError
	var permanent *permanentError
	switch {
	case outcome == nil:
	case errors.As(outcome, &permanent), j.Attempt >= j.k.limits.MaxAttempts:
		state = Dead
	case errors.As(outcome, &retry):
		state = Pending
		if retry.at.After(now) {
			runAt = retry.at
		}
	default:
		state, runAt = Pending, now.Add(backoff(j.k.limits, j.Attempt))
	}
	var lastErr, finishedAt any // NULL: keep the last error; not finished
	if outcome != nil {
		lastErr = truncate(outcome.Error(), maxErrorBytes)
	}
	if state != Pending {
		finishedAt = now.UnixMilli()
	}
	res, err := tx.Exec(ctx, `UPDATE jobs SET state = ?, run_at = ?, last_error = COALESCE(?, last_error),
		finished_at = ?, lease_owner = NULL
		WHERE id = ? AND state = 'running' AND lease_owner = ? AND attempts = ?`,
		string(state), runAt.UnixMilli(), lastErr, finishedAt, j.ID, q.owner, j.Attempt)
	if err != nil {
		return "", time.Time{}, fmt.Errorf("record attempt: %w", err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return "", time.Time{}, fmt.Errorf("record attempt: %w", err)
	}
	if n == 0 {
		return "", time.Time{}, ErrLeaseLost
	}
	return state, runAt, nil
}

// backoff is the delay before the retry that follows the attempt: Backoff
// doubled for each attempt before it, capped at MaxBackoff, then drawn between
// half and all of that ("equal jitter"), so jobs that failed together spread out.
func backoff(l Limits, attempt int) time.Duration {
	d := l.MaxBackoff
	if shift := attempt - 1; shift < 62 {
		if b := l.Backoff << shift; b > 0 && b>>shift == l.Backoff && b < d {
			d = b
		}
	}
	return d/2 + rand.N(d/2+1)
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	s = s[:n]
	for !utf8.ValidString(s) {
		s = s[:len(s)-1]
	}
	return s
}

// Start runs the workers of every registered kind until Stop, and prunes old
// jobs. When ctx ends the workers stop claiming jobs; the jobs running then go
// on until Stop.
func (q *Queue) Start(ctx context.Context) error {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.started {
		return errors.New("jobs: Start called twice")
	}
	q.started = true
	var loopCtx, beatCtx context.Context
	loopCtx, q.stopClaims = context.WithCancel(ctx)
	q.handlerCtx, q.abort = context.WithCancelCause(context.WithoutCancel(ctx))
	beatCtx, q.stopBeat = context.WithCancel(context.WithoutCancel(ctx))
	q.beatDone = make(chan struct{})
	for _, k := range q.kinds {
		// Subscribed before the first look, so an enqueue between the look
		// and the wait still wakes the loop.
		sub := q.notifier.Subscribe(k.topic)
		q.claimLoops.Add(1)
		go q.claimLoop(loopCtx, k, sub)
	}
	q.claimLoops.Add(1)
	go func() {
		defer q.claimLoops.Done()
		q.db.Every(loopCtx, "jobs-prune", q.opts.PruneInterval, q.prune, metrics.PeriodicTurn("jobs-prune"))
	}()
	go q.renewLoop(beatCtx)
	return nil
}

// Stop stops claiming jobs and waits for the running ones to finish until ctx
// ends. Then it cancels those still running (their contexts' cause is
// ErrStopped), gives them a moment to return, records nothing for them, stops
// renewing their leases, and returns an error: once their leases have run
// out, another replica (or this one, restarted) takes them over.
func (q *Queue) Stop(ctx context.Context) error {
	q.mu.Lock()
	if !q.started || q.stopped {
		q.mu.Unlock()
		return nil
	}
	q.stopped = true
	q.mu.Unlock()
	q.stopClaims()
	q.claimLoops.Wait()
	done := make(chan struct{})
	go func() {
		q.handlers.Wait()
		close(done)
	}()
	var err error
	select {
	case <-done:
	case <-ctx.Done():
		q.mu.Lock()
		n := len(q.active)
		q.mu.Unlock()
		q.abort(ErrStopped)
		err = fmt.Errorf("stop jobs: %d still running, left to their leases: %w", n, ctx.Err())
		select { // handlers that heed their context return now
		case <-done:
		case <-time.After(abortGrace):
		}
	}
	q.stopBeat()
	<-q.beatDone
	return err
}

// abortGrace is how long Stop, past its deadline, waits for the handlers it
// has just cancelled to return. One that ignores its context is left behind.
const abortGrace = 5 * time.Second

// minWait is the shortest pause between two looks for due jobs: a job that
// is due but was just taken by another replica is looked at again after it.
const minWait = 20 * time.Millisecond

// claimLoop claims the due jobs of k while it has free workers, and otherwise
// waits for an enqueue, a free worker, the next due job or the poll.
func (q *Queue) claimLoop(ctx context.Context, k *kind, sub *notify.Subscription) {
	defer q.claimLoops.Done()
	defer sub.Close()
	timer := time.NewTimer(0)
	defer timer.Stop()
	for ctx.Err() == nil {
		wait := q.opts.PollInterval
		if free := q.free(k); free > 0 {
			n, next, err := q.claimRound(ctx, k, free)
			switch {
			case err != nil:
				if ctx.Err() == nil {
					slog.Error("Claiming jobs failed", "kind", k.name, "err", err)
				}
			case n > 0:
				continue // more may be due
			case !next.IsZero():
				wait = min(max(next.Sub(q.opts.Now()), minWait), wait)
			}
		}
		timer.Reset(wait)
		select {
		case <-ctx.Done():
		case <-sub.C:
		case <-k.freed:
		case <-timer.C:
		}
	}
}

func (q *Queue) free(k *kind) int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return k.limits.Workers - k.running
}

// claimRound claims up to free due jobs of k and starts them. It reports how
// many it started and, when none, the time the next one is due (zero: none).
// Whether anything is due is read first from the read pool, so that an idle
// queue never takes the SQLite writer.
func (q *Queue) claimRound(ctx context.Context, k *kind, free int) (n int, next time.Time, err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("claim panicked: %v", p)
		}
	}()
	now := q.opts.Now()
	pending, leaseEnd, err := q.nextDue(ctx, k)
	if err != nil {
		return 0, time.Time{}, err
	}
	expired := !leaseEnd.IsZero() && !leaseEnd.After(now)
	if !expired && (pending.IsZero() || pending.After(now)) {
		return 0, earliest(pending, leaseEnd), nil
	}
	var claimed []*Job
	var takenOver []takeOver
	err = q.inLeaseTx(ctx, func(tx *store.Tx) error {
		var err error
		if expired {
			if takenOver, err = q.takeOver(ctx, tx, k, now); err != nil {
				return err
			}
		}
		claimed, err = q.claim(ctx, tx, k, now, free)
		return err
	})
	if err != nil {
		return 0, time.Time{}, err
	}
	for _, t := range takenOver {
		if t.state == Dead {
			slog.Warn("Job is dead: its last lease ran out", "kind", k.name, "job_id", t.id, "attempts", t.attempts)
		} else {
			slog.Warn("Job's lease ran out; another worker takes it over", "kind", k.name, "job_id", t.id, "attempts", t.attempts)
		}
	}
	for _, j := range claimed {
		q.dispatch(k, j)
	}
	if len(claimed) == 0 {
		next = now // due, but another replica took it meanwhile: look again shortly
	}
	return len(claimed), next, nil
}

// nextDue returns the earliest run_at of k's pending jobs and of its running
// ones (their first lease to end); zero where there is none.
func (q *Queue) nextDue(ctx context.Context, k *kind) (pending, leaseEnd time.Time, err error) {
	var p, r *int64
	err = q.db.QueryRow(ctx, `SELECT (SELECT MIN(run_at) FROM jobs WHERE kind = ? AND state = 'pending'),
		(SELECT MIN(run_at) FROM jobs WHERE kind = ? AND state = 'running')`, k.name, k.name).Scan(&p, &r)
	if err != nil {
		return time.Time{}, time.Time{}, fmt.Errorf("next due job: %w", err)
	}
	if p != nil {
		pending = time.UnixMilli(*p)
	}
	if r != nil {
		leaseEnd = time.UnixMilli(*r)
	}
	return pending, leaseEnd, nil
}

// earliest is the earlier of two times, a zero one standing for none.
func earliest(a, b time.Time) time.Time {
	if a.IsZero() || (!b.IsZero() && b.Before(a)) {
		return b
	}
	return a
}

// inLeaseTx runs fn in a write transaction that takes or renews leases, and
// does not wait for it to be durable (on SQLite InTxUnsynced; on PostgreSQL
// synchronous_commit off for it). A claim or renewal lost in a crash of the
// store costs nothing but time: the job is pending again, or its lease ends
// earlier, and the worker's Finish is refused (ErrLeaseLost) rather than
// committed. The outcome of an attempt is always recorded durably (InTx).
func (q *Queue) inLeaseTx(ctx context.Context, fn func(*store.Tx) error) error {
	return q.db.InTxNotDurable(ctx, fn)
}

// queries holds the two statements whose text depends on the store's locking.
type queries struct {
	claim, takeOver string
}

// newQueries writes the claim and take-over statements with lock, the store's
// ForUpdateSkipLocked. They pick their rows in a MATERIALIZED common table
// expression, evaluated once, so a LIMIT is never applied twice over. On
// PostgreSQL that selection locks the rows it picks and skips those another
// replica has locked (FOR UPDATE SKIP LOCKED); on SQLite the single writer
// holds the whole database already.
func newQueries(lock string) queries {
	return queries{
		claim: `WITH due AS MATERIALIZED (
			SELECT id AS due_id FROM jobs WHERE kind = ? AND state = 'pending' AND run_at <= ?
			ORDER BY run_at LIMIT ?` + lock + `)
		UPDATE jobs SET state = 'running', attempts = attempts + 1, lease_owner = ?, run_at = ?, attempted_at = ?
		FROM due WHERE id = due_id
		RETURNING id, payload, attempts, created_at, last_error`,
		takeOver: `WITH expired AS MATERIALIZED (
			SELECT id AS expired_id FROM jobs WHERE kind = ? AND state = 'running' AND run_at <= ?
			ORDER BY run_at LIMIT ` + fmt.Sprint(takeOverBatch) + lock + `)
		UPDATE jobs SET state = CASE WHEN attempts >= ? THEN 'dead' ELSE 'pending' END,
			finished_at = CASE WHEN attempts >= ? THEN CAST(? AS BIGINT) END,
			run_at = ?, lease_owner = NULL,
			last_error = 'lease ran out: its worker stopped renewing it (its process ended, or the attempt passed its time limit)'
		FROM expired WHERE id = expired_id
		RETURNING id, state, attempts`,
	}
}

// takeOverBatch bounds the expired leases handled in one claim round.
const takeOverBatch = 100

type takeOver struct {
	id       int64
	state    State
	attempts int
}

// takeOver returns k's jobs whose lease has run out to pending, to be claimed
// at once, or makes them dead when they have had all their attempts: a job
// whose attempts keep killing their process must not run forever.
func (q *Queue) takeOver(ctx context.Context, tx *store.Tx, k *kind, now time.Time) ([]takeOver, error) {
	rows, err := tx.Query(ctx, q.sql.takeOver, k.name, now.UnixMilli(), k.limits.MaxAttempts, k.limits.MaxAttempts, now.UnixMilli(), now.UnixMilli())
	if err != nil {
		return nil, fmt.Errorf("take over expired jobs: %w", err)
	}
	defer rows.Close()
	var out []takeOver
	for rows.Next() {
		var t takeOver
		if err := rows.Scan(&t.id, &t.state, &t.attempts); err != nil {
			return nil, fmt.Errorf("take over expired jobs: %w", err)
		}
		out = append(out, t)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("take over expired jobs: %w", err)
	}
	return out, nil
}

// claim leases up to limit of k's due pending jobs to this process, oldest
// first, and counts the attempt.
func (q *Queue) claim(ctx context.Context, tx *store.Tx, k *kind, now time.Time, limit int) ([]*Job, error) {
	rows, err := tx.Query(ctx, q.sql.claim, k.name, now.UnixMilli(), limit, q.owner, now.Add(q.opts.Lease).UnixMilli(), now.UnixMilli())
	if err != nil {
		return nil, fmt.Errorf("claim jobs: %w", err)
	}
	defer rows.Close()
	var out []*Job
	for rows.Next() {
		j := &Job{Kind: k.name, q: q, k: k}
		var created int64
		var lastErr *string
		if err := rows.Scan(&j.ID, &j.Payload, &j.Attempt, &created, &lastErr); err != nil {
			return nil, fmt.Errorf("claim jobs: %w", err)
		}
		j.CreatedAt = time.UnixMilli(created)
		if lastErr != nil {
			j.LastError = *lastErr
		}
		out = append(out, j)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("claim jobs: %w", err)
	}
	slices.SortFunc(out, func(a, b *Job) int { return int(a.ID - b.ID) })
	return out, nil
}

// dispatch starts the handler of a claimed job on one of k's workers.
func (q *Queue) dispatch(k *kind, j *Job) {
	ctx, cancel := context.WithCancelCause(q.handlerCtx)
	j.cancel = cancel
	j.deadline = time.Now().Add(k.limits.Timeout)
	q.mu.Lock()
	k.running++
	q.active[j.ID] = j
	q.mu.Unlock()
	q.handlers.Add(1)
	go q.run(ctx, k, j)
}

// finishTimeout bounds the recording of an attempt's outcome (Finish).
const finishTimeout = 30 * time.Second

// run makes one attempt at j and records its outcome, unless the handler has
// (Finish) or the job is no longer this worker's.
func (q *Queue) run(ctx context.Context, k *kind, j *Job) {
	defer q.handlers.Done()
	defer q.release(k, j)
	defer j.cancel(nil)
	actx, cancel := context.WithTimeoutCause(ctx, k.limits.Timeout, ErrTimeout)
	defer cancel()
	err := call(actx, k.handler, j)
	j.mu.Lock()
	finished := j.finished
	j.mu.Unlock()
	if finished || errors.Is(err, ErrLeaseLost) {
		return
	}
	if err != nil {
		switch cause := context.Cause(actx); {
		case errors.Is(cause, ErrStopped):
			return // left to its lease, for another replica
		case errors.Is(cause, ErrCancelled), errors.Is(cause, ErrLeaseLost):
			return // no longer this worker's
		case errors.Is(cause, ErrTimeout):
			err = fmt.Errorf("attempt timed out after %s: %w", k.limits.Timeout, err)
		}
	}
	if ferr := j.Finish(ctx, err, nil); ferr != nil && !errors.Is(ferr, ErrLeaseLost) {
		slog.Error("Recording a job's attempt failed; it runs again once its lease runs out",
			"kind", k.name, "job_id", j.ID, "err", ferr)
	}
}

// call runs the handler, turning a panic into the attempt's error.
func call(ctx context.Context, h Handler, j *Job) (err error) {
	defer func() {
		if p := recover(); p != nil {
			slog.Error("Job handler panicked", "kind", j.Kind, "job_id", j.ID, "panic", fmt.Sprint(p), "stack", string(debug.Stack()))
			err = fmt.Errorf("handler panicked: %v", p)
		}
	}()
	return h(ctx, j)
}

func (q *Queue) release(k *kind, j *Job) {
	q.mu.Lock()
	k.running--
	delete(q.active, j.ID)
	q.mu.Unlock()
	select {
	case k.freed <- struct{}{}:
	default: // a wake-up is pending already
	}
}

// renewLoop renews the leases of the jobs running here every third of a
// lease, so that a lease runs out only when its worker is gone.
func (q *Queue) renewLoop(ctx context.Context) {
	defer close(q.beatDone)
	t := time.NewTicker(q.opts.Lease / 3)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			q.renew(ctx)
		}
	}
}

// renew extends the lease of each job running here that is within its time
// limit. A handler that ignores its context past the limit keeps its worker,
// but not its job: the lease runs out and another worker takes the job over.
// A job whose lease is found gone (taken over, or cancelled on another
// replica) has its handler's context cancelled.
func (q *Queue) renew(ctx context.Context) {
	defer func() {
		if p := recover(); p != nil {
			slog.Error("Renewing job leases panicked", "panic", fmt.Sprint(p))
		}
	}()
	now := time.Now()
	var held []*Job
	q.mu.Lock()
	for _, j := range q.active {
		if now.Before(j.deadline) {
			held = append(held, j)
		}
	}
	q.mu.Unlock()
	if len(held) == 0 {
		return
	}
	leaseEnd := q.opts.Now().Add(q.opts.Lease).UnixMilli()
	var lost []*Job
	err := q.inLeaseTx(ctx, func(tx *store.Tx) error {
		lost = lost[:0]
		for _, j := range held {
			res, err := tx.Exec(ctx, `UPDATE jobs SET run_at = ?
				WHERE id = ? AND state = 'running' AND lease_owner = ? AND attempts = ?`, leaseEnd, j.ID, q.owner, j.Attempt)
			if err != nil {
				return err
			}
			if n, err := res.RowsAffected(); err != nil {
				return err
			} else if n == 0 {
				lost = append(lost, j)
			}
		}
		return nil
	})
	if err != nil {
		if ctx.Err() == nil {
			slog.Warn("Renewing job leases failed", "jobs", len(held), "err", err)
		}
		return
	}
	for _, j := range lost {
		j.cancel(ErrLeaseLost)
	}
}

// pruneBatch bounds the rows one prune statement deletes, so that it holds
// the SQLite writer briefly.
const pruneBatch = 500

// prune deletes the registered kinds' done and cancelled jobs past
// Retention and dead ones past DeadRetention.
func (q *Queue) prune(ctx context.Context) error {
	now := q.opts.Now()
	q.mu.Lock()
	kinds := make([]string, 0, len(q.kinds))
	for name := range q.kinds {
		kinds = append(kinds, name)
	}
	q.mu.Unlock()
	total := int64(0)
	for _, name := range kinds {
		for state, keep := range map[State]time.Duration{Done: q.opts.Retention, Cancelled: q.opts.Retention, Dead: q.opts.DeadRetention} {
			for {
				res, err := q.db.Exec(ctx, `DELETE FROM jobs WHERE id IN (
					SELECT id FROM jobs WHERE kind = ? AND state = ? AND run_at < ? LIMIT ?)`,
					name, string(state), now.Add(-keep).UnixMilli(), pruneBatch)
				if err != nil {
					return fmt.Errorf("prune %s jobs: %w", state, err)
				}
				n, err := res.RowsAffected()
				if err != nil {
					return fmt.Errorf("prune %s jobs: %w", state, err)
				}
				total += n
				if n < pruneBatch {
					break
				}
			}
		}
	}
	if total > 0 {
		slog.Info("Pruned old jobs", "jobs", total)
	}
	return nil
}
