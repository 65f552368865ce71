-- Fresh scans: a "scan now" asked of an endpoint's agent (POST
-- /api/v1/endpoints/{id}/scan, the console, patchctl endpoints scan) and not
-- yet handed to it. The next check-in answers scanNow and clears it; while it
-- is set the endpoint counts as having something pending (presence seeds it).
ALTER TABLE endpoints ADD COLUMN scan_requested_at BIGINT;
