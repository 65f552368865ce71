-- Alert rules, the events they raised (one per condition: UNIQUE
-- (rule_id, condition_key)), and the outbox of deliveries written in the
-- event's transaction and claimed by one worker of any replica.
CREATE TABLE alert_rules (
	id             TEXT PRIMARY KEY,
	org_id         TEXT NOT NULL REFERENCES orgs(id) ON DELETE CASCADE,
	name           TEXT NOT NULL,
	trigger_kind   TEXT NOT NULL,
	threshold      INTEGER NOT NULL,
	enabled        BOOLEAN NOT NULL DEFAULT TRUE,
	email_to       TEXT,
	webhook_url    TEXT,
	-- Kept in clear: it keys the HMAC of every delivery, so the server must
	-- read it back (docs/alerts.md says why it is not encrypted).
	webhook_secret TEXT,
	report_key     TEXT,
	-- REPORT_ROWS: whether the report is at or over the threshold now, so
	-- that crossing it raises one event until it falls below again.
	over_threshold BOOLEAN NOT NULL DEFAULT FALSE,
	events         INTEGER NOT NULL DEFAULT 0,
	created_by     TEXT NOT NULL,
	created_at     BIGINT NOT NULL,
	updated_at     BIGINT NOT NULL
);
CREATE INDEX alert_rules_org_trigger ON alert_rules (org_id, trigger_kind);

CREATE TABLE alert_events (
	id              TEXT PRIMARY KEY,
	org_id          TEXT NOT NULL,
	rule_id         TEXT NOT NULL REFERENCES alert_rules(id) ON DELETE CASCADE,
	condition_key   TEXT NOT NULL,
	event           TEXT NOT NULL,
	severity        TEXT NOT NULL,
	title           TEXT NOT NULL,
	detail          TEXT NOT NULL,
	endpoint_id     TEXT,
	group_id        TEXT,
	-- For an offline event: when the endpoint was last seen (the episode).
	since           BIGINT,
	raised_at       BIGINT NOT NULL,
	email_outcome   TEXT,
	webhook_outcome TEXT,
	UNIQUE (rule_id, condition_key)
);
CREATE INDEX alert_events_rule ON alert_events (rule_id, raised_at);
CREATE INDEX alert_events_endpoint ON alert_events (rule_id, endpoint_id, since);

CREATE TABLE alert_outbox (
	id            TEXT PRIMARY KEY,
	event_id      TEXT NOT NULL REFERENCES alert_events(id) ON DELETE CASCADE,
	channel       TEXT NOT NULL,
	created_at    BIGINT NOT NULL,
	claimed_by    TEXT,
	claimed_until BIGINT,
	done_at       BIGINT
);
CREATE INDEX alert_outbox_pending ON alert_outbox (done_at, created_at);

-- When the evaluator first saw each endpoint with a pending reboot
-- (REBOOT_REQUIRED counts its hours from there).
CREATE TABLE alert_reboots (
	endpoint_id TEXT PRIMARY KEY REFERENCES endpoints(id) ON DELETE CASCADE,
	org_id      TEXT NOT NULL,
	since       BIGINT NOT NULL
);
