-- user_invitations: a user created by invitation sets its own password
-- through a single-use link. token_hash is the SHA-256 of the link's token
-- (the token is shown once, when the invitation is made); the row is
-- deleted when the invitee sets a password (or an administrator sets one,
-- or deletes the user), so a link works once. expires_at in milliseconds.
-- Until then the user has no password (password_hash '').
CREATE TABLE user_invitations (
	user_id    TEXT PRIMARY KEY REFERENCES users(id) ON DELETE CASCADE,
	org_id     TEXT NOT NULL REFERENCES orgs(id) ON DELETE CASCADE,
	token_hash TEXT NOT NULL UNIQUE,
	expires_at BIGINT NOT NULL,
	created_at BIGINT NOT NULL
);
