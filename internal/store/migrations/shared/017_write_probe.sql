-- write_probe holds the one row /readyz writes to check that the database
-- takes writes (a full disk, a read-only file or a refused transaction fail
-- every write while reads and pings still succeed). Replicas share the row:
-- the write is the check, its value is only the time of the last one.
CREATE TABLE write_probe (
	id INTEGER PRIMARY KEY CHECK (id = 1),
	at BIGINT NOT NULL
);
INSERT INTO write_probe (id, at) VALUES (1, 0);
