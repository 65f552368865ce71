-- Ring-staged agent updates (patchd addition): policy 'staged' rolls
-- version out through rings, one endpoint group after another and then the
-- endpoints in none of them; a ring gets the version when the ring before
-- has run it for delay_seconds and success_rate percent of its endpoints
-- run it.
ALTER TABLE agent_update_policy DROP CONSTRAINT agent_update_policy_policy_check;
ALTER TABLE agent_update_policy ADD CONSTRAINT agent_update_policy_policy_check CHECK (policy IN ('latest', 'pinned', 'staged'));
ALTER TABLE agent_update_policy ADD COLUMN delay_seconds BIGINT NOT NULL DEFAULT 0;
ALTER TABLE agent_update_policy ADD COLUMN success_rate INTEGER NOT NULL DEFAULT 0;

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
