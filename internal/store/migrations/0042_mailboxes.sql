-- IMAP's view of a namespace (internal/imapd, docs/imap.md): the namespace is
-- the INBOX of its IMAP clients. A mailbox row is made on the first IMAP
-- access to the namespace; uid_validity is then fixed (the Unix second it was
-- made) and stays whatever replica or restart serves the namespace, since
-- every replica reads it here.
--
-- UIDs are given to emails when IMAP first looks (inbox.Searcher.AssignUIDs),
-- not at ingest: ingest pays nothing for IMAP, and UIDs follow the order in
-- which they are given under the mailbox row's lock, never the order in which
-- concurrent ingest transactions happen to commit, so a UID once seen is never
-- followed by a smaller one (RFC 9051 section 2.3.1.1). uid_next is the next
-- UID to give; modseq grows with every change IMAP makes to the mailbox (new
-- UIDs, flags), so that another replica notices a change with one row read.
CREATE TABLE mailboxes (
    namespace_id TEXT PRIMARY KEY REFERENCES namespaces (id),
    uid_validity BIGINT NOT NULL,
    uid_next     BIGINT NOT NULL,
    modseq       BIGINT NOT NULL
);

-- One row per email that has a UID: its flags (inbox.Flags, a bit set of
-- \Seen, \Answered, \Flagged, \Deleted, \Draft) and the modseq of their last
-- change. The row is deleted with its email (inbox.deleteEmails), however the
-- email goes: IMAP's EXPUNGE, the API's DELETE, retention or quota.
CREATE TABLE mailbox_messages (
    namespace_id TEXT NOT NULL,
    uid          BIGINT NOT NULL,
    email_seq    BIGINT NOT NULL,
    flags        INTEGER NOT NULL,
    modseq       BIGINT NOT NULL,
    PRIMARY KEY (namespace_id, uid)
);
CREATE UNIQUE INDEX mailbox_messages_email ON mailbox_messages (email_seq);
CREATE INDEX mailbox_messages_modseq ON mailbox_messages (namespace_id, modseq);
