-- email_recipients as a WITHOUT ROWID table: its primary key (namespace_id, addr,
-- email_seq) is the table itself, so each recipient is one B-tree entry plus its
-- email_seq index entry, not a row plus two index entries. One B-tree fewer to
-- write per email and per commit. PostgreSQL keeps its heap and primary key.
CREATE TABLE email_recipients_new (
    namespace_id TEXT NOT NULL,
    addr         TEXT NOT NULL,
    email_seq    BIGINT NOT NULL,
    PRIMARY KEY (namespace_id, addr, email_seq)
) WITHOUT ROWID;
INSERT INTO email_recipients_new (namespace_id, addr, email_seq)
    SELECT namespace_id, addr, email_seq FROM email_recipients;
DROP TABLE email_recipients;
ALTER TABLE email_recipients_new RENAME TO email_recipients;
CREATE INDEX email_recipients_email ON email_recipients (email_seq);
