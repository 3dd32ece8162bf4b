-- Compaction of small messages on SQLite (internal/inbox/compact.go): the
-- ingester stores a small message's raw source and body uncompressed
-- (raw_sources.codec 2) and the compactor compresses them once ingest is quiet.
-- raw_cursor is the compactor's place: no raw source at or below it is left to
-- compress. Nothing stored before this migration is, so it starts at the end.
CREATE TABLE inbox_compaction (
    id         INTEGER PRIMARY KEY CHECK (id = 1),
    raw_cursor BIGINT NOT NULL
);
INSERT INTO inbox_compaction (id, raw_cursor) SELECT 1, COALESCE(MAX(id), 0) FROM raw_sources;
