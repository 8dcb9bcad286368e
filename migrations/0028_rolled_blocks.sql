-- One copy of the samples (issue 29): a profile rolled up into its
-- service's hourly rollups is read from them, so its own block is
-- dropped. The row stays, saying where the profile's samples are
-- (`rollup = 'rolled'`); its `windows` and `samples`, which count what its
-- block holds, are 0.
alter table profile_blocks alter column block drop not null;
update profile_blocks set block = null, windows = 0, samples = 0 where rollup = 'rolled';
alter table profile_blocks add constraint profile_blocks_block_check
    check (block is not null or rollup = 'rolled');
