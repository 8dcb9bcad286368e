//! Blocks in Postgres: the profile block's upsert (`on conflict`), and the
//! profiles holding uncompacted windows.

/// Writes a profile block, replacing the one stored: `$1` profile, `$2`
/// windows, `$3` samples, `$4` block.
pub(super) const SAVE_BLOCK: &str =
    "insert into profile_blocks (profile_id, windows, samples, block) values ($1, $2, $3, $4)
     on conflict (profile_id) do update set windows = excluded.windows,
         samples = excluded.samples, block = excluded.block, built_at = {now}";

/// `uncompacted (profile_id)`: each profile holding windows not compacted
/// yet, and one null that ends the list. A skip scan of the partial index
/// `snapshots_uncompacted_by_id` (migration 0029), which holds only uncompacted
/// windows: one probe per profile, however many windows each holds.
pub(super) const UNCOMPACTED: &str = "recursive uncompacted (profile_id) as (
        (select profile_id from snapshots where not compacted order by profile_id limit 1)
        union all
        select (select n.profile_id from snapshots n
                where not n.compacted and n.profile_id > u.profile_id
                order by n.profile_id limit 1)
        from uncompacted u where u.profile_id is not null
    )";
