-- Agent self-update failures: the last update an endpoint's agent reported
-- as failed or rolled back (the check-in's updateFailure, a patchd
-- addition): the release version it tried, why, and when. Shown by GET
-- /api/v1/agent-versions and raising AGENT_UPDATE_FAILED.
ALTER TABLE endpoints ADD COLUMN agent_update_failed_version TEXT;
ALTER TABLE endpoints ADD COLUMN agent_update_failed_reason TEXT;
ALTER TABLE endpoints ADD COLUMN agent_update_failed_at BIGINT;
CREATE INDEX endpoints_agent_update_failed ON endpoints (org_id, agent_update_failed_at);
