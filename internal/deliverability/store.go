package deliverability

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/catchbox/catchbox/internal/store"
)

// Report statuses (the seed's).
const (
	StatusPending   = "pending"
	StatusRunning   = "running"
	StatusCompleted = "completed"
	StatusFailed    = "failed"
)

// ReportError is one entry of a failed report's errors.
type ReportError struct {
	Code    string         `json:"code"`
	Message string         `json:"message"`
	Details map[string]any `json:"details,omitempty"`
}

// stored is a report row.
type stored struct {
	EmailID     string
	NamespaceID string
	Run         int
	Status      string
	Version     string
	RequestedAt time.Time
	ExpiresAt   time.Time
	Report      json.RawMessage // set when completed
	Errors      []ReportError   // set when failed
}

// reports is the deliverability_reports table (migration 0019).
type reports struct{ db *store.DB }

const reportColumns = "email_id, namespace_id, run, status, analysis_version, requested_at, expires_at, report, errors"

func scanReport(row interface{ Scan(...any) error }) (stored, error) {
	var s stored
	var requested, expires int64
	var report, errs sql.NullString
	if err := row.Scan(&s.EmailID, &s.NamespaceID, &s.Run, &s.Status, &s.Version, &requested, &expires, &report, &errs); err != nil {
		return stored{}, err
	}
	s.RequestedAt, s.ExpiresAt = time.UnixMilli(requested), time.UnixMilli(expires)
	if report.Valid {
		s.Report = json.RawMessage(report.String)
	}
	if errs.Valid {
		if err := json.Unmarshal([]byte(errs.String), &s.Errors); err != nil {
			return stored{}, fmt.Errorf("decode report errors: %w", err)
		}
	}
	return s, nil
}

// get returns the email's unexpired report, or store.ErrNotFound.
func (r reports) get(ctx context.Context, emailID string, now time.Time) (stored, error) {
	s, err := scanReport(r.db.QueryRow(ctx, "SELECT "+reportColumns+" FROM deliverability_reports WHERE email_id = ? AND expires_at > ?",
		emailID, now.UnixMilli()))
	if errors.Is(err, sql.ErrNoRows) {
		return stored{}, store.ErrNotFound
	}
	if err != nil {
		return stored{}, fmt.Errorf("get deliverability report: %w", err)
	}
	return s, nil
}

// request starts a run of the email's report in tx, unless one is live
// (pending or running, and not stale): it inserts the row, or resets a
// finished, expired or stale one to pending with run + 1, and returns the run
// started; 0 when a live run exists. The conflict clause makes two requests
// at once start one run: on PostgreSQL the second waits for the first's row
// and finds it live.
func (r reports) request(ctx context.Context, tx *store.Tx, emailID, namespaceID string, now, expires time.Time, staleBefore time.Time) (int, error) {
	var run int
	err := tx.QueryRow(ctx, `INSERT INTO deliverability_reports (email_id, namespace_id, run, status, analysis_version, requested_at, expires_at)
		VALUES (?, ?, 1, 'pending', ?, ?, ?)
		ON CONFLICT (email_id) DO UPDATE SET run = deliverability_reports.run + 1, status = 'pending',
			analysis_version = excluded.analysis_version, requested_at = excluded.requested_at, started_at = NULL,
			finished_at = NULL, expires_at = excluded.expires_at, report = NULL, errors = NULL
		WHERE deliverability_reports.status NOT IN ('pending', 'running') OR deliverability_reports.expires_at <= ?
			OR deliverability_reports.requested_at < ?
		RETURNING run`, emailID, namespaceID, AnalysisVersion, now.UnixMilli(), expires.UnixMilli(),
		now.UnixMilli(), staleBefore.UnixMilli()).Scan(&run)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("request deliverability report: %w", err)
	}
	return run, nil
}

// start marks the run as running, and reports whether it is still the
// email's current run (a refresh or the email's deletion supersedes it).
func (r reports) start(ctx context.Context, emailID string, run int, now time.Time) (bool, error) {
	res, err := r.db.Exec(ctx, `UPDATE deliverability_reports SET status = 'running', started_at = ?
		WHERE email_id = ? AND run = ? AND status IN ('pending', 'running')`, now.UnixMilli(), emailID, run)
	if err != nil {
		return false, fmt.Errorf("start deliverability report: %w", err)
	}
	n, err := res.RowsAffected()
	return n == 1, err
}

// complete stores the run's report in tx, if the run is still the email's.
func (r reports) complete(ctx context.Context, tx *store.Tx, emailID string, run int, report *Report, now, expires time.Time) error {
	b, err := json.Marshal(report)
	if err != nil {
		return fmt.Errorf("encode deliverability report: %w", err)
	}
	_, err = tx.Exec(ctx, `UPDATE deliverability_reports SET status = 'completed', report = ?, finished_at = ?, expires_at = ?
		WHERE email_id = ? AND run = ?`, string(b), now.UnixMilli(), expires.UnixMilli(), emailID, run)
	if err != nil {
		return fmt.Errorf("complete deliverability report: %w", err)
	}
	return nil
}

// fail stores the run's errors in tx, if the run is still the email's.
func (r reports) fail(ctx context.Context, tx *store.Tx, emailID string, run int, errs []ReportError, now time.Time) error {
	b, err := json.Marshal(errs)
	if err != nil {
		return fmt.Errorf("encode deliverability report errors: %w", err)
	}
	_, err = tx.Exec(ctx, `UPDATE deliverability_reports SET status = 'failed', errors = ?, finished_at = ?
		WHERE email_id = ? AND run = ?`, string(b), now.UnixMilli(), emailID, run)
	if err != nil {
		return fmt.Errorf("fail deliverability report: %w", err)
	}
	return nil
}

// pruneBatch bounds the rows one prune statement touches, so that it holds
// the SQLite writer briefly.
const pruneBatch = 500

// prune deletes expired reports and reports whose email is gone, and fails
// the runs that stopped before their end (their job died at its attempt
// limit, or its replica with it), so that none stays pending for ever.
func (r reports) prune(ctx context.Context, now, staleBefore time.Time) (deleted, abandoned int64, err error) {
	for _, q := range []struct {
		sql  string
		args []any
	}{
		{`DELETE FROM deliverability_reports WHERE email_id IN (SELECT email_id FROM deliverability_reports WHERE expires_at <= ? LIMIT ?)`, []any{now.UnixMilli()}},
		{`DELETE FROM deliverability_reports WHERE email_id IN (SELECT r.email_id FROM deliverability_reports r
			WHERE NOT EXISTS (SELECT 1 FROM emails e WHERE e.id = r.email_id) LIMIT ?)`, nil},
	} {
		n, err := r.db.ExecBatches(ctx, pruneBatch, q.sql, q.args...)
		deleted += n
		if err != nil {
			return deleted, abandoned, fmt.Errorf("prune deliverability reports: %w", err)
		}
	}
	errs, _ := json.Marshal([]ReportError{{Code: "report_abandoned",
		Message: "The report's run stopped before it finished (the server running it stopped); request the report again."}})
	abandoned, err = r.db.ExecCount(ctx, `UPDATE deliverability_reports SET status = 'failed', errors = ?, finished_at = ?
		WHERE status IN ('pending', 'running') AND requested_at < ?`, string(errs), now.UnixMilli(), staleBefore.UnixMilli())
	if err != nil {
		return deleted, abandoned, fmt.Errorf("prune deliverability reports: %w", err)
	}
	return deleted, abandoned, nil
}
