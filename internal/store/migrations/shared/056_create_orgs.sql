-- users.create_orgs: the person may create organizations (and becomes
-- Administrator of each one it creates), whatever its roles. An
-- instance-level permission: only whoever runs the server grants and
-- revokes it (patchd admin user create-orgs grant|revoke), recorded in
-- the instance's Audit Trail.
ALTER TABLE users ADD COLUMN create_orgs BOOLEAN NOT NULL DEFAULT FALSE;
