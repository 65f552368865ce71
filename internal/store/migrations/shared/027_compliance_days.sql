-- The compliance history of each organization: one row per UTC day, the
-- fleet's state as last recorded that day (the server records every
-- organization's current state every few minutes and keeps 400 days).
-- Read by GET /api/v1/compliance/history, the compliance-history report
-- and the console's dashboard trend (patchd additions).
CREATE TABLE compliance_days (
	org_id           TEXT NOT NULL REFERENCES orgs(id) ON DELETE CASCADE,
	day              TEXT NOT NULL,
	endpoints        INTEGER NOT NULL,
	fully_patched    INTEGER NOT NULL,
	missing_critical INTEGER NOT NULL,
	missing_other    INTEGER NOT NULL,
	critical_cves    INTEGER NOT NULL,
	overdue_cves     INTEGER NOT NULL,
	recorded_at      BIGINT NOT NULL,
	PRIMARY KEY (org_id, day)
);
