-- endpoint_software is the largest table (about 150 rows an endpoint) and
-- the one every inventory writes most of. Its two foreign keys cost a
-- lookup and a row lock per inserted row (a fifth of PostgreSQL's CPU while
-- a fleet enrolls, issue 22), and neither guards anything the writers do
-- not guarantee already:
--   - title_id: software titles are never deleted, and a title's id is
--     used only once the transaction that made it committed, or within it;
--   - endpoint_id: the inventory writer first updates the endpoint's row
--     (no row: the inventory fails), which holds off the endpoint's
--     deletion until the inventory commits. The deletion's cascade is kept
--     by the statement trigger below: it removes the software of every
--     endpoint a DELETE removed, an organization's cascade included.
-- SQLite keeps both foreign keys: its checks are cheap in-process lookups.
ALTER TABLE endpoint_software DROP CONSTRAINT endpoint_software_endpoint_id_fkey;
ALTER TABLE endpoint_software DROP CONSTRAINT endpoint_software_title_id_fkey;

CREATE FUNCTION endpoint_software_cascade() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
	DELETE FROM endpoint_software es USING removed_endpoints r WHERE es.endpoint_id = r.id;
	RETURN NULL;
END
$$;

CREATE TRIGGER endpoints_software_cascade AFTER DELETE ON endpoints
	REFERENCING OLD TABLE AS removed_endpoints
	FOR EACH STATEMENT EXECUTE FUNCTION endpoint_software_cascade();
