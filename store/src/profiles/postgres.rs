//! Profile requests in Postgres.

use sqlx::types::Json;
use sqlx::PgPool;
use uuid::Uuid;

use super::{
    answer_to_violation, live_one_just_ended, push_filters, Inserted, NewProfile, ProfileFilter,
    ProfileRow, Transition, Violation, LIVE,
};
use crate::{Result, StoreError};

pub(super) async fn insert(pool: &PgPool, p: &NewProfile) -> Result<Inserted> {
    let inserted = sqlx::query_as::<_, ProfileRow>(
        "insert into profiles (id, host, service, target, duration_ms, frequency_hz, status,
                               requested_by, idempotency_key, labels, mode, options)
         values ($1, $2, $3, $4, $5, $6, 'requested', $7, $8, $9, $10, $11)
         returning *",
    )
    .bind(p.id)
    .bind(&p.host)
    .bind(&p.service)
    .bind(Json(&p.target))
    .bind(p.duration_ms)
    .bind(p.frequency_hz)
    .bind(&p.requested_by)
    .bind(&p.idempotency_key)
    .bind(Json(&p.labels))
    .bind(p.mode.as_str())
    .bind(Json(&p.options))
    .fetch_one(pool)
    .await;
    let violated = match &inserted {
        Err(sqlx::Error::Database(db)) if db.is_unique_violation() => {
            answer_to_violation(db.constraint())
        }
        _ => return Ok(Inserted::Created(inserted?)),
    };
    match violated {
        Violation::Replayed => {
            let row = sqlx::query_as::<_, ProfileRow>(
                "select * from profiles where requested_by = $1 and idempotency_key = $2",
            )
            .bind(&p.requested_by)
            .bind(&p.idempotency_key)
            .fetch_one(pool)
            .await?;
            Ok(Inserted::Replayed(row))
        }
        Violation::LiveDuplicate => {
            let row = sqlx::query_as::<_, ProfileRow>(
                "select * from profiles
                 where host = $1 and mode = $3 and target = $2 and status = any($4)",
            )
            .bind(&p.host)
            .bind(Json(&p.target))
            .bind(p.mode.as_str())
            .bind(LIVE.map(|s| s.as_str()))
            .fetch_optional(pool)
            .await?;
            row.map(Inserted::Duplicate).ok_or_else(live_one_just_ended)
        }
        Violation::Other(key) => Err(StoreError::Conflict(format!(
            "unique constraint {key} violated"
        ))),
    }
}

pub(super) async fn list(pool: &PgPool, filter: &ProfileFilter) -> Result<Vec<ProfileRow>> {
    let mut q = sqlx::QueryBuilder::<sqlx::Postgres>::new("select * from profiles where true");
    push_filters(&mut q, filter, |q, labels| {
        q.push(" and labels @> ").push_bind(Json(labels));
    });
    Ok(q.build_query_as::<ProfileRow>().fetch_all(pool).await?)
}

pub(super) async fn expire_unacknowledged(
    pool: &PgPool,
    after: std::time::Duration,
) -> Result<u64> {
    let result = sqlx::query(
        "update profiles set status = 'expired', updated_at = now(), finished_at = now(),
             status_reason = 'no agent acknowledged the request in time'
         where status in ('requested', 'dispatched')
           and created_at < now() - make_interval(secs => $1)",
    )
    .bind(after.as_secs_f64())
    .execute(pool)
    .await?;
    Ok(result.rows_affected())
}

pub(super) async fn get(pool: &PgPool, id: Uuid) -> Result<Option<ProfileRow>> {
    Ok(
        sqlx::query_as::<_, ProfileRow>("select * from profiles where id = $1")
            .bind(id)
            .fetch_optional(pool)
            .await?,
    )
}

pub(super) async fn transition(pool: &PgPool, moved: &Transition<'_>) -> Result<bool> {
    transition_in(pool, moved).await
}

/// [`transition`] on any executor: ingest moves profiles inside the
/// transaction that records the agent's event.
pub(crate) async fn transition_in<'e, E>(executor: E, moved: &Transition<'_>) -> Result<bool>
where
    E: sqlx::PgExecutor<'e>,
{
    let result = sqlx::query(
        "update profiles set
             status = $2,
             status_reason = coalesce($3, status_reason),
             event = coalesce($4, event),
             agent_id = coalesce(agent_id, $5),
             updated_at = now(),
             started_at = case when $2 = 'running' then now() else started_at end,
             finished_at = case when $6 then now() else finished_at end
         where id = $1 and status = any($7)
           and ($5::text is null or agent_id is null or agent_id = $5)",
    )
    .bind(moved.id)
    .bind(moved.status.as_str())
    .bind(moved.reason)
    .bind(moved.event)
    .bind(moved.agent_id)
    .bind(moved.status.is_terminal())
    .bind(
        moved
            .status
            .allowed_from()
            .iter()
            .map(|s| s.as_str())
            .collect::<Vec<_>>(),
    )
    .execute(executor)
    .await?;
    Ok(result.rows_affected() == 1)
}
