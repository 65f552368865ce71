-- The organization's compliance policy: how many days an update of each
-- severity may stay missing on an endpoint before the endpoint is out of
-- compliance (updates.CompliancePolicy; the defaults when no row).
CREATE TABLE compliance_policies (
	org_id           TEXT PRIMARY KEY REFERENCES orgs(id) ON DELETE CASCADE,
	critical_days    INTEGER NOT NULL,
	important_days   INTEGER NOT NULL,
	moderate_days    INTEGER NOT NULL,
	low_days         INTEGER NOT NULL,
	unspecified_days INTEGER NOT NULL
);
