-- On PostgreSQL, migration 036 replaces endpoint_software's foreign keys
-- with a cascade trigger (see its comment); SQLite keeps them: its checks
-- are cheap in-process lookups. Nothing changes here.
SELECT 1;
