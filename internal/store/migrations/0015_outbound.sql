-- Outbound email (internal/outbound; docs/flow.md, "Outbound"): messages sent
-- from a namespace as new mail, replies or forwards, their recipients and the
-- events that move each recipient's delivery status, their attachments, the
-- message as built, and what the organisation may send to (destinations) or
-- must not (suppressions). Times are Unix milliseconds; an absent optional
-- value is NULL.

-- One row per outbound email. status is derived from the recipients' delivery
-- statuses by outbound.RecordEvent, the one writer of states. The bodies sit
-- last: a list reads the columns before them only.
--
-- return_path_token names the message in its envelope sender (MAIL FROM
-- bounce+<token>@<mail domain>), where delivery status notifications and
-- feedback reports about it arrive. has_external is whether any recipient is
-- outside the sending namespace, i.e. whether the message counts as outbound
-- usage. source_email_id is the inbound email a reply or forward was made from
-- (no foreign key: inbound emails expire, outbound ones stay).
CREATE TABLE outbound_emails (
    id                  TEXT PRIMARY KEY,
    org_id              TEXT NOT NULL REFERENCES orgs (id),
    namespace_id        TEXT NOT NULL,
    type                TEXT NOT NULL CHECK (type IN ('new', 'reply', 'forward')),
    status              TEXT NOT NULL CHECK (status IN ('queued', 'sending', 'sent', 'failed')),
    from_email          TEXT NOT NULL,
    from_name           TEXT NOT NULL DEFAULT '',
    reply_to_email      TEXT,
    reply_to_name       TEXT NOT NULL DEFAULT '',
    subject             TEXT NOT NULL,
    message_id          TEXT NOT NULL,
    source_email_id     TEXT,
    return_path_token   TEXT NOT NULL UNIQUE,
    has_external        BOOLEAN NOT NULL,
    recipient_count     INTEGER NOT NULL,
    attachment_count    INTEGER NOT NULL,
    provider            TEXT,
    provider_message_id TEXT,
    failure_reason      TEXT,
    queued_at           BIGINT NOT NULL,
    sending_at          BIGINT,
    sent_at             BIGINT,
    failed_at           BIGINT,
    created_at          BIGINT NOT NULL,
    updated_at          BIGINT NOT NULL,
    body_html           TEXT NOT NULL DEFAULT '',
    body_text           TEXT NOT NULL DEFAULT ''
);
-- The list, newest first, of one organisation; with a status or a type filter.
CREATE INDEX outbound_emails_org ON outbound_emails (org_id, created_at, id);
CREATE INDEX outbound_emails_org_status ON outbound_emails (org_id, status, created_at, id);
CREATE INDEX outbound_emails_org_type ON outbound_emails (org_id, type, created_at, id);
-- A report that names the message by its relay's id or by its Message-ID.
CREATE INDEX outbound_emails_provider ON outbound_emails (provider_message_id) WHERE provider_message_id IS NOT NULL;
CREATE INDEX outbound_emails_message_id ON outbound_emails (message_id);

-- The RFC 5322 message as built at creation, sent unchanged by every attempt
-- (the same Message-ID and bytes to every recipient and on every retry). It
-- holds the attachments, so it expires with their bytes.
CREATE TABLE outbound_sources (
    outbound_email_id TEXT PRIMARY KEY REFERENCES outbound_emails (id),
    size              BIGINT NOT NULL,
    expires_at        BIGINT NOT NULL,
    data              {{blob}} NOT NULL
);
CREATE INDEX outbound_sources_expiry ON outbound_sources (expires_at);

-- Recipients in the order given (to, then cc, then bcc). internal: the address
-- is in the sending namespace and is delivered into its inbox, not relayed. A
-- <status>_at column is when an event of that type last happened to the
-- recipient; last_smtp_* are the SMTP details of its latest event that had any.
CREATE TABLE outbound_recipients (
    id                        TEXT PRIMARY KEY,
    outbound_email_id         TEXT NOT NULL REFERENCES outbound_emails (id),
    position                  INTEGER NOT NULL,
    type                      TEXT NOT NULL CHECK (type IN ('to', 'cc', 'bcc')),
    email                     TEXT NOT NULL,
    name                      TEXT NOT NULL DEFAULT '',
    internal                  BOOLEAN NOT NULL,
    delivery_status           TEXT NOT NULL CHECK (delivery_status IN ('pending', 'accepted', 'queued', 'sent',
        'delayed', 'deferred', 'delivered', 'bounced', 'expired', 'complained', 'unsubscribed', 'suppressed',
        'rejected', 'failed', 'cancelled')),
    last_event_type           TEXT,
    last_event_at             BIGINT,
    accepted_at               BIGINT,
    queued_at                 BIGINT,
    sent_at                   BIGINT,
    delayed_at                BIGINT,
    deferred_at               BIGINT,
    delivered_at              BIGINT,
    bounced_at                BIGINT,
    expired_at                BIGINT,
    complained_at             BIGINT,
    unsubscribed_at           BIGINT,
    suppressed_at             BIGINT,
    rejected_at               BIGINT,
    failed_at                 BIGINT,
    cancelled_at              BIGINT,
    last_smtp_code            TEXT,
    last_enhanced_status_code TEXT,
    last_smtp_response        TEXT,
    attempt_count             INTEGER NOT NULL DEFAULT 0,
    bounce_type               TEXT,
    bounce_subtype            TEXT,
    bounce_classification     TEXT,
    complaint_feedback_type   TEXT
);
CREATE INDEX outbound_recipients_message ON outbound_recipients (outbound_email_id, position);

-- Events and the recipients each concerns. provider_event_id, when a provider
-- names its event, makes recording it again a no-op (a report delivered twice).
CREATE TABLE outbound_events (
    id                  TEXT PRIMARY KEY,
    outbound_email_id   TEXT NOT NULL REFERENCES outbound_emails (id),
    event_type          TEXT NOT NULL CHECK (event_type IN ('accepted', 'queued', 'sent', 'failed', 'rejected',
        'delayed', 'deferred', 'delivered', 'bounced', 'expired', 'complained', 'unsubscribed', 'suppressed',
        'cancelled', 'opened', 'clicked')),
    event_subtype       TEXT,
    provider            TEXT,
    provider_message_id TEXT,
    provider_event_id   TEXT,
    occurred_at         BIGINT NOT NULL,
    created_at          BIGINT NOT NULL
);
CREATE INDEX outbound_events_message ON outbound_events (outbound_email_id, occurred_at, created_at);
CREATE UNIQUE INDEX outbound_events_provider_event ON outbound_events (outbound_email_id, provider_event_id)
    WHERE provider_event_id IS NOT NULL;

-- attempt_count is the recipient's count of delivery attempts once the event
-- was recorded.
CREATE TABLE outbound_event_recipients (
    id                    TEXT PRIMARY KEY,
    event_id              TEXT NOT NULL REFERENCES outbound_events (id),
    outbound_email_id     TEXT NOT NULL,
    recipient_id          TEXT NOT NULL REFERENCES outbound_recipients (id),
    position              INTEGER NOT NULL,
    email                 TEXT NOT NULL,
    smtp_code             TEXT,
    enhanced_status_code  TEXT,
    smtp_response         TEXT,
    diagnostic_code       TEXT,
    action                TEXT,
    attempt_count         INTEGER NOT NULL,
    bounce_classification TEXT
);
CREATE INDEX outbound_event_recipients_message ON outbound_event_recipients (outbound_email_id, event_id, position);

-- Attachments as sent. data is NULL once content_expires_at has passed and the
-- bytes were deleted; the metadata stays.
CREATE TABLE outbound_attachments (
    id                 TEXT PRIMARY KEY,
    outbound_email_id  TEXT NOT NULL REFERENCES outbound_emails (id),
    position           INTEGER NOT NULL,
    filename           TEXT NOT NULL,
    content_type       TEXT NOT NULL,
    content_id         TEXT NOT NULL DEFAULT '',
    disposition        TEXT NOT NULL CHECK (disposition IN ('attachment', 'inline')),
    size               BIGINT NOT NULL,
    content_expires_at BIGINT NOT NULL,
    data               {{blob}}
);
CREATE INDEX outbound_attachments_message ON outbound_attachments (outbound_email_id, position);
CREATE INDEX outbound_attachments_expiry ON outbound_attachments (content_expires_at) WHERE data IS NOT NULL;

-- Outbound usage: messages with at least one external recipient, per
-- organisation and calendar month (UTC, 'YYYY-MM'), counted when the message
-- is created. A counter rather than a count over outbound_emails, so that it
-- outlives the messages it counted.
CREATE TABLE outbound_usage (
    org_id   TEXT NOT NULL REFERENCES orgs (id),
    month    TEXT NOT NULL,
    messages BIGINT NOT NULL,
    PRIMARY KEY (org_id, month)
);

-- Addresses an organisation's mail is no longer sent to, lower case: hard
-- bounces and complaints (reason 'bounced', 'complained') and an operator's
-- own ('manual'). source_event_id is the event that caused it, if any.
CREATE TABLE suppressions (
    org_id          TEXT NOT NULL REFERENCES orgs (id),
    address         TEXT NOT NULL,
    reason          TEXT NOT NULL,
    source_event_id TEXT,
    created_at      BIGINT NOT NULL,
    PRIMARY KEY (org_id, address)
);

-- External addresses an organisation may send to, lower case. A destination is
-- verified when verified_at is set: by an operator, or by following the link
-- mailed to it, whose token is stored only as its SHA-256 (token_hash) until
-- it is used or expires.
CREATE TABLE destinations (
    id               TEXT PRIMARY KEY,
    org_id           TEXT NOT NULL REFERENCES orgs (id),
    address          TEXT NOT NULL,
    token_hash       TEXT UNIQUE,
    token_expires_at BIGINT,
    verified_at      BIGINT,
    created_at       BIGINT NOT NULL,
    updated_at       BIGINT NOT NULL,
    UNIQUE (org_id, address)
);
