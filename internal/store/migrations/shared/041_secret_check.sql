-- The secrets this database holds (the own CA's private key, the ACME
-- account and certificate keys, TOTP seeds, OpenID client secrets and PKCE
-- verifiers, webhook secrets) are sealed with a key kept outside it
-- (--secret-key-file or PATCHD_SECRET_KEY; internal/secretbox). secret_check
-- holds one value sealed with the current key, written by the first start:
-- a server given another key finds that it does not open, and refuses to
-- start before it seals anything with a key the others do not hold.
-- key_id is the id of the key that sealed it (a hash prefix, no secret).
CREATE TABLE secret_check (
	id         INTEGER PRIMARY KEY CHECK (id = 1),
	key_id     TEXT NOT NULL,
	sealed     TEXT NOT NULL,
	created_at BIGINT NOT NULL
);
