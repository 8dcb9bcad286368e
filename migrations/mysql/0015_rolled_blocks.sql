-- Rolled-up profiles keep no block of their own (0028_rolled_blocks.sql in
-- Postgres).
ALTER TABLE profile_blocks MODIFY block LONGBLOB NULL;
UPDATE profile_blocks SET block = NULL, windows = 0, samples = 0 WHERE rollup = 'rolled';
ALTER TABLE profile_blocks ADD CONSTRAINT profile_blocks_block_check
    CHECK (block IS NOT NULL OR rollup = 'rolled');
