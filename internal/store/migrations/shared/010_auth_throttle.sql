-- Failed-attempt limits as one counter per key and window (issue 15): a
-- sign-in or token call reserves an attempt with one atomic upsert before
-- it checks a secret, so parallel attempts cannot all read "under the
-- limit" and all be checked; an attempt that succeeds gives its
-- reservation back. Replaces the log of failures in token_failures.
CREATE TABLE auth_throttle (
	key          TEXT PRIMARY KEY,
	window_start BIGINT NOT NULL,
	attempts     INTEGER NOT NULL
);
CREATE INDEX auth_throttle_window_start ON auth_throttle (window_start);
DROP TABLE token_failures;
