-- When each API key was last used to authenticate a request (Unix
-- milliseconds, NULL: never), for catchbox admin key list. It is written at
-- most once a minute per key (tenant.Service), so busy keys cost no write per
-- request.
ALTER TABLE api_keys ADD COLUMN last_used_at BIGINT;
