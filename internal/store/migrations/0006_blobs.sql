-- Compact message storage (docs/inbox.md, "Storage"). The bytes of raw messages and
-- of attachments live in blobs, named by the SHA-256 of their content, so the same
-- bytes are stored once however many rows refer to them: one message delivered to
-- several namespaces, the same logo in every newsletter. A blob is zstd-compressed
-- when that makes it smaller (codec 1) and stored as it is otherwise (codec 0). A
-- blob is deleted with the last row that refers to it.
CREATE TABLE blobs (
    hash  TEXT PRIMARY KEY,
    codec INTEGER NOT NULL,
    size  BIGINT NOT NULL,
    data  {{blob}} NOT NULL
);

-- An email's text and html bodies, apart from its JSON document (doc): one codec
-- byte (0 or 1, as above), then {"text", "html"} as JSON. NULL for rows written
-- before this migration, whose bodies are in doc.
ALTER TABLE emails ADD COLUMN body {{blob}};

-- Rows written before this migration keep their bytes, uncompressed, in their own
-- data column and have no blob_hash; they are read as they are until retention
-- deletes them. New rows leave data empty.
ALTER TABLE raw_messages ADD COLUMN blob_hash TEXT;
CREATE INDEX raw_messages_blob ON raw_messages (blob_hash) WHERE blob_hash IS NOT NULL;

-- An attachment's bytes are either its own blob (blob_hash), or, when its email
-- keeps the raw source, read from that source on download (in_raw): the raw
-- message already holds them, so they are not stored twice. sha256 is the hash of
-- the attachment's bytes, checked when they are read back from the source.
ALTER TABLE attachments ADD COLUMN blob_hash TEXT;
ALTER TABLE attachments ADD COLUMN sha256 TEXT NOT NULL DEFAULT '';
ALTER TABLE attachments ADD COLUMN in_raw BOOLEAN NOT NULL DEFAULT FALSE;
CREATE INDEX attachments_blob ON attachments (blob_hash) WHERE blob_hash IS NOT NULL;
