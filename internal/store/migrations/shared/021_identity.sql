-- Identity: the client address in the Audit Trail, sessions a user can list
-- and revoke, TOTP second factors with recovery codes, the organization's
-- "require a second factor" setting, and password resets.

-- address is the client address of a console or API write (empty for the
-- command line and the server's own schedule).
ALTER TABLE audit_log ADD COLUMN address TEXT NOT NULL DEFAULT '';

-- A session records the browser that opened it, and its stage: '' is
-- signed in; 'mfa' waits for the second factor, 'enroll' must set one up
-- and 'password' must choose a new password before any other page opens.
-- pending_totp holds a TOTP secret being enrolled until it is confirmed.
ALTER TABLE console_sessions ADD COLUMN user_agent TEXT NOT NULL DEFAULT '';
ALTER TABLE console_sessions ADD COLUMN stage TEXT NOT NULL DEFAULT '';
ALTER TABLE console_sessions ADD COLUMN pending_totp TEXT NOT NULL DEFAULT '';

-- totp_secret is the user's confirmed TOTP secret (base32; empty: none);
-- totp_last_step is the time step of the last code accepted, so a code is
-- never accepted twice. must_change_password sends the user to choose a
-- new password at the next sign-in (an administrator reset it).
ALTER TABLE users ADD COLUMN totp_secret TEXT NOT NULL DEFAULT '';
ALTER TABLE users ADD COLUMN totp_last_step BIGINT NOT NULL DEFAULT 0;
ALTER TABLE users ADD COLUMN must_change_password BOOLEAN NOT NULL DEFAULT FALSE;

-- Single-use recovery codes, stored as SHA-256 hashes; a used code is
-- deleted.
CREATE TABLE user_recovery_codes (
	user_id    TEXT NOT NULL REFERENCES users(id) ON DELETE CASCADE,
	code_hash  TEXT NOT NULL,
	created_at BIGINT NOT NULL,
	PRIMARY KEY (user_id, code_hash)
);

-- require_mfa: password users without a second factor are sent to set one
-- up after their password.
ALTER TABLE orgs ADD COLUMN require_mfa BOOLEAN NOT NULL DEFAULT FALSE;
