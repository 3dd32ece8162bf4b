-- Substring searches no longer read the FTS5 trigram index: on SQLite they
-- are answered from each namespace's copy of its subjects and senders in
-- memory (inbox/columns.go), with to_addr_prefix checked against
-- email_recipients, or, for a namespace over the copies' memory budget, row by
-- row. The index cost every ingest transaction a write to it and every
-- deletion a trigger (docs/benchmarks.md, issue 13).
DROP TRIGGER IF EXISTS emails_fts_insert;
DROP TRIGGER IF EXISTS emails_fts_delete;
DROP TABLE IF EXISTS emails_fts;
DROP TABLE IF EXISTS search_index_state;
