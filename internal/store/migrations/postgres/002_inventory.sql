-- Endpoints and their inventory (issue: agents and inventory), the update
-- catalog with approvals, and the runs and commands the agents execute.
CREATE TABLE endpoints (
	id                TEXT PRIMARY KEY,
	org_id            TEXT NOT NULL REFERENCES orgs(id) ON DELETE CASCADE,
	machine_uid       TEXT NOT NULL,
	secret_hash       TEXT NOT NULL UNIQUE,
	hostname          TEXT NOT NULL,
	display_name      TEXT,
	sort_name         TEXT NOT NULL,
	platform          TEXT NOT NULL,
	os                TEXT,
	os_version        TEXT,
	os_build          TEXT,
	arch              TEXT,
	distro            TEXT,
	type              TEXT NOT NULL DEFAULT 'workstation',
	domain            TEXT,
	ad_ou             TEXT,
	logged_user       TEXT,
	manufacturer      TEXT,
	model             TEXT,
	serial_number     TEXT,
	cpu               TEXT,
	cores             INTEGER,
	ram_gb            DOUBLE PRECISION,
	ip_addresses      TEXT NOT NULL DEFAULT '[]',
	mac_addresses     TEXT NOT NULL DEFAULT '[]',
	antivirus         TEXT,
	time_zone         TEXT,
	pending_reboot    BOOLEAN NOT NULL DEFAULT FALSE,
	agent_version     TEXT,
	attributes        TEXT NOT NULL DEFAULT '{}',
	comment           TEXT,
	last_boot_at      BIGINT,
	last_seen_at      BIGINT,
	enrolled_at       BIGINT NOT NULL,
	inventory_hash    TEXT,
	inventory_at      BIGINT,
	status            TEXT NOT NULL DEFAULT 'connected',
	status_changed_at BIGINT,
	UNIQUE (org_id, machine_uid)
);
CREATE INDEX endpoints_org_sort ON endpoints (org_id, sort_name, id);

-- A removed endpoint's agent secret: its next check-in is told to
-- uninstall (once), every later call answers 401.
CREATE TABLE endpoint_tombstones (
	secret_hash TEXT PRIMARY KEY,
	org_id      TEXT NOT NULL,
	endpoint_id TEXT NOT NULL,
	removed_at  BIGINT NOT NULL,
	told_at     BIGINT
);

CREATE TABLE endpoint_disks (
	endpoint_id TEXT NOT NULL REFERENCES endpoints(id) ON DELETE CASCADE,
	pos         INTEGER NOT NULL,
	drive       TEXT NOT NULL,
	size_gb     DOUBLE PRECISION,
	free_gb     DOUBLE PRECISION,
	PRIMARY KEY (endpoint_id, pos)
);

-- software_titles is the organization's catalog of application names with
-- the number of installations, so that totals and deep pages of the
-- software list need no scan of every row.
CREATE TABLE software_titles (
	id         BIGSERIAL PRIMARY KEY,
	org_id     TEXT NOT NULL REFERENCES orgs(id) ON DELETE CASCADE,
	name       TEXT NOT NULL,
	name_lower TEXT NOT NULL,
	installs   INTEGER NOT NULL DEFAULT 0,
	UNIQUE (org_id, name)
);
CREATE INDEX software_titles_order ON software_titles (org_id, name_lower, id);

CREATE TABLE endpoint_software (
	endpoint_id    TEXT NOT NULL REFERENCES endpoints(id) ON DELETE CASCADE,
	title_id       BIGINT NOT NULL REFERENCES software_titles(id),
	-- version_key is the version, '' when none was reported.
	version_key    TEXT NOT NULL,
	publisher      TEXT,
	install_date   TEXT,
	installed_for  TEXT,
	install_type   TEXT,
	source_package TEXT,
	PRIMARY KEY (endpoint_id, title_id, version_key)
);
CREATE INDEX endpoint_software_title ON endpoint_software (title_id, endpoint_id, version_key);

-- update_keys is the organization's catalog of missing updates by key, with
-- the number of endpoints missing each; approvals are decided per key.
CREATE TABLE update_keys (
	org_id          TEXT NOT NULL REFERENCES orgs(id) ON DELETE CASCADE,
	key             TEXT NOT NULL,
	title           TEXT NOT NULL,
	kb              TEXT,
	severity        TEXT NOT NULL,
	source          TEXT NOT NULL,
	categories      TEXT NOT NULL DEFAULT '[]',
	winget_id       TEXT,
	latest_version  TEXT,
	reboot_required BOOLEAN NOT NULL DEFAULT FALSE,
	release_date    BIGINT,
	first_seen_at   BIGINT NOT NULL,
	endpoints       INTEGER NOT NULL DEFAULT 0,
	PRIMARY KEY (org_id, key)
);

CREATE TABLE endpoint_updates (
	id                TEXT PRIMARY KEY,
	org_id            TEXT NOT NULL,
	endpoint_id       TEXT NOT NULL REFERENCES endpoints(id) ON DELETE CASCADE,
	key               TEXT NOT NULL,
	title             TEXT NOT NULL,
	kb                TEXT,
	severity          TEXT NOT NULL,
	source            TEXT NOT NULL,
	categories        TEXT NOT NULL DEFAULT '[]',
	winget_id         TEXT,
	package_name      TEXT,
	product_key       TEXT,
	installed_version TEXT,
	latest_version    TEXT,
	reboot_required   BOOLEAN NOT NULL DEFAULT FALSE,
	release_date      BIGINT,
	detected_at       BIGINT NOT NULL,
	UNIQUE (endpoint_id, key)
);
CREATE INDEX endpoint_updates_key ON endpoint_updates (org_id, key, endpoint_id);

CREATE TABLE update_approvals (
	org_id     TEXT NOT NULL REFERENCES orgs(id) ON DELETE CASCADE,
	key        TEXT NOT NULL,
	status     TEXT NOT NULL,
	title      TEXT,
	decided_at BIGINT NOT NULL,
	decided_by TEXT NOT NULL,
	PRIMARY KEY (org_id, key)
);

-- Raw material of the built-in reports: named tables of rows per endpoint,
-- kept as gzip-compressed JSON arrays (they compress about tenfold).
CREATE TABLE endpoint_datasets (
	endpoint_id  TEXT NOT NULL REFERENCES endpoints(id) ON DELETE CASCADE,
	org_id       TEXT NOT NULL,
	name         TEXT NOT NULL,
	rows_gz      BYTEA NOT NULL,
	row_count    INTEGER NOT NULL,
	collected_at BIGINT NOT NULL,
	PRIMARY KEY (endpoint_id, name)
);
CREATE INDEX endpoint_datasets_org_name ON endpoint_datasets (org_id, name);

CREATE TABLE runs (
	id              TEXT PRIMARY KEY,
	org_id          TEXT NOT NULL REFERENCES orgs(id) ON DELETE CASCADE,
	name            TEXT NOT NULL,
	action_type     TEXT NOT NULL,
	status          TEXT NOT NULL,
	payload         TEXT NOT NULL DEFAULT '{}',
	created_at      BIGINT NOT NULL,
	started_at      BIGINT,
	finished_at     BIGINT,
	total           INTEGER NOT NULL DEFAULT 0,
	succeeded       INTEGER NOT NULL DEFAULT 0,
	failed          INTEGER NOT NULL DEFAULT 0,
	open_commands   INTEGER NOT NULL DEFAULT 0,
	created_by      TEXT,
	automation_id   TEXT,
	automation_name TEXT,
	detail          TEXT
);
CREATE INDEX runs_org_created ON runs (org_id, created_at DESC, id);
CREATE INDEX runs_automation ON runs (automation_id, created_at DESC);

-- One command per endpoint of a run. endpoint_id has no foreign key: the
-- history outlives a removed endpoint, whose name is kept here.
CREATE TABLE commands (
	id            TEXT PRIMARY KEY,
	org_id        TEXT NOT NULL,
	run_id        TEXT NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
	endpoint_id   TEXT NOT NULL,
	endpoint_name TEXT NOT NULL,
	type          TEXT NOT NULL,
	payload       TEXT NOT NULL DEFAULT '{}',
	status        TEXT NOT NULL,
	created_at    BIGINT NOT NULL,
	started_at    BIGINT,
	finished_at   BIGINT,
	not_after     BIGINT,
	result        TEXT,
	exit_code     INTEGER
);
CREATE INDEX commands_pending ON commands (endpoint_id, status, created_at);
CREATE INDEX commands_run ON commands (run_id, endpoint_id);
CREATE INDEX commands_status_created ON commands (status, created_at);
