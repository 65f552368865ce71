-- Automations (scheduled and ring rollouts), stored scripts, and the slots
-- the scheduler skipped. Runs and commands live in 002.
CREATE TABLE automations (
	id               TEXT PRIMARY KEY,
	org_id           TEXT NOT NULL REFERENCES orgs(id) ON DELETE CASCADE,
	name             TEXT NOT NULL,
	description      TEXT,
	action_type      TEXT NOT NULL,
	payload          TEXT NOT NULL DEFAULT '{}',
	kind             TEXT NOT NULL,
	schedule_kind    TEXT,
	freq             TEXT,
	at_time          TEXT,
	weekday          INTEGER,
	month_day        INTEGER,
	offset_days      INTEGER NOT NULL DEFAULT 0,
	window_minutes   INTEGER,
	run_at           BIGINT,
	enabled          BOOLEAN NOT NULL DEFAULT TRUE,
	target_mode      TEXT NOT NULL,
	group_id         TEXT,
	endpoint_ids     TEXT NOT NULL DEFAULT '[]',
	start_date       TEXT,
	rings            TEXT NOT NULL DEFAULT '[]',
	min_success_rate REAL,
	-- Ring state: the next ring to run, the run of the ring before it, and
	-- why the rollout halted (NULL while it goes on).
	ring_next        INTEGER NOT NULL DEFAULT 0,
	ring_run_id      TEXT,
	halted_reason    TEXT,
	last_run_at      BIGINT,
	-- next_run_at is the due slot; the scheduler claims it with a
	-- compare-and-swap, so a slot fires once across replicas.
	next_run_at      BIGINT,
	created_by       TEXT,
	created_at       BIGINT NOT NULL,
	updated_at       BIGINT NOT NULL
);
CREATE INDEX automations_org_name ON automations (org_id, name, id);
CREATE INDEX automations_due ON automations (next_run_at) WHERE enabled;

-- A slot that did not run: missed beyond its window (server down), no
-- target left, nothing to install, or a ring rollout that halted.
CREATE TABLE automation_skips (
	id            TEXT PRIMARY KEY,
	org_id        TEXT NOT NULL,
	automation_id TEXT NOT NULL REFERENCES automations(id) ON DELETE CASCADE,
	slot_at       BIGINT NOT NULL,
	recorded_at   BIGINT NOT NULL,
	reason        TEXT NOT NULL
);
CREATE INDEX automation_skips_automation ON automation_skips (automation_id, slot_at DESC);

CREATE TABLE scripts (
	id                TEXT PRIMARY KEY,
	org_id            TEXT NOT NULL REFERENCES orgs(id) ON DELETE CASCADE,
	name              TEXT NOT NULL,
	language          TEXT NOT NULL,
	code              TEXT NOT NULL,
	parameters        TEXT NOT NULL DEFAULT '[]',
	reboot_exit_codes TEXT NOT NULL DEFAULT '[]',
	timeout_seconds   INTEGER NOT NULL DEFAULT 0,
	created_at        BIGINT NOT NULL,
	updated_at        BIGINT NOT NULL,
	UNIQUE (org_id, name)
);

CREATE INDEX commands_not_after ON commands (status, not_after);
