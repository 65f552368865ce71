-- The software list by title (GET /api/v1/software/titles, a patchd
-- addition): each title's number of endpoints (hosts: an endpoint with two
-- versions of a title counts once, where installs counts twice), its
-- publisher as first reported, and the number of endpoints of each of its
-- versions, kept as counters by the inventory writer (see counts) so that
-- a page of titles costs a walk of an index, not a scan of every
-- installation.
ALTER TABLE software_titles ADD COLUMN hosts INTEGER NOT NULL DEFAULT 0;
ALTER TABLE software_titles ADD COLUMN publisher TEXT;

CREATE TABLE software_versions (
	title_id    BIGINT NOT NULL REFERENCES software_titles(id) ON DELETE CASCADE,
	version_key TEXT NOT NULL,
	hosts       INTEGER NOT NULL DEFAULT 0,
	PRIMARY KEY (title_id, version_key)
);

UPDATE software_titles SET
	hosts = (SELECT COUNT(DISTINCT es.endpoint_id) FROM endpoint_software es WHERE es.title_id = software_titles.id),
	publisher = (SELECT MIN(es.publisher) FROM endpoint_software es WHERE es.title_id = software_titles.id AND es.publisher <> '');

INSERT INTO software_versions (title_id, version_key, hosts)
	SELECT title_id, version_key, COUNT(*) FROM endpoint_software GROUP BY title_id, version_key;

-- A title's most common versions first (the list shows the first ones).
CREATE INDEX software_versions_hosts ON software_versions (title_id, hosts DESC, version_key);

-- The list's default order, most endpoints first.
CREATE INDEX software_titles_hosts ON software_titles (org_id, hosts DESC, id);
