-- The durable job queue of background work (internal/jobs; docs/flow.md,
-- "Background work"). A job is written in the transaction of what causes it,
-- claimed by a worker under a lease, and kept after it ends: done and
-- cancelled jobs until their retention has passed, dead ones with their last
-- error until theirs has.
--
-- run_at is the time the row next needs attention, so that one index serves
-- every question the workers ask:
--   pending            not claimed before run_at (its schedule, or its retry);
--   running            its lease ends at run_at, unless the worker renews it;
--                      after that any worker may take the job over;
--   done, cancelled,
--   dead               when it ended (pruned from there).
-- attempts counts the claims so far; lease_owner names the worker holding a
-- running job, and (lease_owner, attempts) is the lease a worker must still
-- hold to record the attempt's outcome.
CREATE TABLE jobs (
    id           {{serial}},
    kind         TEXT NOT NULL,
    state        TEXT NOT NULL CHECK (state IN ('pending', 'running', 'done', 'dead', 'cancelled')),
    payload      {{blob}} NOT NULL,
    run_at       BIGINT NOT NULL,
    attempts     INTEGER NOT NULL DEFAULT 0,
    lease_owner  TEXT,
    last_error   TEXT,
    created_at   BIGINT NOT NULL,
    attempted_at BIGINT,
    finished_at  BIGINT
);
-- Claims (kind, 'pending', run_at <= now, oldest first), take-overs of expired
-- leases (kind, 'running', run_at <= now), pruning (kind, 'done', run_at <
-- cutoff) and the counts by kind and state all read this index alone.
CREATE INDEX jobs_due ON jobs (kind, state, run_at);
