-- Deliverability reports (internal/deliverability; docs/flow.md, "Deliverability
-- reports"). One row per email: its latest report. A request inserts it, or
-- starts a new run of a finished one (run + 1), in the transaction that
-- enqueues the run's job; the job writes the outcome only while run is still
-- its own, so a refreshed report is never overwritten by an older run.
--   status      pending (requested), running (a worker started it),
--               completed (report holds the JSON), failed (errors holds them);
--   expires_at  when the report is deleted: 7 days after it was requested or
--               completed, never past the email's own expiry.
CREATE TABLE deliverability_reports (
    email_id         TEXT PRIMARY KEY,
    namespace_id     TEXT NOT NULL,
    run              INTEGER NOT NULL,
    status           TEXT NOT NULL CHECK (status IN ('pending', 'running', 'completed', 'failed')),
    analysis_version TEXT NOT NULL,
    requested_at     BIGINT NOT NULL,
    started_at       BIGINT,
    finished_at      BIGINT,
    expires_at       BIGINT NOT NULL,
    report           TEXT,
    errors           TEXT
);
-- The pruning of expired reports.
CREATE INDEX deliverability_reports_expiry ON deliverability_reports (expires_at);
-- Runs that never finished (their job died with its replica, at its attempt limit).
CREATE INDEX deliverability_reports_live ON deliverability_reports (status, requested_at);
