//! Profile requests and their lifecycle.

use chrono::{DateTime, Utc};
use odp_core::cost::StartOptions;
use odp_core::{EventKind, Target};
use sqlx::QueryBuilder;
use uuid::Uuid;

use crate::columns::{OptionalText, Text};
use crate::database::{on_backend, Database};
use crate::{Result, StoreError};

mod mysql;
mod postgres;

pub(crate) use mysql::transition_in as transition_in_mysql;
pub(crate) use postgres::transition_in;

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

/// Profile requests, in whichever database the store runs on.
#[derive(Clone)]
pub struct Profiles {
    db: Database,
}

impl Profiles {
    pub fn new(db: impl Into<Database>) -> Self {
        Profiles { db: db.into() }
    }

    /// Records a new request, unless the same client already sent it (same
    /// idempotency key) or the target already has a live profile.
    pub async fn insert(&self, p: &NewProfile) -> Result<Inserted> {
        on_backend!(self.db, insert(p))
    }

    /// Profiles matching `filter`, newest first, one page.
    pub async fn list(&self, filter: &ProfileFilter) -> Result<Vec<ProfileRow>> {
        on_backend!(self.db, list(filter))
    }

    /// Marks requests no agent acknowledged within `after` as expired;
    /// returns how many.
    pub async fn expire_unacknowledged(&self, after: std::time::Duration) -> Result<u64> {
        on_backend!(self.db, expire_unacknowledged(after))
    }

    pub async fn get(&self, id: Uuid) -> Result<Option<ProfileRow>> {
        on_backend!(self.db, get(id))
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
        on_backend!(self.db, transition(&moved))
    }
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

/// The unique key a violated insert names, and what it means.
fn answer_to_violation(key: Option<&str>) -> Violation {
    match key {
        Some("profiles_idempotency") => Violation::Replayed,
        Some("profiles_one_live_per_target") => Violation::LiveDuplicate,
        Some(other) => Violation::Other(other.to_owned()),
        None => Violation::Other("unknown".to_owned()),
    }
}

enum Violation {
    Replayed,
    LiveDuplicate,
    Other(String),
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
