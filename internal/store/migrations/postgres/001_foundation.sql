-- Organizations, roles, API credentials and their tokens, console users,
-- enrollment tokens, the Audit Trail, and the failed-secret log.
CREATE TABLE orgs (
	id         TEXT PRIMARY KEY,
	name       TEXT NOT NULL UNIQUE,
	timezone   TEXT NOT NULL DEFAULT 'UTC',
	created_at BIGINT NOT NULL
);

CREATE TABLE roles (
	id          TEXT PRIMARY KEY,
	org_id      TEXT NOT NULL REFERENCES orgs(id) ON DELETE CASCADE,
	name        TEXT NOT NULL,
	permissions TEXT NOT NULL,
	builtin     BOOLEAN NOT NULL DEFAULT FALSE,
	created_at  BIGINT NOT NULL,
	UNIQUE (org_id, name)
);

CREATE TABLE credentials (
	id           TEXT PRIMARY KEY,
	org_id       TEXT NOT NULL REFERENCES orgs(id) ON DELETE CASCADE,
	name         TEXT NOT NULL,
	client_id    TEXT NOT NULL UNIQUE,
	secret_hash  TEXT NOT NULL,
	role_id      TEXT NOT NULL REFERENCES roles(id),
	disabled     BOOLEAN NOT NULL DEFAULT FALSE,
	created_at   BIGINT NOT NULL,
	created_by   TEXT,
	UNIQUE (org_id, name)
);

CREATE TABLE access_tokens (
	token_hash    TEXT PRIMARY KEY,
	credential_id TEXT NOT NULL REFERENCES credentials(id) ON DELETE CASCADE,
	org_id        TEXT NOT NULL REFERENCES orgs(id) ON DELETE CASCADE,
	expires_at    BIGINT NOT NULL,
	created_at    BIGINT NOT NULL
);
CREATE INDEX access_tokens_expiry ON access_tokens (expires_at);
CREATE INDEX access_tokens_credential ON access_tokens (credential_id);

-- auth_changes tells every replica which credentials or roles changed, so
-- that cached bearer tokens are dropped within seconds.
CREATE TABLE auth_changes (
	seq           BIGSERIAL PRIMARY KEY,
	credential_id TEXT,
	role_id       TEXT,
	at            BIGINT NOT NULL
);
CREATE INDEX auth_changes_at ON auth_changes (at);

CREATE TABLE token_failures (
	seq BIGSERIAL PRIMARY KEY,
	key TEXT NOT NULL,
	at  BIGINT NOT NULL
);
CREATE INDEX token_failures_key_at ON token_failures (key, at);

CREATE TABLE enroll_tokens (
	id         TEXT PRIMARY KEY,
	org_id     TEXT NOT NULL REFERENCES orgs(id) ON DELETE CASCADE,
	token_hash TEXT NOT NULL UNIQUE,
	expires_at BIGINT,
	revoked    BOOLEAN NOT NULL DEFAULT FALSE,
	uses       INTEGER NOT NULL DEFAULT 0,
	created_at BIGINT NOT NULL,
	created_by TEXT
);

CREATE TABLE users (
	id            TEXT PRIMARY KEY,
	org_id        TEXT NOT NULL REFERENCES orgs(id) ON DELETE CASCADE,
	email         TEXT NOT NULL,
	password_hash TEXT NOT NULL,
	role_id       TEXT NOT NULL REFERENCES roles(id),
	disabled      BOOLEAN NOT NULL DEFAULT FALSE,
	created_at    BIGINT NOT NULL,
	UNIQUE (org_id, email)
);

CREATE TABLE audit_log (
	id          TEXT PRIMARY KEY,
	org_id      TEXT NOT NULL REFERENCES orgs(id) ON DELETE CASCADE,
	at          BIGINT NOT NULL,
	actor       TEXT NOT NULL,
	action      TEXT NOT NULL,
	target_type TEXT NOT NULL,
	target_id   TEXT,
	summary     TEXT NOT NULL DEFAULT '{}'
);
CREATE INDEX audit_log_org_at ON audit_log (org_id, at DESC);
