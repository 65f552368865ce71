-- The server's own TLS identity, shared by every replica on this database.
-- server_ca holds the one certificate authority patchd makes for itself when
-- no --tls-cert is given (id is always 1: the first replica to insert it
-- wins, the others read it). Its private key is here in PEM: whoever reads
-- this database can impersonate the server to its agents, as whoever reads
-- it can already run code on them.
CREATE TABLE server_ca (
	id         INTEGER PRIMARY KEY CHECK (id = 1),
	cert_pem   TEXT NOT NULL,
	key_pem    TEXT NOT NULL,
	sha256     TEXT NOT NULL,
	created_at BIGINT NOT NULL
);
-- server_tls is a small key/value store: the pin the enrollment tokens carry
-- ('pin', written by the serving replica) and the ACME account and
-- certificates ('acme/<name>', the autocert cache).
CREATE TABLE server_tls (
	name       TEXT PRIMARY KEY,
	data       BYTEA NOT NULL,
	updated_at BIGINT NOT NULL
);
-- An agent enrolled with --insecure-http talks to the server over plain HTTP.
ALTER TABLE endpoints ADD COLUMN insecure_channel BOOLEAN NOT NULL DEFAULT FALSE;
