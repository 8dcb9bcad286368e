//! Control requests in Postgres.

use sqlx::PgPool;
use uuid::Uuid;

use super::{
    NewRequest, RequestDeadlines, RequestFilter, RequestKind, RequestMove, RequestRow, COLUMNS,
};
use crate::Result;
use odp_api_types::UndeployMode;

pub(super) async fn insert(pool: &PgPool, id: Uuid, request: &NewRequest) -> Result<RequestRow> {
    let row = sqlx::query_as(&format!(
        "insert into control_requests (id, kind, host, profile_id, mode, requested_by, status)
         values ($1, $2, $3, $4, $5, $6, 'requested') returning {COLUMNS}"
    ))
    .bind(id)
    .bind(request.kind.as_str())
    .bind(&request.host)
    .bind(request.profile_id)
    .bind(request.mode.map(UndeployMode::as_str))
    .bind(&request.requested_by)
    .fetch_one(pool)
    .await?;
    Ok(row)
}

pub(super) async fn get(pool: &PgPool, id: Uuid) -> Result<Option<RequestRow>> {
    let row = sqlx::query_as(&format!(
        "select {COLUMNS} from control_requests where id = $1"
    ))
    .bind(id)
    .fetch_optional(pool)
    .await?;
    Ok(row)
}

pub(super) async fn transition(pool: &PgPool, moved: &RequestMove<'_>) -> Result<bool> {
    let moved = sqlx::query(
        "update control_requests
         set status = $2, status_reason = coalesce($3, status_reason),
             command_id = coalesce($4, command_id), updated_at = now()
         where id = $1 and status in ('requested', 'dispatched', 'running')",
    )
    .bind(moved.id)
    .bind(moved.status.as_str())
    .bind(moved.reason)
    .bind(moved.command_id)
    .execute(pool)
    .await?
    .rows_affected();
    Ok(moved == 1)
}

pub(super) async fn list(pool: &PgPool, filter: &RequestFilter) -> Result<Vec<RequestRow>> {
    let rows = sqlx::query_as(&format!(
        "select {COLUMNS} from control_requests
         where ($1::text is null or kind = $1)
           and ($2::text is null or host = $2)
           and (not $3 or status in ('requested', 'dispatched', 'running'))
         order by created_at desc, id
         limit $4"
    ))
    .bind(filter.kind.map(RequestKind::as_str))
    .bind(&filter.host)
    .bind(filter.open_only)
    .bind(filter.limit.clamp(1, 500))
    .fetch_all(pool)
    .await?;
    Ok(rows)
}

pub(super) async fn resolve_open(pool: &PgPool, deadlines: RequestDeadlines) -> Result<u64> {
    let live = "exists (select 1 from agents a where a.host = r.host
                        and a.last_seen > now() - make_interval(secs => $1))";
    let deploy_done = "update control_requests r
         set status = 'finished', status_reason = 'the agent is live', updated_at = now()
         where r.kind = 'deploy' and r.status in ('requested', 'dispatched', 'running')
           and exists (select 1 from agents a
                       where a.host = r.host and a.last_seen >= r.created_at)";
    let undeploy_done = format!(
        "update control_requests r
         set status = 'finished', status_reason = 'the agent stopped', updated_at = now()
         where r.kind = 'undeploy' and r.status = 'dispatched' and not {live}"
    );
    let stop_done = "update control_requests r
         set status = 'finished', status_reason = 'the profile ended ' || p.status,
             updated_at = now()
         from profiles p
         where r.kind = 'stop' and r.status = 'dispatched' and p.id = r.profile_id
           and p.status in ('finished', 'stopped', 'failed', 'expired')";
    let overdue = "update control_requests r
         set status = 'failed', updated_at = now(), status_reason = case
             when r.kind = 'deploy' then 'no heartbeat from the host in time'
             when r.kind = 'undeploy' then 'the agent still heartbeats'
             else 'the profile did not end in time' end
         where r.status in ('requested', 'dispatched', 'running')
           and r.created_at < now() - make_interval(secs => case
               when r.kind = 'deploy' then $1
               when r.kind = 'undeploy' and r.mode = 'drain' then $3
               else $2 end)";
    let d = deadlines;
    let mut ended = 0;
    ended += sqlx::query(deploy_done)
        .execute(pool)
        .await?
        .rows_affected();
    ended += sqlx::query(&undeploy_done)
        .bind(d.live_within_secs as f64)
        .execute(pool)
        .await?
        .rows_affected();
    ended += sqlx::query(stop_done).execute(pool).await?.rows_affected();
    ended += sqlx::query(overdue)
        .bind(d.deploy_secs as f64)
        .bind(d.command_secs as f64)
        .bind(d.drain_secs as f64)
        .execute(pool)
        .await?
        .rows_affected();
    Ok(ended)
}
