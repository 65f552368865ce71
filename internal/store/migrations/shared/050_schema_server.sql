-- The patchd version that last applied migrations to this database, and the
-- schema version it left. A server that finds migrations it does not know
-- refuses to start and names both versions (migrate.go, checkKnown).
CREATE TABLE schema_server (
	id INTEGER PRIMARY KEY CHECK (id = 1),
	server_version TEXT NOT NULL,
	schema_version INTEGER NOT NULL,
	migrated_at BIGINT NOT NULL
);
