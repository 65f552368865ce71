-- Single sign-on linking rules.
--
-- sso_configs.provider_verifies_email: the organization says its provider
-- verifies every address it gives, so an ID token without email_verified
-- counts as verified (Entra ID sends no such claim). Without it a missing
-- claim means unverified, as providers built on zitadel/oidc leave out a
-- false one.
ALTER TABLE sso_configs ADD COLUMN provider_verifies_email BOOLEAN NOT NULL DEFAULT FALSE;

-- users.operator_sso: an instance operator signs in through single sign-on
-- only when this is set, by an instance-level action recorded in the
-- instance's Audit Trail; it is cleared whenever the operator attribute is
-- granted or revoked.
ALTER TABLE users ADD COLUMN operator_sso BOOLEAN NOT NULL DEFAULT FALSE;

-- sso_logins.link_user_id: a sign-in started by a signed-in user to link a
-- provider account to its own account ('' for a sign-in).
ALTER TABLE sso_logins ADD COLUMN link_user_id TEXT NOT NULL DEFAULT '';
