-- Substring search (subject_includes, from_addr_includes) through an FTS5 trigram
-- index over the emails table; triggers keep it in step.
CREATE VIRTUAL TABLE emails_fts USING fts5(
    subject, from_addr, content='emails', content_rowid='seq', tokenize='trigram'
);
CREATE TRIGGER emails_fts_insert AFTER INSERT ON emails BEGIN
    INSERT INTO emails_fts (rowid, subject, from_addr) VALUES (new.seq, new.subject, new.from_addr);
END;
CREATE TRIGGER emails_fts_delete AFTER DELETE ON emails BEGIN
    INSERT INTO emails_fts (emails_fts, rowid, subject, from_addr) VALUES ('delete', old.seq, old.subject, old.from_addr);
END;
