-- FTS5 flushes its pending index data at the start of every statement that writes
-- to it, so a trigger per inserted email wrote one tiny index segment per email
-- and spent its time merging them. The ingester now adds a whole committed batch
-- to the index with one INSERT ... SELECT (inbox.indexBatch); deletion stays a
-- trigger (the reaper deletes in batches already).
DROP TRIGGER IF EXISTS emails_fts_insert;
