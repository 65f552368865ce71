-- On PostgreSQL, migration 037 drops the indexes on software_titles.hosts
-- and software_versions.hosts so that the counters are updated in place
-- (see its comment); SQLite keeps them. Nothing changes here.
SELECT 1;
