-- Microsoft's security update data (MSRC CVRF monthly documents): the
-- products of the documents' product trees, the CVEs with Microsoft's score
-- and exploitation flags, and per CVE and product the KB that fixes it and,
-- for Windows, the build that carries the fix. Global, like the other feeds.
CREATE TABLE msrc_products (
	id   TEXT PRIMARY KEY,
	name TEXT NOT NULL
);

CREATE TABLE msrc_cves (
	cve_id    TEXT PRIMARY KEY,
	title     TEXT,
	cvss      DOUBLE PRECISION,
	vector    TEXT,
	severity  TEXT,
	exploited BOOLEAN NOT NULL DEFAULT FALSE,
	disclosed BOOLEAN NOT NULL DEFAULT FALSE,
	release   TEXT NOT NULL,
	released  BIGINT
);

-- msrc_fixes: one vendor fix of a CVE for a product. fixed_build is '' when
-- Microsoft gives no build (then the fix cannot be matched by build).
CREATE TABLE msrc_fixes (
	cve_id      TEXT NOT NULL,
	product_id  TEXT NOT NULL,
	kb          TEXT NOT NULL,
	fixed_build TEXT NOT NULL DEFAULT '',
	sub_type    TEXT NOT NULL DEFAULT '',
	release     TEXT NOT NULL,
	PRIMARY KEY (cve_id, product_id, kb)
);
CREATE INDEX msrc_fixes_product ON msrc_fixes (product_id);

-- Windows' installation type as the agent reports it ("Client", "Server",
-- "Server Core"): Server Core hosts match the "(Server Core installation)"
-- MSRC products.
ALTER TABLE endpoints ADD COLUMN os_installation_type TEXT;

-- 'msrc_synced': the last month of MSRC documents synced (year*100+month).
INSERT INTO vuln_state (name) VALUES ('msrc_synced');
