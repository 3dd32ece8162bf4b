-- emails_ns_time in ascending order. Searches read it backwards for newest
-- first, which SQLite does as cheaply; new emails now land at the right edge of
-- their namespace's range instead of its left edge. SQLite splits a page that
-- grows at its right edge by starting a new page, but one that grows at its left
-- edge by rebalancing it with its neighbours: about two leaf pages fewer are
-- written per commit under ingest (docs/benchmarks.md).
DROP INDEX emails_ns_time;
CREATE INDEX emails_ns_time ON emails (namespace_id, received_ms, seq, expires_ms);
