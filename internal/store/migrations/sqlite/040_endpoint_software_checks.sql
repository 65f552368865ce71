-- endpoint_software without its foreign keys, as on PostgreSQL since
-- migration 036 (see its comment for why neither guards anything the
-- writers do not guarantee already). On SQLite they were kept as cheap
-- in-process lookups; measured, they were not: two parent lookups for each
-- of the ~150 rows an inventory inserts, about 7 % of what an inventory
-- costs the single writer (BenchmarkIngest, issue 22). A trigger keeps the
-- removal of a deleted endpoint's software, an organization's cascade
-- included (SQLite runs a cascade's deletions as statements, which fire
-- the triggers of their table).
CREATE TABLE endpoint_software_040 (
	endpoint_id    TEXT NOT NULL,
	title_id       BIGINT NOT NULL,
	-- version_key is the version, '' when none was reported.
	version_key    TEXT NOT NULL,
	publisher      TEXT,
	install_date   TEXT,
	installed_for  TEXT,
	install_type   TEXT,
	source_package TEXT,
	PRIMARY KEY (endpoint_id, title_id, version_key)
) WITHOUT ROWID;
INSERT INTO endpoint_software_040 (endpoint_id, title_id, version_key, publisher, install_date, installed_for, install_type, source_package)
	SELECT endpoint_id, title_id, version_key, publisher, install_date, installed_for, install_type, source_package FROM endpoint_software;
DROP TABLE endpoint_software;
ALTER TABLE endpoint_software_040 RENAME TO endpoint_software;
CREATE INDEX endpoint_software_title ON endpoint_software
	(title_id, endpoint_id, version_key, publisher, install_date, installed_for, install_type);
CREATE TRIGGER endpoints_software_cascade AFTER DELETE ON endpoints BEGIN
	DELETE FROM endpoint_software WHERE endpoint_id = OLD.id;
END;
