-- An endpoint's presence (when it was last seen, its recorded
-- connected/disconnected status) moves to a narrow table of its own (issue
-- 22). A check-in flush wrote last_seen_at into the wide endpoints row:
-- about 600 bytes, five or six to a page, so a flush of a few hundred
-- endpoints dirtied, logged and later checkpointed a page per endpoint;
-- the status sweep read every wide row to find the few that changed. Here
-- a row is about 50 bytes, eighty to a page. The endpoints' other facts
-- stay where they are: a check-in writes them only when they change.
--
-- The columns are dropped, not left behind: a previous version cannot run
-- beside this one (docs/scale-out.md, "Migrations that need every replica
-- stopped"), and a replica left running fails loudly instead of deciding
-- presence from values nobody writes any more.
CREATE TABLE endpoint_presence (
	endpoint_id       TEXT PRIMARY KEY REFERENCES endpoints(id) ON DELETE CASCADE,
	last_seen_at      BIGINT,
	status            TEXT NOT NULL DEFAULT 'connected',
	status_changed_at BIGINT
) WITHOUT ROWID;
INSERT INTO endpoint_presence (endpoint_id, last_seen_at, status, status_changed_at)
	SELECT id, last_seen_at, status, status_changed_at FROM endpoints;
ALTER TABLE endpoints DROP COLUMN last_seen_at;
ALTER TABLE endpoints DROP COLUMN status;
ALTER TABLE endpoints DROP COLUMN status_changed_at;
