//! Blocks in MySQL and MariaDB: the profile block's upsert (`on duplicate
//! key update`), and the profiles holding uncompacted windows. A block is
//! one value of a statement, so the server's `max_allowed_packet` must
//! hold the largest block (see docs/mysql-schema.md).

/// Writes a profile block, replacing the one stored: `$1` profile, `$2`
/// windows, `$3` samples, `$4` block.
pub(super) const SAVE_BLOCK: &str =
    "insert into profile_blocks (profile_id, windows, samples, block) values ($1, $2, $3, $4)
     on duplicate key update windows = values(windows), samples = values(samples),
         block = values(block), built_at = {now}";

/// `uncompacted (profile_id)`: each profile holding windows not compacted
/// yet. Read from the index `snapshots_uncompacted (compacted, profile_id)`
/// alone; a skip scan as in Postgres would be a recursive query, which
/// MySQL stops at `cte_max_recursion_depth` (1,000) steps.
pub(super) const UNCOMPACTED: &str = "uncompacted (profile_id) as (
        select distinct profile_id from snapshots where compacted = false
    )";
