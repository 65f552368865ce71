-- Every inventory batch adds to the counters of about a thousand software
-- titles and as many versions (hosts, installs). An index on hosts made
-- each of those updates a new index entry in every index of the table
-- (PostgreSQL updates a row in place, "HOT", only when no indexed column
-- changes and its page has room): with them, the counters cost PostgreSQL
-- about as much as the installations themselves while a fleet enrolls
-- (issue 22). Without them, and with room left in each page, the counter
-- updates are HOT. The software list by title then sorts the
-- organization's titles by hosts (a top-N sort of its titles, not of its
-- installations), and a title's versions are read through the primary key
-- (title_id, version_key) and sorted. SQLite keeps both indexes: it
-- rewrites an updated row's index entries either way and its enrollment
-- is not held up by them.
DROP INDEX software_titles_hosts;
DROP INDEX software_versions_hosts;
ALTER TABLE software_titles SET (fillfactor = 50);
ALTER TABLE software_versions SET (fillfactor = 50);
