-- Saved virtual authenticator (TOTP) devices. secret_sealed is the raw shared
-- secret sealed with AES-256-GCM under a key derived from the server key (the
-- device's org and id are its associated data); the secret is never stored in
-- clear. username_fold and issuer_fold are the lower-cased values the
-- case-insensitive partial-match filters compare against, identical on both stores.
CREATE TABLE totp_devices (
    id            TEXT PRIMARY KEY,
    org_id        TEXT NOT NULL REFERENCES orgs (id),
    name          TEXT NOT NULL,
    username      TEXT,
    issuer        TEXT,
    username_fold TEXT,
    issuer_fold   TEXT,
    digits        INTEGER NOT NULL,
    period        INTEGER NOT NULL,
    algorithm     TEXT NOT NULL,
    source        TEXT NOT NULL,
    secret_sealed {{blob}} NOT NULL,
    expires_at    BIGINT,
    created_at    BIGINT NOT NULL,
    updated_at    BIGINT NOT NULL
);
-- The device list (newest first) and the active-device count of an organisation.
CREATE INDEX totp_devices_org ON totp_devices (org_id, created_at DESC, id DESC);
