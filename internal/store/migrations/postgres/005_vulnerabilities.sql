-- Vulnerabilities (issue #6). The feed tables are global: the NVD, the CISA
-- KEV catalog and OSV advisories are the same for every organization. The
-- results are per organization: endpoint_vulns (one row per endpoint × CVE ×
-- affected product) and its catalog org_vulns (one row per CVE found in the
-- organization, with the number of endpoints), which the API pages.

-- vuln_cves holds one NVD record; rules is its vulnerable CPE matches as a
-- JSON array (the matcher's index is built from it in memory).
CREATE TABLE vuln_cves (
	id           TEXT PRIMARY KEY,
	published    BIGINT,
	modified     BIGINT,
	description  TEXT,
	cvss         DOUBLE PRECISION,
	cvss_version TEXT,
	severity     TEXT,
	vector       TEXT,
	rules        TEXT NOT NULL DEFAULT '[]'
);

CREATE TABLE vuln_kev (
	cve_id         TEXT PRIMARY KEY,
	date_added     BIGINT,
	due_date       BIGINT,
	ransomware     BOOLEAN NOT NULL DEFAULT FALSE,
	vendor_project TEXT,
	product        TEXT,
	name           TEXT,
	description    TEXT
);

-- vuln_osv holds one affected package of an OSV record; ranges, versions
-- and cves are JSON arrays.
CREATE TABLE vuln_osv (
	id        TEXT NOT NULL,
	ecosystem TEXT NOT NULL,
	package   TEXT NOT NULL,
	cves      TEXT NOT NULL DEFAULT '[]',
	summary   TEXT,
	ranges    TEXT NOT NULL DEFAULT '[]',
	versions  TEXT NOT NULL DEFAULT '[]',
	severity  TEXT,
	published BIGINT,
	modified  BIGINT,
	withdrawn BIGINT,
	PRIMARY KEY (id, ecosystem, package)
);

-- vuln_state holds counters and leases by name: 'feed_version' (bumped by
-- every import), 'matched_version' (the feed version the stored results
-- reflect), 'nvd_synced' (the lastModified time NVD was synced up to, Unix
-- ms), and the leases 'match' and 'sync' (one replica at a time:
-- claimed with UPDATE … WHERE lease_until < now).
CREATE TABLE vuln_state (
	name        TEXT PRIMARY KEY,
	num         BIGINT NOT NULL DEFAULT 0,
	holder      TEXT,
	lease_until BIGINT NOT NULL DEFAULT 0
);
INSERT INTO vuln_state (name) VALUES ('feed_version'), ('matched_version'), ('nvd_synced'), ('match'), ('sync');

-- vuln_dirty lists the endpoints whose inventory changed since their
-- results were computed; the matching worker drains it. gen grows with
-- every mark, so a row marked again while the worker matched is kept.
CREATE TABLE vuln_dirty (
	endpoint_id TEXT PRIMARY KEY,
	org_id      TEXT NOT NULL,
	gen         BIGINT NOT NULL DEFAULT 0,
	marked_at   BIGINT NOT NULL
);

CREATE TABLE endpoint_vulns (
	org_id        TEXT NOT NULL,
	endpoint_id   TEXT NOT NULL REFERENCES endpoints(id) ON DELETE CASCADE,
	cve_id        TEXT NOT NULL,
	software      TEXT NOT NULL,
	version       TEXT NOT NULL,
	fixed_in      TEXT,
	source        TEXT NOT NULL,
	first_seen_at BIGINT NOT NULL,
	PRIMARY KEY (endpoint_id, cve_id, software)
);
CREATE INDEX endpoint_vulns_cve ON endpoint_vulns (org_id, cve_id, endpoint_id);

-- org_vulns is the organization's catalog of CVEs found on its fleet. A row
-- stays when the count falls to zero so that first_detected_at (the start
-- of the remediation period) is not reset by an uninstall and reinstall.
CREATE TABLE org_vulns (
	org_id            TEXT NOT NULL REFERENCES orgs(id) ON DELETE CASCADE,
	cve_id            TEXT NOT NULL,
	endpoints_count   INTEGER NOT NULL DEFAULT 0,
	first_detected_at BIGINT NOT NULL,
	last_detected_at  BIGINT NOT NULL,
	PRIMARY KEY (org_id, cve_id)
);
CREATE INDEX org_vulns_present ON org_vulns (org_id, endpoints_count);

-- vuln_exceptions records an accepted risk or a compensating control for a
-- CVE in an organization, with an optional expiry.
CREATE TABLE vuln_exceptions (
	id         TEXT PRIMARY KEY,
	org_id     TEXT NOT NULL REFERENCES orgs(id) ON DELETE CASCADE,
	cve_id     TEXT NOT NULL,
	kind       TEXT NOT NULL,
	reason     TEXT NOT NULL,
	expires_at BIGINT,
	created_by TEXT NOT NULL,
	created_at BIGINT NOT NULL,
	UNIQUE (org_id, cve_id)
);

-- vuln_policies holds an organization's remediation periods in days; an
-- organization without a row uses 15 / 30 / 90 / 180.
CREATE TABLE vuln_policies (
	org_id        TEXT PRIMARY KEY REFERENCES orgs(id) ON DELETE CASCADE,
	critical_days INTEGER NOT NULL,
	high_days     INTEGER NOT NULL,
	medium_days   INTEGER NOT NULL,
	low_days      INTEGER NOT NULL
);
