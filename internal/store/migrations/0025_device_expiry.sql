-- device.expired webhook events (internal/totp/expiry.go): expiry_announced is
-- set once a device's expiry has been written to the webhook outbox (or
-- passed over, for a device that expired long before it was looked at), so
-- each expiry is announced at most once. The index serves the periodic look
-- for devices expired and not yet announced.
ALTER TABLE totp_devices ADD COLUMN expiry_announced BOOLEAN NOT NULL DEFAULT FALSE;
CREATE INDEX totp_devices_expiry ON totp_devices (expiry_announced, expires_at);
