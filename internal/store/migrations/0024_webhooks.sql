-- Webhooks (internal/webhook; docs/webhooks.md, docs/flow.md "Webhooks").
--
-- webhook_endpoints: an organisation's receivers. secret and previous_secret
-- are sealed (secret.Sealer, the endpoint id as associated data); the previous
-- one still signs until previous_secret_until, after a rotation. scheduled is
-- true while the endpoint has its one delivery job (pending or running):
-- producers and the job read and set it under the row's lock, so an endpoint
-- never has two jobs and its events go out one at a time, in order.
-- failing_since is the first failed attempt since the last success; an
-- endpoint failing for the disable window is disabled with disabled_reason.
CREATE TABLE webhook_endpoints (
    id                    TEXT PRIMARY KEY,
    org_id                TEXT NOT NULL,
    url                   TEXT NOT NULL,
    event_types           TEXT NOT NULL,
    namespace             TEXT,
    description           TEXT NOT NULL DEFAULT '',
    enabled               BOOLEAN NOT NULL DEFAULT TRUE,
    disabled_reason       TEXT,
    secret                {{blob}} NOT NULL,
    previous_secret       {{blob}},
    previous_secret_until BIGINT,
    scheduled             BOOLEAN NOT NULL DEFAULT FALSE,
    failing_since         BIGINT,
    created_at            BIGINT NOT NULL,
    updated_at            BIGINT NOT NULL
);
CREATE INDEX webhook_endpoints_org ON webhook_endpoints (org_id, created_at);

-- webhook_messages: the outbox. One row per event per endpoint it matched,
-- written in the transaction of what caused the event. seq orders an
-- endpoint's messages (assigned under the endpoint row's lock, so in commit
-- order per endpoint); body is the JSON sent, signed at each attempt.
--   state  pending (to deliver, not before next_attempt_at), delivered, dead
--          (retried until expires_at without a 2xx).
CREATE TABLE webhook_messages (
    seq             {{serial}},
    id              TEXT NOT NULL UNIQUE,
    endpoint_id     TEXT NOT NULL,
    event_type      TEXT NOT NULL,
    body            TEXT NOT NULL,
    state           TEXT NOT NULL CHECK (state IN ('pending', 'delivered', 'dead')),
    attempts        INTEGER NOT NULL DEFAULT 0,
    next_attempt_at BIGINT NOT NULL,
    expires_at      BIGINT NOT NULL,
    created_at      BIGINT NOT NULL,
    finished_at     BIGINT
);
-- The head of an endpoint's queue (endpoint, 'pending', lowest seq) and its log.
CREATE INDEX webhook_messages_endpoint ON webhook_messages (endpoint_id, state, seq);
CREATE INDEX webhook_messages_log ON webhook_messages (endpoint_id, seq);
CREATE INDEX webhook_messages_finished ON webhook_messages (finished_at);

-- webhook_attempts: every delivery attempt, for the delivery log.
CREATE TABLE webhook_attempts (
    id           {{serial}},
    message_id   TEXT NOT NULL,
    endpoint_id  TEXT NOT NULL,
    attempted_at BIGINT NOT NULL,
    status_code  INTEGER,
    latency_ms   BIGINT NOT NULL,
    response     TEXT,
    error        TEXT,
    manual       BOOLEAN NOT NULL DEFAULT FALSE
);
CREATE INDEX webhook_attempts_message ON webhook_attempts (message_id, id);
