//! Service rollups in Postgres.

/// Locks the pending blocks among `$1` that no other worker has locked:
/// (id, block, seconds since built).
pub(super) const LOCK_PENDING: &str =
    "select profile_id, block, extract(epoch from now() - built_at)::float8
     from profile_blocks where profile_id = any($1) and rollup = 'pending'
     for update skip locked";

/// Writes a rollup, replacing the one stored: `$1` service, `$2` hour,
/// `$3` windows, `$4` samples, `$5` block.
pub(super) const SAVE_ROLLUP: &str =
    "insert into service_rollups (service, hour, windows, samples, block, built_at)
     values ($1, $2, $3, $4, $5, {clock})
     on conflict (service, hour) do update set windows = excluded.windows,
         samples = excluded.samples, block = excluded.block, built_at = excluded.built_at";

/// Locks the rollups of the hours `$1`, in the key order in which
/// [`super::add_parts`] locks them: (service, hour, block).
pub(super) const LOCK_HOURS: &str =
    "select service, hour, block from service_rollups where hour = any($1)
     order by service, hour for update";

/// Service days to (re)build: `(service, day)` of hours before `$1`
/// without a day block that matches them, and day blocks without hours;
/// oldest first, at most `$2`.
pub(super) const STALE_DAYS: &str = "
    select h.service, h.day from (
        select service, date_trunc('day', hour, 'UTC') as day, count(*)::integer as hours,
               sum(samples)::bigint as samples, max(built_at) as built_at
        from service_rollups where hour < $1 group by 1, 2) h
    left join service_days d on d.service = h.service and d.day = h.day
    where d.day is null or d.hours <> h.hours or d.samples <> h.samples
          or d.built_at < h.built_at
    union all
    select d.service, d.day from service_days d where not exists (
        select 1 from service_rollups r where r.service = d.service
        and r.hour >= d.day and r.hour < d.day + interval '1 day')
    order by 2 limit $2";

/// A day's hour rollups of `$1` in `[$2, $3)`, held shared: (samples,
/// block).
pub(super) const LOCK_DAY_HOURS: &str = "select samples, block from service_rollups
     where service = $1 and hour >= $2 and hour < $3 order by hour for share";

/// Writes a day block: `$1` service, `$2` day, `$3` hours, `$4` windows,
/// `$5` samples, `$6` block.
pub(super) const SAVE_DAY: &str =
    "insert into service_days (service, day, hours, windows, samples, block, built_at)
     values ($1, $2, $3, $4, $5, $6, {clock})
     on conflict (service, day) do update set hours = excluded.hours,
         windows = excluded.windows, samples = excluded.samples, block = excluded.block,
         built_at = excluded.built_at";
