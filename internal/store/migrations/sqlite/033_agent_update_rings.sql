-- Ring-staged agent updates (patchd addition): policy 'staged' rolls
-- version out through rings, one endpoint group after another and then the
-- endpoints in none of them; a ring gets the version when the ring before
-- has run it for delay_seconds and success_rate percent of its endpoints
-- run it. SQLite cannot change a CHECK constraint: the table is rebuilt.
CREATE TABLE agent_update_policy_new (
	org_id       TEXT PRIMARY KEY REFERENCES orgs(id) ON DELETE CASCADE,
	policy       TEXT NOT NULL CHECK (policy IN ('latest', 'pinned', 'staged')),
	version      TEXT,
	updated_at   BIGINT NOT NULL,
	delay_seconds BIGINT NOT NULL DEFAULT 0,
	success_rate INTEGER NOT NULL DEFAULT 0
);
INSERT INTO agent_update_policy_new (org_id, policy, version, updated_at) SELECT org_id, policy, version, updated_at FROM agent_update_policy;
DROP TABLE agent_update_policy;
ALTER TABLE agent_update_policy_new RENAME TO agent_update_policy;

-- The rings of a staged policy in order (position); group_id NULL is the
-- last ring, the endpoints in none of the groups before. A ring whose group
-- is deleted leaves the rollout. started_at: since when the ring gets the
-- version; done_at: when it passed its gate; halted_at: when its failures
-- made the success rate unreachable (the rollout stops there until the
-- policy is set again).
CREATE TABLE agent_update_rings (
	org_id     TEXT NOT NULL REFERENCES orgs(id) ON DELETE CASCADE,
	position   INTEGER NOT NULL,
	group_id   TEXT REFERENCES endpoint_groups(id) ON DELETE CASCADE,
	started_at BIGINT,
	done_at    BIGINT,
	halted_at  BIGINT,
	PRIMARY KEY (org_id, position)
);
