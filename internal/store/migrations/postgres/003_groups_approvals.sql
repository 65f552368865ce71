-- Endpoint groups (static and dynamic) with their members kept at write
-- time, and the organization's automatic approval policy.
CREATE TABLE endpoint_groups (
	id                    TEXT PRIMARY KEY,
	org_id                TEXT NOT NULL REFERENCES orgs(id) ON DELETE CASCADE,
	name                  TEXT NOT NULL,
	description           TEXT,
	kind                  TEXT NOT NULL,
	is_system             BOOLEAN NOT NULL DEFAULT FALSE,
	builtin               TEXT,
	match_all             BOOLEAN NOT NULL DEFAULT TRUE,
	rules                 TEXT NOT NULL DEFAULT '[]',
	exclude_rules         TEXT NOT NULL DEFAULT '[]',
	offline_alert_minutes INTEGER,
	online_alert          BOOLEAN NOT NULL DEFAULT FALSE,
	members               INTEGER NOT NULL DEFAULT 0,
	created_at            BIGINT NOT NULL,
	updated_at            BIGINT NOT NULL
);
CREATE UNIQUE INDEX endpoint_groups_org_name ON endpoint_groups (org_id, lower(name));
CREATE UNIQUE INDEX endpoint_groups_org_builtin ON endpoint_groups (org_id, builtin) WHERE builtin IS NOT NULL;
CREATE INDEX endpoint_groups_org_kind ON endpoint_groups (org_id, kind);

-- Members of static groups and of dynamic groups (built-in groups are
-- computed when read). endpoint_groups.members counts them.
CREATE TABLE group_members (
	group_id    TEXT NOT NULL REFERENCES endpoint_groups(id) ON DELETE CASCADE,
	endpoint_id TEXT NOT NULL REFERENCES endpoints(id) ON DELETE CASCADE,
	PRIMARY KEY (group_id, endpoint_id)
);
CREATE INDEX group_members_endpoint ON group_members (endpoint_id);

-- "New endpoints" counts endpoints enrolled within the last 7 days.
CREATE INDEX endpoints_org_enrolled ON endpoints (org_id, enrolled_at);

-- Automatic approval: a key first seen in the organization whose severity
-- and source match a rule is approved, at once or delay_days later.
CREATE TABLE approval_policies (
	id         TEXT PRIMARY KEY,
	org_id     TEXT NOT NULL REFERENCES orgs(id) ON DELETE CASCADE,
	severity   TEXT NOT NULL,
	source     TEXT NOT NULL,
	delay_days INTEGER NOT NULL DEFAULT 0,
	action     TEXT NOT NULL DEFAULT 'APPROVE',
	created_at BIGINT NOT NULL,
	UNIQUE (org_id, severity, source)
);

CREATE TABLE approval_settings (
	org_id        TEXT PRIMARY KEY REFERENCES orgs(id) ON DELETE CASCADE,
	decline_older BOOLEAN NOT NULL DEFAULT FALSE
);

-- When a delayed automatic approval of the key falls due (NULL: none).
ALTER TABLE update_keys ADD COLUMN auto_due_at BIGINT;
CREATE INDEX update_keys_auto_due ON update_keys (auto_due_at) WHERE auto_due_at IS NOT NULL;
CREATE INDEX update_keys_lower ON update_keys (org_id, lower(key));

-- Organizations created before this step get their built-in groups.
INSERT INTO endpoint_groups (id, org_id, name, kind, is_system, builtin, created_at, updated_at)
	SELECT md5(random()::text || id), id, 'All endpoints', 'DYNAMIC', TRUE, 'all', created_at, created_at FROM orgs;
INSERT INTO endpoint_groups (id, org_id, name, kind, is_system, builtin, created_at, updated_at)
	SELECT md5(random()::text || id), id, 'New endpoints', 'DYNAMIC', TRUE, 'new', created_at, created_at FROM orgs;

-- Approvals stored under another spelling are found case-insensitively.
CREATE INDEX update_approvals_lower ON update_approvals (org_id, lower(key));
