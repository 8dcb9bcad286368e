-- A running profile's detection reads only the windows stored since its
-- last evaluation (`load_windows_after`): its uncompacted windows after an
-- id. The index of uncompacted windows now holds their ids too, so that
-- read touches only the new windows; finding the profiles with
-- uncompacted windows (compaction) reads it by its first column as before.
-- MySQL's `snapshots_uncompacted (compacted, profile_id)` already ends in
-- the primary key, as InnoDB's secondary indexes do.
create index snapshots_uncompacted_by_id on snapshots (profile_id, id) where not compacted;
drop index snapshots_uncompacted;
