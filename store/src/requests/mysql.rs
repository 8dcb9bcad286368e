//! Control requests in MySQL and MariaDB: a read after the insert instead
//! of `returning`, `update … join` instead of `update … from`, intervals
//! in microseconds. MySQL assigns `set` clauses left to right, each
//! seeing the ones before; none of these reads a column its statement sets.

use sqlx::MySqlPool;
use uuid::Uuid;

use super::{
    NewRequest, RequestDeadlines, RequestFilter, RequestKind, RequestMove, RequestRow, COLUMNS,
};
use crate::{Result, StoreError};
use odp_api_types::UndeployMode;

pub(super) async fn insert(pool: &MySqlPool, id: Uuid, request: &NewRequest) -> Result<RequestRow> {
    sqlx::query(
        "insert into control_requests (id, kind, host, profile_id, mode, requested_by, status)
         values (?, ?, ?, ?, ?, ?, 'requested')",
    )
    .bind(id)
    .bind(request.kind.as_str())
    .bind(&request.host)
    .bind(request.profile_id)
    .bind(request.mode.map(UndeployMode::as_str))
    .bind(&request.requested_by)
    .execute(pool)
    .await?;
    get(pool, id)
        .await?
        .ok_or_else(|| StoreError::Corrupt(format!("control request {id} vanished")))
}

pub(super) async fn get(pool: &MySqlPool, id: Uuid) -> Result<Option<RequestRow>> {
    let row = sqlx::query_as(&format!(
        "select {COLUMNS} from control_requests where id = ?"
    ))
    .bind(id)
    .fetch_optional(pool)
    .await?;
    Ok(row)
}

pub(super) async fn transition(pool: &MySqlPool, moved: &RequestMove<'_>) -> Result<bool> {
    let moved = sqlx::query(
        "update control_requests
         set status = ?, status_reason = coalesce(?, status_reason),
             command_id = coalesce(?, command_id), updated_at = now(6)
         where id = ? and status in ('requested', 'dispatched', 'running')",
    )
    .bind(moved.status.as_str())
    .bind(moved.reason)
    .bind(moved.command_id)
    .bind(moved.id)
    .execute(pool)
    .await?
    .rows_affected();
    Ok(moved == 1)
}

pub(super) async fn list(pool: &MySqlPool, filter: &RequestFilter) -> Result<Vec<RequestRow>> {
    let kind = filter.kind.map(RequestKind::as_str);
    let rows = sqlx::query_as(&format!(
        "select {COLUMNS} from control_requests
         where (? is null or kind = ?)
           and (? is null or host = ?)
           and (not ? or status in ('requested', 'dispatched', 'running'))
         order by created_at desc, id
         limit ?"
    ))
    .bind(kind)
    .bind(kind)
    .bind(&filter.host)
    .bind(&filter.host)
    .bind(filter.open_only)
    .bind(filter.limit.clamp(1, 500))
    .fetch_all(pool)
    .await?;
    Ok(rows)
}

/// Seconds as microseconds, for `interval ? microsecond`.
fn micros(secs: i64) -> i64 {
    secs.saturating_mul(1_000_000)
}

pub(super) async fn resolve_open(pool: &MySqlPool, deadlines: RequestDeadlines) -> Result<u64> {
    let deploy_done = "update control_requests r
         set r.status = 'finished', r.status_reason = 'the agent is live', r.updated_at = now(6)
         where r.kind = 'deploy' and r.status in ('requested', 'dispatched', 'running')
           and exists (select 1 from agents a
                       where a.host = r.host and a.last_seen >= r.created_at)";
    let undeploy_done = "update control_requests r
         set r.status = 'finished', r.status_reason = 'the agent stopped', r.updated_at = now(6)
         where r.kind = 'undeploy' and r.status = 'dispatched'
           and not exists (select 1 from agents a where a.host = r.host
                            and a.last_seen > now(6) - interval ? microsecond)";
    let stop_done = "update control_requests r join profiles p on p.id = r.profile_id
         set r.status = 'finished', r.status_reason = concat('the profile ended ', p.status),
             r.updated_at = now(6)
         where r.kind = 'stop' and r.status = 'dispatched'
           and p.status in ('finished', 'stopped', 'failed', 'expired')";
    let overdue = "update control_requests r
         set r.status = 'failed', r.updated_at = now(6), r.status_reason = case
             when r.kind = 'deploy' then 'no heartbeat from the host in time'
             when r.kind = 'undeploy' then 'the agent still heartbeats'
             else 'the profile did not end in time' end
         where r.status in ('requested', 'dispatched', 'running')
           and r.created_at < now(6) - interval (case
               when r.kind = 'deploy' then ?
               when r.kind = 'undeploy' and r.mode = 'drain' then ?
               else ? end) microsecond";
    let d = deadlines;
    let mut ended = 0;
    ended += sqlx::query(deploy_done)
        .execute(pool)
        .await?
        .rows_affected();
    ended += sqlx::query(undeploy_done)
        .bind(micros(d.live_within_secs))
        .execute(pool)
        .await?
        .rows_affected();
    ended += sqlx::query(stop_done).execute(pool).await?.rows_affected();
    ended += sqlx::query(overdue)
        .bind(micros(d.deploy_secs))
        .bind(micros(d.drain_secs))
        .bind(micros(d.command_secs))
        .execute(pool)
        .await?
        .rows_affected();
    Ok(ended)
}
