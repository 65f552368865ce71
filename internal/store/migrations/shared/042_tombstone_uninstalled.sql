-- When a removed endpoint's agent reported that it uninstalled itself
-- (POST /agent/v1/uninstalled, once, after the check-in that told it).
ALTER TABLE endpoint_tombstones ADD COLUMN uninstalled_at BIGINT;
