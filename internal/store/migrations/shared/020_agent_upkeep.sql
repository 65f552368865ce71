-- Fresh scans: a "scan now" asked of an endpoint's agent (POST
-- /api/v1/endpoints/{id}/scan, the console, patchctl endpoints scan) and not
-- yet handed to it. The next check-in answers scanNow and clears it; while it
-- is set the endpoint counts as having something pending (presence seeds it).
ALTER TABLE endpoints ADD COLUMN scan_requested_at BIGINT;

-- Agent self-update: per organization, the agent version its endpoints are
-- told to run (the check-in's agentTarget). policy 'latest' follows the
-- release the server publishes for each platform; 'pinned' holds them at
-- version (they update when the published release is that version).
-- Without a row agents are left as they are.
CREATE TABLE agent_update_policy (
	org_id     TEXT PRIMARY KEY REFERENCES orgs(id) ON DELETE CASCADE,
	policy     TEXT NOT NULL CHECK (policy IN ('latest', 'pinned')),
	version    TEXT,
	updated_at BIGINT NOT NULL
);
