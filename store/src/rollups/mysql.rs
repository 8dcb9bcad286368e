//! Service rollups in MySQL and MariaDB: `on duplicate key update` for
//! `on conflict`, the age of a block in microseconds (no `extract(epoch
//! …)`), and `read committed` transactions for rewrites.

use sqlx::MySqlPool;

use crate::sql::Tx;
use crate::Result;

/// Locks the pending blocks among `$1` that no other worker has locked:
/// (id, block, seconds since built).
pub(super) const LOCK_PENDING: &str =
    "select profile_id, block, timestampdiff(microsecond, built_at, now(6)) / 1e6
     from profile_blocks where profile_id = any($1) and rollup = 'pending'
     for update skip locked";

/// Writes a rollup, replacing the one stored: `$1` service, `$2` hour,
/// `$3` windows, `$4` samples, `$5` block.
pub(super) const SAVE_ROLLUP: &str =
    "insert into service_rollups (service, `hour`, windows, samples, block, built_at)
     values ($1, $2, $3, $4, $5, {clock})
     on duplicate key update windows = values(windows), samples = values(samples),
         block = values(block), built_at = values(built_at)";

/// Service days to (re)build (see `postgres::STALE_DAYS`): UTC days by
/// `date()`, the session's time zone being UTC.
pub(super) const STALE_DAYS: &str = "
    select h.service, h.`day` from (
        select service, timestamp(date(`hour`)) as `day`, count(*) as hours,
               sum(samples) as samples, max(built_at) as built_at
        from service_rollups where `hour` < $1 group by service, timestamp(date(`hour`))) h
    left join service_days d on d.service = h.service and d.`day` = h.`day`
    where d.`day` is null or d.hours <> h.hours or d.samples <> h.samples
          or d.built_at < h.built_at
    union all
    select d.service, d.`day` from service_days d where not exists (
        select 1 from service_rollups r where r.service = d.service
        and r.`hour` >= d.`day` and r.`hour` < d.`day` + interval 1 day)
    order by 2 limit $2";

/// A day's hour rollups of `$1` in `[$2, $3)`, held shared: (samples,
/// block).
pub(super) const LOCK_DAY_HOURS: &str = "select samples, block from service_rollups
     where service = $1 and `hour` >= $2 and `hour` < $3 order by `hour` lock in share mode";

/// Writes a day block (see `postgres::SAVE_DAY`).
pub(super) const SAVE_DAY: &str =
    "insert into service_days (service, `day`, hours, windows, samples, block, built_at)
     values ($1, $2, $3, $4, $5, $6, {clock})
     on duplicate key update hours = values(hours), windows = values(windows),
         samples = values(samples), block = values(block), built_at = values(built_at)";

/// Locks the rollups of the hours `$1`: (service, hour, block).
///
/// The rows are read through `service_rollups_hour` (migration 0002),
/// forced so that the lock scope never depends on the optimizer's
/// statistics: a full scan would lock every row of every hour (and, under
/// repeatable read, every gap), holding up compactions into other hours
/// until the caller commits. Run in a `read committed` transaction
/// ([`begin_read_committed`]), this locks the hours' rows and nothing
/// else. They are locked in the index's order, hour then service: per
/// service that is the ascending hours in which [`super::add_parts`]
/// locks them, so the two cannot deadlock.
pub(super) const LOCK_HOURS: &str = "select service, `hour`, block from service_rollups
     force index (service_rollups_hour) where `hour` = any($1)
     order by `hour`, service for update";

/// A transaction at `read committed` (see [`LOCK_HOURS`]).
pub(super) async fn begin_read_committed(pool: &MySqlPool) -> Result<Tx> {
    let mut conn = pool.acquire().await?;
    crate::pool::mysql::read_committed(&mut conn).await?;
    // The pool's `begin` would take another connection: this one, whose
    // next transaction is set to `read committed`, begins it.
    Ok(Tx::MySql(sqlx::Transaction::begin(conn, None).await?))
}
