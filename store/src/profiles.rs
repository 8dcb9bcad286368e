//! Profile requests and their lifecycle.

use chrono::{DateTime, Utc};
use odp_core::cost::StartOptions;
use odp_core::{EventKind, Target};
use sqlx::types::Json;
use sqlx::PgPool;
use uuid::Uuid;

use crate::columns::{OptionalText, Text};
use crate::{Result, StoreError};

pub use odp_api_types::ProfileMode;
pub use odp_core::ProfileStatus;

#[derive(Debug, Clone)]
pub struct NewProfile {
    pub id: Uuid,
    pub host: String,
    pub service: String,
    pub idempotency_key: Option<String>,
    pub target: Target,
    pub duration_ms: i64,
    pub frequency_hz: i32,
    pub requested_by: String,
    pub labels: Labels,
    /// One live profile per (host, mode, target).
    pub mode: ProfileMode,
    pub options: StartOptions,
}

/// A profile's labels: sorted, so they print and compare the same way.
pub type Labels = std::collections::BTreeMap<String, String>;

/// What [`Profiles::insert`] did.
#[derive(Debug)]
pub enum Inserted {
    Created(ProfileRow),
    /// The same client sent this request before (same idempotency key).
    Replayed(ProfileRow),
    /// The target already has a live profile: this one.
    Duplicate(ProfileRow),
}

/// Filters for [`Profiles::list`].
#[derive(Debug, Clone, Default)]
pub struct ProfileFilter {
    pub service: Option<String>,
    pub host: Option<String>,
    pub status: Option<ProfileStatus>,
    pub since: Option<DateTime<Utc>>,
    pub until: Option<DateTime<Utc>>,
    /// Keyset pagination: only profiles older than this (created_at, id).
    pub after: Option<(DateTime<Utc>, Uuid)>,
    /// Only profiles carrying all of these labels.
    pub labels: Labels,
    pub limit: i64,
}

#[derive(Debug, Clone, sqlx::FromRow)]
pub struct ProfileRow {
    pub id: Uuid,
    pub host: String,
    pub service: String,
    #[sqlx(json)]
    pub target: Target,
    #[sqlx(try_from = "Text<ProfileMode>")]
    pub mode: ProfileMode,
    pub duration_ms: i64,
    pub frequency_hz: i32,
    #[sqlx(try_from = "Text<ProfileStatus>")]
    pub status: ProfileStatus,
    pub status_reason: Option<String>,
    pub requested_by: String,
    #[sqlx(try_from = "OptionalText<EventKind>")]
    pub event: Option<EventKind>,
    pub agent_id: Option<String>,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
    pub started_at: Option<DateTime<Utc>>,
    pub finished_at: Option<DateTime<Utc>>,
    #[sqlx(json)]
    pub labels: Labels,
    /// The plugin, event and cost control the start asked for.
    #[sqlx(json)]
    pub options: StartOptions,
}

/// The profile as the API shows it, without the agent's runtime report
/// (which only the profile's own page reads).
impl From<ProfileRow> for odp_api_types::Profile {
    fn from(row: ProfileRow) -> Self {
        odp_api_types::Profile {
            links: odp_api_types::ProfileLinks::of(row.id),
            id: row.id,
            host: row.host,
            service: row.service,
            target: row.target,
            mode: row.mode,
            duration_ms: row.duration_ms,
            frequency_hz: row.frequency_hz,
            status: row.status,
            status_reason: row.status_reason,
            requested_by: row.requested_by,
            event: row.event,
            agent_id: row.agent_id,
            created_at: row.created_at,
            updated_at: row.updated_at,
            started_at: row.started_at,
            finished_at: row.finished_at,
            labels: row.labels,
            options: row.options,
            runtime: None,
        }
    }
}

/// Profile requests in Postgres.
#[derive(Clone)]
pub struct Profiles {
    pool: PgPool,
}

impl Profiles {
    pub fn new(pool: PgPool) -> Self {
        Profiles { pool }
    }

    /// Records a new request, unless the same client already sent it (same
    /// idempotency key) or the target already has a live profile.
    pub async fn insert(&self, p: &NewProfile) -> Result<Inserted> {
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
        .fetch_one(&self.pool)
        .await;
        let violated = match &inserted {
            Err(sqlx::Error::Database(db)) if db.is_unique_violation() => {
                db.constraint().map(str::to_owned)
            }
            _ => None,
        };
        match violated.as_deref() {
            None => Ok(Inserted::Created(inserted?)),
            Some("profiles_idempotency") => {
                let row = sqlx::query_as::<_, ProfileRow>(
                    "select * from profiles where requested_by = $1 and idempotency_key = $2",
                )
                .bind(&p.requested_by)
                .bind(&p.idempotency_key)
                .fetch_one(&self.pool)
                .await?;
                Ok(Inserted::Replayed(row))
            }
            Some("profiles_one_live_per_target") => {
                let row = sqlx::query_as::<_, ProfileRow>(
                    "select * from profiles
                     where host = $1 and mode = $3 and target = $2
                       and status in ('requested', 'dispatched', 'running')",
                )
                .bind(&p.host)
                .bind(Json(&p.target))
                .bind(p.mode.as_str())
                .fetch_optional(&self.pool)
                .await?;
                match row {
                    Some(row) => Ok(Inserted::Duplicate(row)),
                    // The live one ended between our insert and this read.
                    None => Err(StoreError::Conflict(
                        "the target's live profile just ended; retry".into(),
                    )),
                }
            }
            Some(other) => Err(StoreError::Conflict(format!(
                "unique constraint {other} violated"
            ))),
        }
    }

    /// Profiles matching `filter`, newest first, one page.
    pub async fn list(&self, filter: &ProfileFilter) -> Result<Vec<ProfileRow>> {
        let mut q = sqlx::QueryBuilder::<sqlx::Postgres>::new("select * from profiles where true");
        if let Some(service) = &filter.service {
            q.push(" and service = ").push_bind(service);
        }
        if let Some(host) = &filter.host {
            q.push(" and host = ").push_bind(host);
        }
        if let Some(status) = filter.status {
            q.push(" and status = ").push_bind(status.as_str());
        }
        if let Some(since) = filter.since {
            q.push(" and created_at >= ").push_bind(since);
        }
        if let Some(until) = filter.until {
            q.push(" and created_at < ").push_bind(until);
        }
        if !filter.labels.is_empty() {
            q.push(" and labels @> ").push_bind(Json(&filter.labels));
        }
        if let Some((at, id)) = filter.after {
            q.push(" and (created_at, id) < (")
                .push_bind(at)
                .push(", ")
                .push_bind(id)
                .push(")");
        }
        q.push(" order by created_at desc, id desc limit ")
            .push_bind(filter.limit);
        Ok(q.build_query_as::<ProfileRow>()
            .fetch_all(&self.pool)
            .await?)
    }

    /// Marks requests no agent acknowledged within `after` as expired;
    /// returns how many.
    pub async fn expire_unacknowledged(&self, after: std::time::Duration) -> Result<u64> {
        let result = sqlx::query(
            "update profiles set status = 'expired', updated_at = now(), finished_at = now(),
                 status_reason = 'no agent acknowledged the request in time'
             where status in ('requested', 'dispatched')
               and created_at < now() - make_interval(secs => $1)",
        )
        .bind(after.as_secs_f64())
        .execute(&self.pool)
        .await?;
        Ok(result.rows_affected())
    }

    pub async fn get(&self, id: Uuid) -> Result<Option<ProfileRow>> {
        Ok(
            sqlx::query_as::<_, ProfileRow>("select * from profiles where id = $1")
                .bind(id)
                .fetch_optional(&self.pool)
                .await?,
        )
    }

    /// Moves a profile to `status` if the lifecycle allows it from where it
    /// is; returns whether it moved.
    pub async fn transition(
        &self,
        id: Uuid,
        status: ProfileStatus,
        reason: Option<&str>,
    ) -> Result<bool> {
        transition(&self.pool, id, status, reason, None, None).await
    }
}

/// See [`Profiles::transition`]; `event` and `agent_id` are recorded when
/// the agent reports them (profile started). A profile belongs to the
/// first agent that acknowledged it: another agent's event never moves it
/// nor takes it over (see `ingest::ownership`).
pub(crate) async fn transition<'e, E>(
    executor: E,
    id: Uuid,
    status: ProfileStatus,
    reason: Option<&str>,
    event: Option<&str>,
    agent_id: Option<&str>,
) -> Result<bool>
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
    .bind(id)
    .bind(status.as_str())
    .bind(reason)
    .bind(event)
    .bind(agent_id)
    .bind(status.is_terminal())
    .bind(
        status
            .allowed_from()
            .iter()
            .map(|s| s.as_str())
            .collect::<Vec<_>>(),
    )
    .execute(executor)
    .await?;
    Ok(result.rows_affected() == 1)
}
