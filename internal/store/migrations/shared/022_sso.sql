-- OpenID Connect sign-in, one provider per organization.
--
-- sso_configs: the organization's provider. client_secret is kept in clear,
-- as the alert webhook secrets are: patchd sends it to the provider's token
-- endpoint, so it must read it back, and a key beside the database would
-- protect it only from readers who cannot also read that key. It never
-- leaves the store except for that exchange (the console and the command
-- line answer hasClientSecret). allowed_domains, scopes and role_map are
-- JSON arrays; role_map holds {"value", "roleId"} pairs tried in order.
CREATE TABLE sso_configs (
	org_id          TEXT PRIMARY KEY REFERENCES orgs(id) ON DELETE CASCADE,
	provider_name   TEXT NOT NULL,
	issuer          TEXT NOT NULL,
	client_id       TEXT NOT NULL,
	client_secret   TEXT NOT NULL,
	allowed_domains TEXT NOT NULL DEFAULT '[]',
	scopes          TEXT NOT NULL DEFAULT '[]',
	role_claim      TEXT NOT NULL DEFAULT '',
	role_map        TEXT NOT NULL DEFAULT '[]',
	default_role_id TEXT REFERENCES roles(id) ON DELETE SET NULL,
	just_in_time    BOOLEAN NOT NULL DEFAULT FALSE,
	enabled         BOOLEAN NOT NULL DEFAULT TRUE,
	updated_by      TEXT NOT NULL,
	updated_at      BIGINT NOT NULL
);

-- sso_logins: a sign-in under way, from the redirect to the provider to the
-- callback. state_hash is the SHA-256 of the state parameter; binding_hash
-- the SHA-256 of the value of the short-lived cookie the starting browser
-- got, so that only that browser can finish it. A row is deleted when the
-- callback takes it (single use) or once expired. throttle_key and
-- throttle_start name the starting address's reservation in auth_throttle,
-- given back when the sign-in succeeds: an address may have only so many
-- unfinished sign-ins at a time.
CREATE TABLE sso_logins (
	state_hash    TEXT PRIMARY KEY,
	binding_hash  TEXT NOT NULL,
	org_id        TEXT NOT NULL REFERENCES orgs(id) ON DELETE CASCADE,
	nonce         TEXT NOT NULL,
	pkce_verifier TEXT NOT NULL,
	next_path     TEXT NOT NULL,
	expires_at    BIGINT NOT NULL,
	throttle_key   TEXT NOT NULL DEFAULT '',
	throttle_start BIGINT NOT NULL DEFAULT 0
);
CREATE INDEX sso_logins_expires ON sso_logins (expires_at);

-- sso_identities links a provider's account (issuer and subject, which the
-- provider never reuses) to a console user, so that a later change of the
-- e-mail address at the provider still signs in the same user.
CREATE TABLE sso_identities (
	org_id     TEXT NOT NULL REFERENCES orgs(id) ON DELETE CASCADE,
	issuer     TEXT NOT NULL,
	subject    TEXT NOT NULL,
	user_id    TEXT NOT NULL REFERENCES users(id) ON DELETE CASCADE,
	created_at BIGINT NOT NULL,
	PRIMARY KEY (org_id, issuer, subject)
);
CREATE INDEX sso_identities_user ON sso_identities (user_id);
