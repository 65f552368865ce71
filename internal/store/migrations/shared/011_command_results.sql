-- Command results are capped (store.MaxCommandResult): past the cap the
-- stored text keeps its head and tail around a marker that says how many
-- bytes were cut; result_cut counts them. last_report is the SHA-256 of
-- the last status report applied to the command, so that a retried report
-- (an agent that did not see the answer) changes nothing.
ALTER TABLE commands ADD COLUMN result_cut BIGINT NOT NULL DEFAULT 0;
ALTER TABLE commands ADD COLUMN last_report TEXT;
