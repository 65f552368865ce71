-- The endpoints waiting for a reboot, for the alert evaluator's reboot
-- tracker (issue 22). Every minute it read every endpoints row, all the
-- fleet's wide rows, to find the few with pending_reboot set: about 20 ms
-- at 10,000 endpoints, inside a write transaction on SQLite. The partial
-- index holds only those endpoints, and changes only when an endpoint's
-- pending_reboot does.
CREATE INDEX endpoints_pending_reboot ON endpoints (id, org_id) WHERE pending_reboot = TRUE;
