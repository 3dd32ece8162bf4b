-- Verification mails of destinations (internal/outbound, destinations.go):
-- one row per mail queued by POST /api/destinations, so that an organisation
-- sends at most a fixed number per hour whichever replica answers. Rows older
-- than the hour are deleted as new ones are added. No foreign key to
-- destinations: a removed destination's mails still count.
CREATE TABLE destination_verifications (
    id             TEXT PRIMARY KEY,
    org_id         TEXT NOT NULL REFERENCES orgs (id),
    destination_id TEXT NOT NULL,
    created_at     BIGINT NOT NULL
);
CREATE INDEX destination_verifications_org ON destination_verifications (org_id, created_at);
