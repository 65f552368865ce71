-- Each replica's presence watermark: every check-in the replica accepted
-- before written_through is written to endpoints.last_seen_at. The replica
-- publishes it after each flush (updated_at, its heartbeat); the offline
-- alert evaluation looks no later than the lowest watermark of the live
-- replicas, so that a check-in accepted but not yet written never makes an
-- endpoint look offline. A replica that stops removes its row; one that
-- died is ignored once its heartbeat is old (store.PresenceStaleAfter).
CREATE TABLE presence_watermarks (
	replica_id TEXT PRIMARY KEY,
	written_through BIGINT NOT NULL,
	updated_at BIGINT NOT NULL
);
