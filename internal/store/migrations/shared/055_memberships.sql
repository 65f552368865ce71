-- Memberships: a person (a row of users: e-mail, password, second factors,
-- passkeys, single sign-on links) belongs to one or more organizations,
-- with a role of each. Every permission check is of the session's
-- organization, under the person's role there. users.org_id stays the
-- organization the account was made in, and users.role_id its role there
-- (kept equal to that membership's role while it lasts).
CREATE TABLE memberships (
	user_id    TEXT NOT NULL REFERENCES users(id) ON DELETE CASCADE,
	org_id     TEXT NOT NULL REFERENCES orgs(id) ON DELETE CASCADE,
	role_id    TEXT NOT NULL REFERENCES roles(id),
	created_at BIGINT NOT NULL,
	PRIMARY KEY (user_id, org_id)
);
CREATE INDEX memberships_org ON memberships (org_id, role_id);

-- Every account made before memberships is a person with one membership:
-- its organization, with its role.
INSERT INTO memberships (user_id, org_id, role_id, created_at)
	SELECT id, org_id, role_id, created_at FROM users;

-- users.last_org_id: the organization the person switched to last; a
-- sign-in opens it while the person belongs to it.
ALTER TABLE users ADD COLUMN last_org_id TEXT NOT NULL DEFAULT '';
