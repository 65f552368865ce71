-- Instance operators and the instance's own audit trail.
--
-- An instance operator is a console user who may change what every
-- organization shares: today the vulnerability feeds (vuln_cves, vuln_kev,
-- vuln_osv), which decide every organization's vulnerability results. Being
-- an operator is independent of the user's role in its organization. The
-- first console user of an instance (the first-run setup) is one; the CLI
-- (patchd admin user operator grant|revoke) grants and revokes it.
ALTER TABLE users ADD COLUMN instance_operator BOOLEAN NOT NULL DEFAULT FALSE;

-- instance_events is the Audit Trail of instance-level changes (feed
-- imports and syncs, operator grants): who, from which address, what
-- changed. It belongs to no organization; operators read it.
CREATE TABLE instance_events (
	id          TEXT PRIMARY KEY,
	at          BIGINT NOT NULL,
	actor       TEXT NOT NULL,
	address     TEXT NOT NULL DEFAULT '',
	action      TEXT NOT NULL,
	target_type TEXT NOT NULL,
	target_id   TEXT,
	summary     TEXT NOT NULL DEFAULT '{}'
);
CREATE INDEX instance_events_at ON instance_events (at DESC, id DESC);
CREATE INDEX instance_events_action ON instance_events (action, at DESC);
