-- Organisations, their API keys, and namespaces (inboxes).
CREATE TABLE orgs (
    id                TEXT PRIMARY KEY,
    name              TEXT NOT NULL UNIQUE,
    totp_device_limit INTEGER NOT NULL DEFAULT 100,
    totp_enabled      BOOLEAN NOT NULL DEFAULT TRUE,
    created_at        BIGINT NOT NULL,
    updated_at        BIGINT NOT NULL
);

-- Only the SHA-256 of a key is stored; the key itself is shown once.
CREATE TABLE api_keys (
    id         TEXT PRIMARY KEY,
    org_id     TEXT NOT NULL REFERENCES orgs (id),
    key_hash   TEXT NOT NULL UNIQUE,
    label      TEXT NOT NULL DEFAULT '',
    created_at BIGINT NOT NULL,
    revoked_at BIGINT
);
CREATE INDEX api_keys_org ON api_keys (org_id);

CREATE TABLE namespaces (
    id                TEXT PRIMARY KEY,
    org_id            TEXT NOT NULL REFERENCES orgs (id),
    name              TEXT NOT NULL UNIQUE,
    retention_time    INTEGER NOT NULL,
    quota_limit       INTEGER,
    capture_raw_email BOOLEAN NOT NULL DEFAULT TRUE,
    shared_org_id     TEXT REFERENCES orgs (id),
    created_at        BIGINT NOT NULL,
    updated_at        BIGINT NOT NULL
);
CREATE INDEX namespaces_org ON namespaces (org_id);
