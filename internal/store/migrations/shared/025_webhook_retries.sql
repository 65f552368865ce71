-- Webhook retries with back-off, a patchd addition per rule (issue 21 item 3):
-- 0 minutes is the specification's rule (one try, no retry).
ALTER TABLE alert_rules ADD COLUMN webhook_retry_minutes INTEGER NOT NULL DEFAULT 0;
-- attempts made, when the next may start (NULL: now), the last failure, and
-- whether the delivery ended failed (shown with "Send again" in the console).
ALTER TABLE alert_outbox ADD COLUMN attempts INTEGER NOT NULL DEFAULT 0;
ALTER TABLE alert_outbox ADD COLUMN next_at BIGINT;
ALTER TABLE alert_outbox ADD COLUMN last_error TEXT;
ALTER TABLE alert_outbox ADD COLUMN failed BOOLEAN NOT NULL DEFAULT FALSE;
