-- Console sign-in sessions. The cookie carries a random session id; only its
-- SHA-256 is stored, so a copy of the database opens no session. Each
-- session has its own CSRF token, checked on every console form.
CREATE TABLE console_sessions (
	id_hash      TEXT PRIMARY KEY,
	user_id      TEXT NOT NULL REFERENCES users(id) ON DELETE CASCADE,
	org_id       TEXT NOT NULL REFERENCES orgs(id) ON DELETE CASCADE,
	csrf_token   TEXT NOT NULL,
	created_at   BIGINT NOT NULL,
	last_seen_at BIGINT NOT NULL,
	ip           TEXT NOT NULL DEFAULT ''
);
CREATE INDEX console_sessions_user ON console_sessions (user_id);
CREATE INDEX console_sessions_seen ON console_sessions (last_seen_at);
