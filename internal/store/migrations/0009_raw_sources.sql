-- Raw sources in their own append-only table (docs/inbox.md, "Storage").
--
-- Raw sources were content-addressed blobs, named by their SHA-256 and found
-- through raw_messages (keyed by the email's id). Two raw sources are never the
-- same bytes (Message-ID, Date and Received differ), so the hash bought no
-- sharing; it cost four B-tree pages at random places per message (blobs, its
-- key, raw_messages, its blob index) in every commit. A raw source now gets
-- the next integer key, its pages are appended, and the email row points to
-- it: the rows of one delivery to several namespaces share one source, and the
-- source is deleted with the last email that points to it (emails_raw).
-- Attachments keep their content-addressed blobs: the same logo in every
-- newsletter is worth finding.
CREATE TABLE raw_sources (
    id            {{serial}},
    codec         INTEGER NOT NULL,
    size          BIGINT NOT NULL,
    data          {{blob}} NOT NULL,
    from_email_id TEXT
);
ALTER TABLE emails ADD COLUMN raw_id BIGINT;

-- Existing raw sources move over, one per email, bytes as they were stored.
INSERT INTO raw_sources (codec, size, data, from_email_id)
    SELECT COALESCE(b.codec, 0), COALESCE(b.size, length(r.data)), COALESCE(b.data, r.data), r.email_id
    FROM raw_messages r LEFT JOIN blobs b ON b.hash = r.blob_hash;
CREATE INDEX raw_sources_from_email ON raw_sources (from_email_id);
UPDATE emails SET raw_id = (SELECT s.id FROM raw_sources s WHERE s.from_email_id = emails.id)
    WHERE id IN (SELECT email_id FROM raw_messages);
DROP INDEX raw_sources_from_email;
ALTER TABLE raw_sources DROP COLUMN from_email_id;
DELETE FROM blobs WHERE hash IN (SELECT blob_hash FROM raw_messages WHERE blob_hash IS NOT NULL)
    AND NOT EXISTS (SELECT 1 FROM attachments a WHERE a.blob_hash = blobs.hash);
DROP TABLE raw_messages;

CREATE INDEX emails_raw ON emails (raw_id) WHERE raw_id IS NOT NULL;
