-- SMS numbers of organisations and the messages they receive. PostgreSQL adds a
-- trigram index for the body filter (0005_sms.postgres.sql).
--
-- phone_number is E.164 with its '+' and NULL while the number is only
-- requested; it is unique across organisations, because an inbound message from
-- a provider is routed by it alone.
CREATE TABLE sms_numbers (
    id             TEXT PRIMARY KEY,
    org_id         TEXT NOT NULL REFERENCES orgs (id),
    status         TEXT NOT NULL,
    country        TEXT NOT NULL,
    phone_number   TEXT UNIQUE,
    is_test_number BOOLEAN NOT NULL DEFAULT FALSE,
    created_at     BIGINT NOT NULL,
    updated_at     BIGINT NOT NULL
);
CREATE INDEX sms_numbers_org ON sms_numbers (org_id, created_at, id);

-- body_fold is the lower-cased body the case-insensitive body filter compares
-- against, folded in Go so that both stores agree beyond ASCII. from_number is
-- compared byte-wise for the prefix filter.
CREATE TABLE sms_messages (
    seq                 {{serial}},
    id                  TEXT NOT NULL UNIQUE,
    number_id           TEXT NOT NULL REFERENCES sms_numbers (id),
    direction           TEXT NOT NULL,
    from_number         {{text_c}} NOT NULL,
    to_number           TEXT NOT NULL,
    body                TEXT NOT NULL,
    body_fold           TEXT NOT NULL,
    provider_message_id TEXT,
    created_ms          BIGINT NOT NULL,
    expires_ms          BIGINT NOT NULL
);
-- Newest first within a number; every search is bounded to one number's rows,
-- and expires_ms rides along so the expiry filter is answered from the index.
CREATE INDEX sms_messages_number_time ON sms_messages (number_id, created_ms DESC, seq DESC, expires_ms);
-- The reaper's scan.
CREATE INDEX sms_messages_expiry ON sms_messages (expires_ms);
-- A provider's message id is stored once per number: a retried webhook is
-- idempotent. Virtual messages have none (NULLs never conflict).
CREATE UNIQUE INDEX sms_messages_provider ON sms_messages (number_id, provider_message_id);
