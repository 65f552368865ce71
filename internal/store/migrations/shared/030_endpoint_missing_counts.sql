-- Each endpoint's missing updates counted by severity, kept by the
-- inventory writer with the rows of endpoint_updates (replaceUpdates): the
-- dashboard's compliance and severity figures and the endpoint lists'
-- "missing" filters read these counters instead of the rows, one pass over
-- the endpoints however many updates they miss.
ALTER TABLE endpoints ADD COLUMN missing_critical INTEGER NOT NULL DEFAULT 0;
ALTER TABLE endpoints ADD COLUMN missing_important INTEGER NOT NULL DEFAULT 0;
ALTER TABLE endpoints ADD COLUMN missing_moderate INTEGER NOT NULL DEFAULT 0;
ALTER TABLE endpoints ADD COLUMN missing_low INTEGER NOT NULL DEFAULT 0;
ALTER TABLE endpoints ADD COLUMN missing_unspecified INTEGER NOT NULL DEFAULT 0;

UPDATE endpoints SET
	missing_critical = (SELECT COUNT(*) FROM endpoint_updates u WHERE u.endpoint_id = endpoints.id AND u.severity = 'Critical'),
	missing_important = (SELECT COUNT(*) FROM endpoint_updates u WHERE u.endpoint_id = endpoints.id AND u.severity = 'Important'),
	missing_moderate = (SELECT COUNT(*) FROM endpoint_updates u WHERE u.endpoint_id = endpoints.id AND u.severity = 'Moderate'),
	missing_low = (SELECT COUNT(*) FROM endpoint_updates u WHERE u.endpoint_id = endpoints.id AND u.severity = 'Low'),
	missing_unspecified = (SELECT COUNT(*) FROM endpoint_updates u WHERE u.endpoint_id = endpoints.id
		AND u.severity NOT IN ('Critical', 'Important', 'Moderate', 'Low'));
