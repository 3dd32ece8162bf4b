-- Token buckets shared by every replica (limit.Shared): the dashboard's
-- sign-in throttles on PostgreSQL, where several catchbox serve processes
-- must count one client's attempts together. tokens is the bucket's content
-- as of at (Unix milliseconds); rate (tokens a millisecond) and burst are
-- written with every charge, so a row says when it is full again and the
-- reaper can drop it without knowing which throttle it belongs to.
CREATE TABLE throttle_buckets (
    name   TEXT PRIMARY KEY,
    tokens DOUBLE PRECISION NOT NULL,
    at     BIGINT NOT NULL,
    rate   DOUBLE PRECISION NOT NULL,
    burst  DOUBLE PRECISION NOT NULL
);
