-- Dashboard users, the organisations they belong to, and their sessions
-- (internal/tenant: users.go, session.go).
--   users.password_hash   argon2id in the PHC string form ($argon2id$v=19$m=,t=,p=$salt$hash);
--   sessions.token_hash   the SHA-256 of the cookie's token: the token itself is never stored,
--                         so a copy of the database signs nobody in;
--   sessions.expires_at   the absolute end; last_seen_at ends an idle session earlier.
-- A removed user's sessions and memberships go with it.
CREATE TABLE users (
    id            TEXT PRIMARY KEY,
    email         TEXT NOT NULL UNIQUE,
    password_hash TEXT NOT NULL,
    created_at    BIGINT NOT NULL,
    updated_at    BIGINT NOT NULL
);

CREATE TABLE memberships (
    user_id    TEXT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    org_id     TEXT NOT NULL REFERENCES orgs (id),
    created_at BIGINT NOT NULL,
    PRIMARY KEY (user_id, org_id)
);
CREATE INDEX memberships_org ON memberships (org_id);

CREATE TABLE sessions (
    token_hash   TEXT PRIMARY KEY,
    user_id      TEXT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    created_at   BIGINT NOT NULL,
    last_seen_at BIGINT NOT NULL,
    expires_at   BIGINT NOT NULL
);
CREATE INDEX sessions_user ON sessions (user_id);
CREATE INDEX sessions_expiry ON sessions (expires_at);
