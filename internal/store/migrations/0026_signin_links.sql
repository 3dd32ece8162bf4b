-- One-time sign-in links of the dashboard (internal/tenant/signin.go): the link
-- printed at a local-mode start and by catchbox admin signin-link.
--   token_hash  the SHA-256 of the link's token: the token itself is never
--               stored, so a copy of the database signs nobody in;
--   expires_at  the end of the link's short life (Unix milliseconds).
-- A link is deleted when it is used (once), when its user is removed, or by
-- the session reaper once it has expired.
CREATE TABLE signin_links (
    token_hash TEXT PRIMARY KEY,
    user_id    TEXT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    created_at BIGINT NOT NULL,
    expires_at BIGINT NOT NULL
);
CREATE INDEX signin_links_user ON signin_links (user_id);
CREATE INDEX signin_links_expiry ON signin_links (expires_at);
