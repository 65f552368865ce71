-- stopped_at: when the endpoint's agent last said it stops (POST
-- /agent/v1/stopping, a patchd addition to the agent protocol): the
-- service manager stopped it, the computer shuts down or restarts. An
-- endpoint whose stopped_at is at or after its last check-in counts as
-- disconnected at once instead of after three check-in intervals; its next
-- check-in (a later last_seen_at) makes it connected again. NULL: never
-- said, or said before the agent version that says it.
ALTER TABLE endpoint_presence ADD COLUMN stopped_at BIGINT;
