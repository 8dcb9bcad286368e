//! Blocks in Postgres: the profile block's upsert (`on conflict`).

/// Writes a profile block, replacing the one stored: `$1` profile, `$2`
/// windows, `$3` samples, `$4` block.
pub(super) const SAVE_BLOCK: &str =
    "insert into profile_blocks (profile_id, windows, samples, block) values ($1, $2, $3, $4)
     on conflict (profile_id) do update set windows = excluded.windows,
         samples = excluded.samples, block = excluded.block, built_at = {now}";
