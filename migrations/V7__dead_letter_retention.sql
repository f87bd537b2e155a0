-- The broker-wide dead-letter retention (DEAD_LETTER_RETENTION_SECONDS) deletes the oldest
-- dead letters first; without this index every pass would scan the whole table.
CREATE INDEX dead_letters_failed_at ON dead_letters (failed_at);
