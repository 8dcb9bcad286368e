//! Profile requests and their lifecycle.

use std::collections::HashMap;

use chrono::{DateTime, Utc};
use odp_core::cost::StartOptions;
use odp_core::{EventKind, Target};
use sqlx::QueryBuilder;
use uuid::Uuid;

use crate::columns::{OptionalText, Text};
use crate::database::{on_backend, repository};
use crate::sql::{Arg, On, Sql, Table};
use crate::{written, Result, StoreError};

mod mysql;
mod postgres;

pub use odp_core::domain::ProfileMode;
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
    /// The run this profile is the member of on its host, if any.
    pub run_id: Option<Uuid>,
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
    /// The run this profile is a member of.
    pub run_id: Option<Uuid>,
}

const PROFILES: Table = Table {
    name: "profiles",
    columns: "*",
};

/// Profile ids looked up per statement by [`Profiles::hosts`].
const HOSTS_CHUNK: usize = 500;

repository! {
    /// Profile requests, in whichever database the store runs on.
    Profiles
}

impl Profiles {
    /// Records a new request, unless the same client already sent it (same
    /// idempotency key) or the target already has a live profile.
    pub async fn insert(&self, p: &NewProfile) -> Result<Inserted> {
        let inserted = Sql::new(
            "insert into profiles (id, host, service, target, duration_ms, frequency_hz, status,
                                   requested_by, idempotency_key, labels, mode, options, run_id)
             values ($1, $2, $3, $4, $5, $6, 'requested', $7, $8, $9, $10, $11, $12)",
        )
        .bind(p.id)
        .bind(&p.host)
        .bind(&p.service)
        .bind(Arg::json(&p.target)?)
        .bind(p.duration_ms)
        .bind(p.frequency_hz)
        .bind(&p.requested_by)
        .bind(&p.idempotency_key)
        .bind(Arg::json(&p.labels)?)
        .bind(p.mode.as_str())
        .bind(Arg::json(&p.options)?)
        .bind(p.run_id)
        .execute(&self.db)
        .await;
        let conflict = match inserted {
            Ok(_) => {
                let row = written(self.get(p.id).await?, || format!("profile {}", p.id))?;
                return Ok(Inserted::Created(row));
            }
            Err(e) if e.violation() == Some(crate::Violation::Unique) => {
                Conflict::of(e.violated_key())
            }
            Err(e) => return Err(e),
        };
        match conflict {
            Conflict::Replayed => {
                let row = Sql::new(
                    "select * from profiles where requested_by = $1 and idempotency_key = $2",
                )
                .bind(&p.requested_by)
                .bind(&p.idempotency_key)
                .fetch_one(&self.db)
                .await?;
                Ok(Inserted::Replayed(row))
            }
            Conflict::LiveDuplicate => {
                let row = on_backend!(self.db, live_profile_of(p))?;
                row.map(Inserted::Duplicate).ok_or_else(live_one_just_ended)
            }
            Conflict::Other(key) => Err(StoreError::Conflict(format!(
                "unique constraint {key} violated"
            ))),
        }
    }

    /// Profiles matching `filter`, newest first, one page.
    pub async fn list(&self, filter: &ProfileFilter) -> Result<Vec<ProfileRow>> {
        on_backend!(self.db, list(filter))
    }

    /// Marks requests no agent acknowledged within `after` as expired;
    /// returns how many.
    pub async fn expire_unacknowledged(&self, after: std::time::Duration) -> Result<u64> {
        Sql::new(
            "update profiles set status = 'expired', updated_at = {now}, finished_at = {now},
                 status_reason = 'no agent acknowledged the request in time'
             where status in ('requested', 'dispatched')
               and created_at < {now} - $1",
        )
        .bind(after)
        .execute(&self.db)
        .await
    }

    pub async fn get(&self, id: Uuid) -> Result<Option<ProfileRow>> {
        PROFILES.get(&self.db, id).await
    }

    /// The host each of `ids` was started on; ids without a profile are
    /// left out. The pipeline refuses agent data for a profile that is not
    /// its signer's host's (or does not exist).
    pub async fn hosts(&self, ids: &[Uuid]) -> Result<HashMap<Uuid, String>> {
        let mut hosts = HashMap::with_capacity(ids.len());
        for chunk in ids.chunks(HOSTS_CHUNK) {
            let rows: Vec<(Uuid, String)> =
                Sql::new("select id, host from profiles where id in $1")
                    .bind_list(chunk.iter().copied())
                    .fetch_all(&self.db)
                    .await?;
            hosts.extend(rows);
        }
        Ok(hosts)
    }

    /// Moves a profile to `status` if the lifecycle allows it from where it
    /// is; returns whether it moved.
    pub async fn transition(
        &self,
        id: Uuid,
        status: ProfileStatus,
        reason: Option<&str>,
    ) -> Result<bool> {
        let moved = Transition {
            id,
            status,
            reason,
            event: None,
            agent_id: None,
        };
        transition_in(&self.db, &moved).await
    }
}

/// [`Profiles::transition`] anywhere: ingest moves profiles inside the
/// transaction that records the agent's event.
///
/// MySQL assigns `set` clauses left to right, each seeing the ones before,
/// so none reads a column this statement sets but its own.
///
/// A profile's first agent owns it, except a continuous profile's segment:
/// its host's agent restarted (under a new id) goes on with the same
/// segment and ends it, and the latest agent becomes its owner. Messages
/// reach here only from their host's agents (signed, and checked against
/// the profile's host). A segment also runs again after it ended: its
/// process came back within the hour, or its rate changed, and the agent
/// started the rest of the hour as another part of it.
pub(crate) async fn transition_in<'a>(
    on: impl Into<On<'a>>,
    moved: &Transition<'_>,
) -> Result<bool> {
    let moved_rows = Sql::new(
        "update profiles set
             status = $2,
             status_reason = coalesce($3, status_reason),
             event = coalesce($4, event),
             agent_id = case when continuous_id is null then coalesce(agent_id, $5)
                             else coalesce($5, agent_id) end,
             updated_at = {now},
             started_at = case when $6 then {now} else started_at end,
             finished_at = case when $7 then {now} when $6 then null else finished_at end
         where id = $1 and (status in $8 or (continuous_id is not null and $6))
           and ($5 is null or agent_id is null or agent_id = $5 or continuous_id is not null)",
    )
    .bind(moved.id)
    .bind(moved.status.as_str())
    .bind(moved.reason)
    .bind(moved.event)
    .bind(moved.agent_id)
    .bind(moved.status == ProfileStatus::Running)
    .bind(moved.status.is_terminal())
    .bind_list(moved.status.allowed_from().iter().map(|s| s.as_str()))
    .execute(on)
    .await?;
    Ok(moved_rows == 1)
}

/// A move of a profile's lifecycle; `event` and `agent_id` are recorded
/// when the agent reports them (profile started). A profile belongs to the
/// first agent that acknowledged it: another agent's event never moves it
/// nor takes it over (see `ingest::ownership`).
pub(crate) struct Transition<'a> {
    pub id: Uuid,
    pub status: ProfileStatus,
    pub reason: Option<&'a str>,
    pub event: Option<&'a str>,
    pub agent_id: Option<&'a str>,
}

/// The statuses of a profile that still runs or will.
const LIVE: [ProfileStatus; 3] = [
    ProfileStatus::Requested,
    ProfileStatus::Dispatched,
    ProfileStatus::Running,
];

/// Why an insert was refused, from the unique key it names.
enum Conflict {
    Replayed,
    LiveDuplicate,
    Other(String),
}

impl Conflict {
    fn of(key: Option<&str>) -> Conflict {
        match key {
            Some("profiles_idempotency") => Conflict::Replayed,
            Some("profiles_one_live_per_target") => Conflict::LiveDuplicate,
            Some(other) => Conflict::Other(other.to_owned()),
            None => Conflict::Other("unknown".to_owned()),
        }
    }
}

/// The conditions, order and page of [`Profiles::list`] after `select *
/// from profiles where true`, in either backend's SQL; only the label test
/// differs (`labels`).
fn push_filters<'a, DB>(
    q: &mut QueryBuilder<'a, DB>,
    filter: &'a ProfileFilter,
    labels: impl FnOnce(&mut QueryBuilder<'a, DB>, &'a Labels),
) where
    DB: sqlx::Database,
    &'a str: sqlx::Encode<'a, DB> + sqlx::Type<DB>,
    &'a String: sqlx::Encode<'a, DB> + sqlx::Type<DB>,
    DateTime<Utc>: sqlx::Encode<'a, DB> + sqlx::Type<DB>,
    Uuid: sqlx::Encode<'a, DB> + sqlx::Type<DB>,
    i64: sqlx::Encode<'a, DB> + sqlx::Type<DB>,
{
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
        labels(q, &filter.labels);
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
}

/// The target's live profile ended between our insert and the read.
fn live_one_just_ended() -> StoreError {
    StoreError::Conflict("the target's live profile just ended; retry".into())
}
