//! ODP's Postgres repository, shared by the api-server and the pipeline.
//!
//! Only `migrations/` changes the schema; this crate applies it at start-up
//! with `sqlx::migrate!`. Ingest writes each batch in one transaction, so
//! it is stored whole or not at all: snapshot headers, frames and stacks as
//! `UNNEST` arrays (`on conflict do nothing`, so redelivery is harmless),
//! samples and thread names, which belong to snapshots inserted in the same
//! transaction and cannot conflict, as binary `COPY`.

mod agents;
mod alerts;
mod blocks;
mod channels;
mod columns;
mod database;
mod detections;
pub mod downsample;
mod imports;
mod ingest;
pub mod pool;
mod profiles;
mod query;
mod read;
mod reanalysis;
mod requests;
pub mod retention;
mod rollups;
mod rules;
pub mod runtime;
mod schedules;
mod timeline;

use sqlx::mysql::MySqlDatabaseError;
use sqlx::PgPool;
use thiserror::Error;

pub use agents::{host_is_live, list_agents, record_agent_event, AgentRow};
pub use odp_api_types::ChannelKind;

pub use alerts::{
    claim_due_deliveries, create_channel, list_channels, record_attempt, AttemptOutcome,
    ChannelRow, DueDelivery, NewChannel,
};
pub use blocks::{compact_profile, load_profile, load_profiles, profiles_to_compact, Compacted};
pub use channels::{
    channel_deliveries, delete_channel, get_channel, update_channel, ChannelPatch, DeliveryFilter,
    DeliveryRow,
};
pub use database::{Backend, Database};
pub use detections::{
    previous_schedule_runs, profile_identity, profile_issues, rules_hit, save_detections,
    AlertSubject, Issue, IssueStack,
};
pub use imports::import_profile;
pub use ingest::{store_snapshots, ForeignSnapshot, IngestOutcome};
pub use pool::{connect_with, PoolConfig};
pub use profiles::{
    Inserted, Labels, NewProfile, ProfileFilter, ProfileMode, ProfileRow, ProfileStatus, Profiles,
};
pub use query::{profile_frames, profile_stacks, ProfileStacks};
pub use read::{read, HostView, Read, ReadResult, ReadScope};
pub use reanalysis::{
    claim_reanalysis, finish_reanalysis, get_reanalysis, latest_reanalysis, reanalysis_batch,
    record_reanalysis_progress, release_reanalysis, Reanalysis, ReanalysisStatus,
};
pub use requests::{
    resolve_open_requests, NewRequest, RequestDeadlines, RequestFilter, RequestKind, RequestRow,
    RequestStatus, Requests,
};
pub use rollups::{profiles_to_roll_up, roll_up, RolledUp};
pub use rules::{
    create_user_rule, get_rule, install_seed_rules, list_rules, save_user_rule, update_user_rule,
    RuleRow,
};
pub use schedules::{
    claim_run, NewSchedule, RunOutcome, SchedulePatch, ScheduleRow, ScheduleRunRow, SchedulerTick,
    Schedules, SCHEDULER_LOCK_KEY,
};
pub use timeline::{profile_timeline, TimelineWindow};

#[derive(Debug, Error)]
pub enum StoreError {
    #[error("database error: {0}")]
    Database(#[from] sqlx::Error),
    #[error("migration failed: {0}")]
    Migrate(#[from] sqlx::migrate::MigrateError),
    #[error("corrupt row: {0}")]
    Corrupt(String),
    #[error("conflict: {0}")]
    Conflict(String),
    /// A read spans windows of several events, whose samples cannot be
    /// added (see [`read::Read::event`]).
    #[error(
        "the profiles read measure different events ({}): choose one with `event`",
        .0.iter().map(|e| e.as_str()).collect::<Vec<_>>().join(", ")
    )]
    MixedEvents(Vec<odp_core::EventKind>),
    /// A database URL whose scheme names no backend.
    #[error("database URL {0}: the scheme must be postgres:// or mysql://")]
    UnsupportedUrl(String),
}

/// A statement the schema refused because of the values it carried.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Violation {
    /// A unique key already holds the value.
    Unique,
    /// A referenced row is missing, or a referencing row remains.
    ForeignKey,
    /// A CHECK, a NOT NULL, or a value too long or out of range for its
    /// column (MySQL's VARCHAR lengths, which Postgres' `text` lacks).
    Invalid,
}

impl StoreError {
    /// The constraint the database refused the input with, if that is
    /// what failed: the API answers 409 or 422, never 500.
    pub fn violation(&self) -> Option<Violation> {
        let StoreError::Database(sqlx::Error::Database(db)) = self else {
            return None;
        };
        match db.kind() {
            sqlx::error::ErrorKind::UniqueViolation => return Some(Violation::Unique),
            sqlx::error::ErrorKind::ForeignKeyViolation => return Some(Violation::ForeignKey),
            sqlx::error::ErrorKind::NotNullViolation | sqlx::error::ErrorKind::CheckViolation => {
                return Some(Violation::Invalid)
            }
            _ => {}
        }
        let invalid = match db.try_downcast_ref::<MySqlDatabaseError>() {
            // Too long, out of range, check failed (MySQL, MariaDB),
            // bad value for the column.
            Some(mysql) => matches!(mysql.number(), 1406 | 1264 | 3819 | 4025 | 1366),
            // Class 22: data exceptions (too long, out of range, bad value).
            None => db.code().is_some_and(|code| code.starts_with("22")),
        };
        invalid.then_some(Violation::Invalid)
    }

    /// Whether retrying the same work later may succeed (the database is
    /// down or overloaded), as opposed to the input being unstorable.
    pub fn is_transient(&self) -> bool {
        match self {
            StoreError::Database(e) => match e {
                sqlx::Error::Io(_)
                | sqlx::Error::PoolTimedOut
                | sqlx::Error::PoolClosed
                | sqlx::Error::Tls(_)
                | sqlx::Error::Protocol(_)
                | sqlx::Error::WorkerCrashed => true,
                sqlx::Error::Database(db) => match db.try_downcast_ref::<MySqlDatabaseError>() {
                    Some(mysql) => is_transient_mysql(mysql.number()),
                    // Class 08 connection exceptions, 40 transaction
                    // rollback (serialization, deadlock), 53 insufficient
                    // resources, 57 operator intervention (shutdown), and
                    // 55P03 lock timeout.
                    None => db.code().is_some_and(|code| {
                        matches!(&code[..2], "08" | "40" | "53" | "57") || code == "55P03"
                    }),
                },
                _ => false,
            },
            StoreError::Migrate(_)
            | StoreError::Corrupt(_)
            | StoreError::Conflict(_)
            | StoreError::MixedEvents(_)
            | StoreError::UnsupportedUrl(_) => false,
        }
    }
}

/// MySQL's and MariaDB's errors whose cause passes: most share SQLSTATE
/// `HY000` with permanent ones, so they are told apart by number.
fn is_transient_mysql(number: u16) -> bool {
    matches!(
        number,
        1040 // too many connections
            | 1053 // server shutdown in progress
            | 1205 // lock wait timeout
            | 1213 // deadlock, transaction rolled back
            | 1290 // read-only (a replica being promoted)
            | 1317 // query interrupted
            | 1927 // connection killed (MariaDB)
            | 1969 // max_statement_time exceeded (MariaDB)
            | 3024 // max_execution_time exceeded (MySQL)
    )
}

pub type Result<T, E = StoreError> = std::result::Result<T, E>;

/// A pool with the default [`PoolConfig`]: 10 connections, 10 s to get
/// one, no statement timeout.
pub async fn connect(database_url: &str) -> Result<PgPool> {
    Ok(connect_with(database_url, &PoolConfig::default()).await?)
}

/// Applies pending migrations. A binary older than the database's schema
/// still starts (its migrations are a prefix of the applied ones), so
/// services can be upgraded one at a time.
pub async fn migrate(pool: &PgPool) -> Result<()> {
    let mut migrator = sqlx::migrate!("../migrations");
    migrator.set_ignore_missing(true);
    migrator.run(pool).await?;
    Ok(())
}

/// Applies pending migrations of the MySQL schema (`migrations/mysql`,
/// for MySQL 8 and MariaDB 10.11+), under the same rule as [`migrate`].
pub async fn migrate_mysql(pool: &sqlx::MySqlPool) -> Result<()> {
    let mut migrator = sqlx::migrate!("../migrations/mysql");
    migrator.set_ignore_missing(true);
    migrator.run(pool).await?;
    Ok(())
}

pub async fn connect_and_migrate(database_url: &str) -> Result<PgPool> {
    let pool = connect(database_url).await?;
    migrate(&pool).await?;
    Ok(pool)
}

/// Applies pending migrations through a pool of its own (default
/// configuration: a migration may take longer than `config`'s statement
/// timeout), then connects as `config` says.
pub async fn connect_and_migrate_with(database_url: &str, config: &PoolConfig) -> Result<PgPool> {
    let migrations = connect_and_migrate(database_url).await?;
    migrations.close().await;
    Ok(connect_with(database_url, config).await?)
}
