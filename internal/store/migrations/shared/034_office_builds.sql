-- The Microsoft 365 Apps release history (Click-to-Run builds by update
-- channel and release day, from Microsoft's "Update history for Microsoft
-- 365 Apps"): MSRC's Office fixes name no build, so a Click-to-Run install
-- is matched against the builds released on or after the Patch Tuesday of
-- the CVE's month. Global, like the other feeds. released is the first day
-- the channel got the build (milliseconds, UTC midnight).
CREATE TABLE office_builds (
	build    TEXT NOT NULL,
	channel  TEXT NOT NULL,
	version  TEXT NOT NULL,
	released BIGINT NOT NULL,
	PRIMARY KEY (build, channel)
);
