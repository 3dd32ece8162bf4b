-- Link checks (internal/linkcheck; docs/flow.md, "Link checks"). One row per
-- email: its latest check, kept as deliverability reports are. A request
-- inserts it, or starts a new run of a finished one (run + 1), in the
-- transaction that enqueues the run's job; the job writes the outcome only
-- while run is still its own, so a newer run is never overwritten by an older.
--   status      pending (requested), running (a worker started it),
--               completed (links holds the JSON array), failed (error says why);
--   started_at  when the run was requested (the API's started_at);
--   expires_at  when the row is deleted: 7 days after the run was requested or
--               completed, never past the email's own expiry.
CREATE TABLE link_checks (
    email_id     TEXT PRIMARY KEY,
    namespace_id TEXT NOT NULL,
    run          INTEGER NOT NULL,
    status       TEXT NOT NULL CHECK (status IN ('pending', 'running', 'completed', 'failed')),
    started_at   BIGINT NOT NULL,
    finished_at  BIGINT,
    expires_at   BIGINT NOT NULL,
    links        TEXT,
    error        TEXT
);
-- The pruning of expired checks.
CREATE INDEX link_checks_expiry ON link_checks (expires_at);
-- Runs that never finished (their job died with its replica, at its attempt limit).
CREATE INDEX link_checks_live ON link_checks (status, started_at);
