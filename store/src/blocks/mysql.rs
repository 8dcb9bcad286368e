//! Blocks in MySQL and MariaDB: the profile block's upsert (`on duplicate
//! key update`). A block is one value of a statement, so the server's
//! `max_allowed_packet` must hold the largest block (see
//! docs/mysql-schema.md).

/// Writes a profile block, replacing the one stored: `$1` profile, `$2`
/// windows, `$3` samples, `$4` block.
pub(super) const SAVE_BLOCK: &str =
    "insert into profile_blocks (profile_id, windows, samples, block) values ($1, $2, $3, $4)
     on duplicate key update windows = values(windows), samples = values(samples),
         block = values(block), built_at = {now}";
