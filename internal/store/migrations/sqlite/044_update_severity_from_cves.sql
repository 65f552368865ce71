-- Severity from what an update fixes (docs/vulnerabilities.md).
--
-- update_keys.severity becomes the update's effective severity: for an
-- application or Linux package update (no KB) that fixes CVEs found on the
-- fleet, the highest severity of those CVEs (CVSS base score: 9.0-10
-- Critical, 7.0-8.9 Important, 4.0-6.9 Moderate, 0.1-3.9 Low; a CVE in CISA's
-- KEV catalog counts as Critical), never below the vendor's. vendor_severity
-- keeps what the agent reported (MSRC, the distribution's advisory, or
-- Unspecified); cve_count, kev, max_cvss and top_cve say why (the CVEs the
-- update fixes on the endpoints missing it, whether one is in KEV, the highest
-- CVSS base score, and the CVE that weighs most). The vulnerability matcher
-- keeps them current.
ALTER TABLE update_keys ADD COLUMN vendor_severity TEXT;
ALTER TABLE update_keys ADD COLUMN cve_count INTEGER NOT NULL DEFAULT 0;
ALTER TABLE update_keys ADD COLUMN kev BOOLEAN NOT NULL DEFAULT FALSE;
ALTER TABLE update_keys ADD COLUMN max_cvss REAL;
ALTER TABLE update_keys ADD COLUMN top_cve TEXT;
UPDATE update_keys SET vendor_severity = severity;
