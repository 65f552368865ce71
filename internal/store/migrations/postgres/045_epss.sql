-- FIRST's Exploit Prediction Scoring System (EPSS), a global feed beside the
-- KEV catalog: one row per CVE, the probability (0-1) that it is exploited
-- in the next 30 days and its percentile, from the daily CSV
-- (epss_scores-YYYY-MM-DD.csv.gz). model_version and score_date are the
-- file's comment line ("#model_version:v2025.03.14,score_date:…").
CREATE TABLE vuln_epss (
	cve_id        TEXT PRIMARY KEY,
	epss          DOUBLE PRECISION NOT NULL,
	percentile    DOUBLE PRECISION NOT NULL,
	model_version TEXT NOT NULL DEFAULT '',
	score_date    BIGINT
);

-- update_keys.max_epss is the highest EPSS of the CVEs the update fixes;
-- risk is the update's risk score (the highest risk of those CVEs, 0-100,
-- docs/vulnerabilities.md), 0 when it fixes none known.
ALTER TABLE update_keys ADD COLUMN max_epss DOUBLE PRECISION;
ALTER TABLE update_keys ADD COLUMN risk DOUBLE PRECISION NOT NULL DEFAULT 0;
