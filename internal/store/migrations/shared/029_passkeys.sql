-- Passkeys (WebAuthn credentials): a second factor after the password,
-- beside or instead of the TOTP app.
--
-- user_passkeys: one row per credential a user registered. credential_id
-- and public_key are the authenticator's credential id and COSE public key,
-- base64url without padding (the key is public: it only checks signatures).
-- sign_count is the authenticator's signature counter of the last
-- assertion (0 for authenticators that keep none, as synced passkeys do);
-- flags the authenticator data flags byte (backup eligibility must never
-- change); aaguid names the authenticator model ('' when it sent none);
-- transports a comma-separated list (usb, nfc, ble, internal, hybrid).
-- name is the user's label. last_used_at is 0 until the first sign-in.
CREATE TABLE user_passkeys (
	id                 TEXT PRIMARY KEY,
	org_id             TEXT NOT NULL REFERENCES orgs(id) ON DELETE CASCADE,
	user_id            TEXT NOT NULL REFERENCES users(id) ON DELETE CASCADE,
	credential_id      TEXT NOT NULL UNIQUE,
	public_key         TEXT NOT NULL,
	sign_count         BIGINT NOT NULL DEFAULT 0,
	flags              INTEGER NOT NULL DEFAULT 0,
	aaguid             TEXT NOT NULL DEFAULT '',
	transports         TEXT NOT NULL DEFAULT '',
	attestation_type   TEXT NOT NULL DEFAULT '',
	attestation_format TEXT NOT NULL DEFAULT '',
	name               TEXT NOT NULL,
	created_at         BIGINT NOT NULL,
	last_used_at       BIGINT NOT NULL DEFAULT 0
);
CREATE INDEX user_passkeys_user ON user_passkeys (user_id);

-- pending_webauthn holds the ceremony under way on a session (a passkey
-- being registered, or a sign-in's assertion): the challenge and what the
-- server expects back, as JSON; it is taken (emptied) when the answer comes,
-- so that a challenge is used once.
ALTER TABLE console_sessions ADD COLUMN pending_webauthn TEXT NOT NULL DEFAULT '';

-- passkey_logins: a passwordless sign-in under way ("Sign in with a
-- passkey" on the sign-in page, before there is a session): the ceremony
-- as JSON, keyed by the SHA-256 of the sign-in form's cookie, so that only
-- the browser that started it can finish it. A row is deleted when the
-- answer takes it (single use) or once expired.
CREATE TABLE passkey_logins (
	binding_hash TEXT PRIMARY KEY,
	data         TEXT NOT NULL,
	expires_at   BIGINT NOT NULL
);
CREATE INDEX passkey_logins_expires ON passkey_logins (expires_at);
