package linkcheck

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/catchbox/catchbox/internal/store"
)

// Statuses of a run, as the deliverability report has them.
const (
	StatusPending   = "pending"
	StatusRunning   = "running"
	StatusCompleted = "completed"
	StatusFailed    = "failed"
)

// Result is an email's link check as it stands.
type Result struct {
	Status string
	// StartedAt is when the run was requested.
	StartedAt time.Time
	// FinishedAt is when it ended; zero while it runs.
	FinishedAt time.Time
	// Links are the URLs' outcomes once the run has completed, in the order
	// of the email; empty before.
	Links []Link
	// Error says why a failed run failed.
	Error string
}

// Live reports whether the run is still under way.
func (r Result) Live() bool { return r.Status == StatusPending || r.Status == StatusRunning }

// checks is the link_checks table (migration 0052).
type checks struct{ db *store.DB }

// get returns the email's unexpired check, or store.ErrNotFound.
func (c checks) get(ctx context.Context, emailID string, now time.Time) (Result, error) {
	var r Result
	var started int64
	var finished sql.NullInt64
	var links, errText sql.NullString
	err := c.db.QueryRow(ctx, `SELECT status, started_at, finished_at, links, error FROM link_checks
		WHERE email_id = ? AND expires_at > ?`, emailID, now.UnixMilli()).Scan(&r.Status, &started, &finished, &links, &errText)
	if errors.Is(err, sql.ErrNoRows) {
		return Result{}, store.ErrNotFound
	}
	if err != nil {
		return Result{}, fmt.Errorf("get link check: %w", err)
	}
	r.StartedAt, r.Error = time.UnixMilli(started), errText.String
	if finished.Valid {
		r.FinishedAt = time.UnixMilli(finished.Int64)
	}
	r.Links = []Link{}
	if links.Valid {
		if err := json.Unmarshal([]byte(links.String), &r.Links); err != nil {
			return Result{}, fmt.Errorf("decode link check: %w", err)
		}
	}
	return r, nil
}

// request starts a run of the email's check in tx, unless one is live
// (pending or running, and not stale): it inserts the row, or resets a
// finished, expired or stale one to pending with run + 1, and returns the run
// started; 0 when a live run exists. The conflict clause makes two requests
// at once start one run: on PostgreSQL the second waits for the first's row
// and finds it live.
func (c checks) request(ctx context.Context, tx *store.Tx, emailID, namespaceID string, now, expires, staleBefore time.Time) (int, error) {
	var run int
	err := tx.QueryRow(ctx, `INSERT INTO link_checks (email_id, namespace_id, run, status, started_at, expires_at)
		VALUES (?, ?, 1, 'pending', ?, ?)
		ON CONFLICT (email_id) DO UPDATE SET run = link_checks.run + 1, status = 'pending',
			started_at = excluded.started_at, finished_at = NULL, expires_at = excluded.expires_at, links = NULL, error = NULL
		WHERE link_checks.status NOT IN ('pending', 'running') OR link_checks.expires_at <= ?
			OR link_checks.started_at < ?
		RETURNING run`, emailID, namespaceID, now.UnixMilli(), expires.UnixMilli(),
		now.UnixMilli(), staleBefore.UnixMilli()).Scan(&run)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("request link check: %w", err)
	}
	return run, nil
}

// start marks the run as running, and reports whether it is still the
// email's current run (a newer request supersedes it).
func (c checks) start(ctx context.Context, emailID string, run int) (bool, error) {
	res, err := c.db.Exec(ctx, `UPDATE link_checks SET status = 'running'
		WHERE email_id = ? AND run = ? AND status IN ('pending', 'running')`, emailID, run)
	if err != nil {
		return false, fmt.Errorf("start link check: %w", err)
	}
	n, err := res.RowsAffected()
	return n == 1, err
}

// complete stores the run's links in tx, if the run is still the email's.
func (c checks) complete(ctx context.Context, tx *store.Tx, emailID string, run int, links []Link, now, expires time.Time) error {
	b, err := json.Marshal(links)
	if err != nil {
		return fmt.Errorf("encode link check: %w", err)
	}
	_, err = tx.Exec(ctx, `UPDATE link_checks SET status = 'completed', links = ?, finished_at = ?, expires_at = ?
		WHERE email_id = ? AND run = ? AND status IN ('pending', 'running')`, string(b), now.UnixMilli(), expires.UnixMilli(), emailID, run)
	if err != nil {
		return fmt.Errorf("complete link check: %w", err)
	}
	return nil
}

// fail ends the run in tx with the reason, if the run is still the email's.
func (c checks) fail(ctx context.Context, tx *store.Tx, emailID string, run int, reason string, now time.Time) error {
	_, err := tx.Exec(ctx, `UPDATE link_checks SET status = 'failed', error = ?, finished_at = ?
		WHERE email_id = ? AND run = ? AND status IN ('pending', 'running')`, reason, now.UnixMilli(), emailID, run)
	if err != nil {
		return fmt.Errorf("fail link check: %w", err)
	}
	return nil
}

// pruneBatch bounds the rows one prune statement touches, so that it holds
// the SQLite writer briefly.
const pruneBatch = 500

// abandoned is the error of a run whose job stopped before it finished.
const abandoned = "the run stopped before it finished (the server running it stopped); start the check again"

// prune deletes expired checks and checks whose email is gone, and fails the
// runs that stopped before their end (their job died at its attempt limit, or
// its replica with it), so that none stays pending for ever.
func (c checks) prune(ctx context.Context, now, staleBefore time.Time) (deleted, failed int64, err error) {
	for _, q := range []struct {
		sql  string
		args []any
	}{
		{`DELETE FROM link_checks WHERE email_id IN (SELECT email_id FROM link_checks WHERE expires_at <= ? LIMIT ?)`, []any{now.UnixMilli()}},
		{`DELETE FROM link_checks WHERE email_id IN (SELECT c.email_id FROM link_checks c
			WHERE NOT EXISTS (SELECT 1 FROM emails e WHERE e.id = c.email_id) LIMIT ?)`, nil},
	} {
		n, err := c.db.ExecBatches(ctx, pruneBatch, q.sql, q.args...)
		deleted += n
		if err != nil {
			return deleted, failed, fmt.Errorf("prune link checks: %w", err)
		}
	}
	failed, err = c.db.ExecCount(ctx, `UPDATE link_checks SET status = 'failed', error = ?, finished_at = ?
		WHERE status IN ('pending', 'running') AND started_at < ?`, abandoned, now.UnixMilli(), staleBefore.UnixMilli())
	if err != nil {
		return deleted, failed, fmt.Errorf("prune link checks: %w", err)
	}
	return deleted, failed, nil
}
