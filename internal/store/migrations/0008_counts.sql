-- Per-namespace email counts, so an unfiltered search's total_count is read, not
-- counted (docs/flow.md, "Search and wait"). Each ingest writer adds to its own
-- shard (on PostgreSQL several writers commit at once and must not queue on one
-- row); deletions subtract in shard -1. The total is the sum of the shards, minus
-- the emails that have expired but are not reaped yet, counted through the
-- reaper's emails_expiry index (few: the reaper runs every 30 s by default).
CREATE TABLE namespace_counts (
    namespace_id TEXT NOT NULL,
    shard        INTEGER NOT NULL,
    emails       BIGINT NOT NULL,
    PRIMARY KEY (namespace_id, shard)
);
INSERT INTO namespace_counts (namespace_id, shard, emails)
    SELECT namespace_id, 0, COUNT(*) FROM emails GROUP BY namespace_id;
