-- Each missing update's derived severity where the counters and the
-- compliance deadlines read it (docs/vulnerabilities.md): derived_severity
-- is the higher of the severity the agent reported (endpoint_updates.severity)
-- and the update key's effective severity (update_keys.severity, which
-- counts the CVEs it fixes); kev says the update fixes a CVE in CISA's KEV
-- catalog. The inventory writer sets them with the rows, the vulnerability
-- matcher when an update's severity changes; endpoints.missing_* count
-- derived_severity.
ALTER TABLE endpoint_updates ADD COLUMN derived_severity TEXT NOT NULL DEFAULT 'Unspecified';
ALTER TABLE endpoint_updates ADD COLUMN kev BOOLEAN NOT NULL DEFAULT FALSE;

UPDATE endpoint_updates SET derived_severity = severity;
UPDATE endpoint_updates SET
	kev = COALESCE((SELECT k.kev FROM update_keys k WHERE k.org_id = endpoint_updates.org_id AND k.key = endpoint_updates.key), FALSE),
	derived_severity = COALESCE((SELECT k.severity FROM update_keys k WHERE k.org_id = endpoint_updates.org_id AND k.key = endpoint_updates.key
		AND (CASE k.severity WHEN 'Critical' THEN 4 WHEN 'Important' THEN 3 WHEN 'Moderate' THEN 2 WHEN 'Low' THEN 1 ELSE 0 END) >
			(CASE endpoint_updates.severity WHEN 'Critical' THEN 4 WHEN 'Important' THEN 3 WHEN 'Moderate' THEN 2 WHEN 'Low' THEN 1 ELSE 0 END)),
		derived_severity);

UPDATE endpoints SET
	missing_critical = (SELECT COUNT(*) FROM endpoint_updates u WHERE u.endpoint_id = endpoints.id AND u.derived_severity = 'Critical'),
	missing_important = (SELECT COUNT(*) FROM endpoint_updates u WHERE u.endpoint_id = endpoints.id AND u.derived_severity = 'Important'),
	missing_moderate = (SELECT COUNT(*) FROM endpoint_updates u WHERE u.endpoint_id = endpoints.id AND u.derived_severity = 'Moderate'),
	missing_low = (SELECT COUNT(*) FROM endpoint_updates u WHERE u.endpoint_id = endpoints.id AND u.derived_severity = 'Low'),
	missing_unspecified = (SELECT COUNT(*) FROM endpoint_updates u WHERE u.endpoint_id = endpoints.id
		AND u.derived_severity NOT IN ('Critical', 'Important', 'Moderate', 'Low'));

-- The compliance policy's deadline of an update that fixes a KEV CVE, in
-- days (CISA BOD 22-01); NULL is the default (14).
ALTER TABLE compliance_policies ADD COLUMN kev_days INTEGER;

-- The endpoint's risk score (docs/vulnerabilities.md): the highest risk of
-- the CVEs found on it, 0 without any, and that CVE; the vulnerability
-- matcher keeps them with the update keys' (RefreshUpdateRisk). The fleet is
-- matched again once (matched_version reset) so that they are filled in.
ALTER TABLE endpoints ADD COLUMN risk DOUBLE PRECISION NOT NULL DEFAULT 0;
ALTER TABLE endpoints ADD COLUMN risk_cve TEXT;
UPDATE vuln_state SET num = -1 WHERE name = 'matched_version';
