-- Enrollments counted per token in slots: an enrollment adds one to a slot
-- chosen at random, just before it commits, instead of to
-- enroll_tokens.uses. On PostgreSQL every enrollment with the same token
-- waited for the one before it to commit while that single row was its
-- counter; with 64 slots, enrollments of one token run side by side. A
-- token's uses are enroll_tokens.uses (counted before this table) plus the
-- sum of its slots.
CREATE TABLE enroll_token_uses (
	token_id TEXT NOT NULL REFERENCES enroll_tokens(id) ON DELETE CASCADE,
	slot     INTEGER NOT NULL,
	uses     BIGINT NOT NULL,
	PRIMARY KEY (token_id, slot)
);
