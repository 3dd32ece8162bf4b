-- The FTS5 trigram index lags behind the newest emails (inbox.catchUpIndex).
--
-- Adding a batch to FTS5 writes a new index segment and, every few batches,
-- merges segments: with one small batch per commit that was a third of the
-- writer's time. The writer now indexes every searchIndexLag emails at once,
-- and a substring search checks the emails after indexed_seq, at most that
-- many, row by row. The delete trigger removes from the index only what is in it.
CREATE TABLE search_index_state (
    id          INTEGER PRIMARY KEY CHECK (id = 1),
    indexed_seq BIGINT NOT NULL
);
INSERT INTO search_index_state (id, indexed_seq) SELECT 1, COALESCE(MAX(seq), 0) FROM emails;
DROP TRIGGER IF EXISTS emails_fts_delete;
CREATE TRIGGER emails_fts_delete AFTER DELETE ON emails
WHEN old.seq <= (SELECT indexed_seq FROM search_index_state WHERE id = 1)
BEGIN
    INSERT INTO emails_fts (emails_fts, rowid, subject, from_addr) VALUES ('delete', old.seq, old.subject, old.from_addr);
END;
