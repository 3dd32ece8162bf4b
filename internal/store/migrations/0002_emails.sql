-- Inbound emails. One row per namespace a message was addressed to. doc holds the
-- parsed Email resource as JSON (without the columns below); the columns are what
-- search filters and orders on.
CREATE TABLE emails (
    seq          {{serial}},
    id           TEXT NOT NULL UNIQUE,
    namespace_id TEXT NOT NULL REFERENCES namespaces (id),
    received_ms  BIGINT NOT NULL,
    expires_ms   BIGINT NOT NULL,
    from_addr    TEXT NOT NULL,
    subject      TEXT NOT NULL,
    size         BIGINT NOT NULL,
    client_ip    TEXT NOT NULL,
    helo         TEXT NOT NULL,
    mail_from    TEXT NOT NULL,
    doc          TEXT NOT NULL
);
-- Newest first within a namespace; expires_ms rides along so the expiry filter is
-- answered from the index.
CREATE INDEX emails_ns_time ON emails (namespace_id, received_ms DESC, seq DESC, expires_ms);
-- The reaper's scan.
CREATE INDEX emails_expiry ON emails (expires_ms);

-- Every address an email was sent to in its namespace (header To and Cc, and the
-- envelope recipients), lower case, for to_addr_prefix: a byte-ordered range scan.
CREATE TABLE email_recipients (
    namespace_id TEXT NOT NULL,
    addr         {{text_c}} NOT NULL,
    email_seq    BIGINT NOT NULL,
    PRIMARY KEY (namespace_id, addr, email_seq)
);
CREATE INDEX email_recipients_email ON email_recipients (email_seq);

CREATE TABLE attachments (
    id           TEXT PRIMARY KEY,
    email_id     TEXT NOT NULL,
    position     INTEGER NOT NULL,
    filename     TEXT NOT NULL,
    content_type TEXT NOT NULL,
    content_id   TEXT NOT NULL DEFAULT '',
    inline       BOOLEAN NOT NULL DEFAULT FALSE,
    size         BIGINT NOT NULL,
    data         {{blob}} NOT NULL
);
CREATE INDEX attachments_email ON attachments (email_id, position);

-- The bytes received, exactly, when the namespace captures raw email.
CREATE TABLE raw_messages (
    email_id TEXT PRIMARY KEY,
    data     {{blob}} NOT NULL
);
