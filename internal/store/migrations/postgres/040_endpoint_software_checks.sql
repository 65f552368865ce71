-- On SQLite, migration 040 replaces endpoint_software's foreign keys with a
-- cascade trigger, as migration 036 did here. Nothing changes here.
SELECT 1;
