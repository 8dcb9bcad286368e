//! ODP's store, shared by the api-server and the pipeline, on Postgres or
//! on MySQL 8 / MariaDB 10.11+ ([`Database`], chosen by the URL's scheme).
//!
//! Each area (profiles, requests, schedules, blocks, …) is a folder. A
//! statement that reads the same in both dialects is written once, in the
//! area's `mod.rs`, through `sql::Sql` (Postgres' `$n` notation, rendered
//! for the backend it runs on); the area's `postgres.rs` and `mysql.rs`
//! hold only what the dialects really do differently (`returning`,
//! upserts, arrays against `in` lists, `COPY`, advisory locks). One
//! behaviour suite (`store/tests`) runs on both backends. What every area
//! does to its own table alike (a row by id, a delete, an update read
//! back, a newest-first page) is written once, in `sql::Table`.
//!
//! A row that is what was created plus what the store adds (ids,
//! timestamps, state) holds the new-row struct, flattened
//! (`#[sqlx(flatten)]`: [`ServiceRow`], [`ScheduleRow`], [`RequestRow`],
//! [`EnrollmentTokenRow`], [`IdentityRow`], [`RunHostRow`]), and a field
//! group that means the same in several rows is one struct
//! ([`Revocation`]). Repositories are declared by one macro
//! (`database::repository!`); continuous profiles and triggers, the same
//! surface over two tables, are one generic repository
//! ([`Configurations`]); an update from a patch is written by `sql::Patch`.
//!
//! What still looks alike (`duplicates --repo store/src`: 14 pairs of
//! places sharing six or more lines of the same shape) does so on purpose:
//! - `continuous` ~ `triggers`: both rows end with who created and changed
//!   them and when, each maps to what its agents are sent alike (id,
//!   service, then its own fields, as `odp_core`'s two assignments do), and
//!   both updates change an event and a frequency among their own columns.
//! - `schedules/mysql.rs` ~ `schedules/postgres.rs`, `pool/mod.rs` ~
//!   `pool/mysql.rs`, `read/mysql.rs` ~ `read/postgres.rs`: one function
//!   (recording missed runs, the connection probe, a read's block bytes)
//!   declared in each dialect, its statement written as that dialect must.
//! - `ChannelPatch`, `SchedulePatch`, `TriggerPatch` (three pairs): each
//!   area's patch is an `Option` per field it may change; the fields differ.
//! - `requests` ~ `runs`: a request's and a run's state and its reason,
//!   each with its own enum and its own further fields.
//! - `schedules` ~ `services`: both rows are their new-row struct, flattened,
//!   with `created_at` and `updated_at`.
//! - Field lists of unrelated structs that happen to share types in the same
//!   order (four pairs): `DueDelivery` ~ `NewRequest`, `NewChannel` ~
//!   `NewIdentity`, `NewEnrollmentToken` ~ `FiringRow`, `PoolConfig` ~
//!   `RuleRow`.
//!
//! The store keeps the domain's values (`odp-core`'s enums, stored by
//! name, and its own rows), never the REST contract's: `odp-api-types`
//! is no dependency, and the api-server maps rows to the bodies it
//! answers with.
//!
//! Only `migrations/` (Postgres) and `migrations/mysql` change the schema;
//! [`Database::migrate`] applies them at start-up. Ingest writes each
//! batch in one transaction, so it is stored whole or not at all, and
//! redelivery of a window already stored is harmless.

mod agents;
mod alerts;
mod blocks;
mod channels;
mod columns;
mod configurations;
mod continuous;
mod cpu;
mod database;
mod detections;
pub mod downsample;
mod enrollment;
mod identities;
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
mod runs;
pub mod runtime;
mod schedules;
mod services;
mod sql;
mod timeline;
mod triggers;

use sqlx::mysql::MySqlDatabaseError;
use thiserror::Error;

pub use agents::{
    host_clocks, host_is_live, hosts_labelled, list_agents, record_agent_event, record_host_clocks,
    AgentRow, HostClock, CLOCK_CORRECTED_FROM_MS,
};
pub use odp_core::domain::ChannelKind;

pub use alerts::{claim_due_deliveries, record_attempt, AttemptOutcome, DueDelivery};
pub use blocks::{
    compact_profile, load_profile, load_profiles, load_windows_after, profiles_to_compact,
    Compacted, WindowsAfter,
};
pub use channels::{
    channel_deliveries, create_channel, delete_channel, get_channel, list_channels, update_channel,
    ChannelPatch, ChannelRow, DeliveryAttempt, DeliveryFilter, DeliveryRow, NewChannel,
};
pub use configurations::{Configuration, Configurations};
pub use continuous::{
    ContinuousPatch, ContinuousProfiles, ContinuousRow, NewContinuous, Segment, CONTINUOUS_LABEL,
    RELEASE_LABEL,
};
pub use database::{Backend, Database};
pub use detections::{
    previous_schedule_runs, profile_identity, profile_issues, rules_hit, save_detections,
    segment_baselines, AlertSubject, Issue, IssueStack, RuleText, SegmentBaselines,
    SEGMENT_BASELINE_PERIOD,
};
pub use enrollment::{
    Enrollment, EnrollmentTokenRow, EnrollmentTokens, NewEnrollmentToken, Refusal,
};
pub use identities::{Identities, IdentityRow, NewIdentity, Revocation};
pub use imports::{
    awaiting_detection, detection_done, import_profile, ingest_profile, ImportedMeta,
    IngestedProfile,
};
pub use ingest::{store_snapshots, ForeignSnapshot, IngestOutcome, SnapshotToStore};
pub use pool::{connect_with, PoolConfig};
pub use profiles::{
    Inserted, Labels, NewProfile, ProfileFilter, ProfileMode, ProfileRow, ProfileStatus, Profiles,
};
pub use query::{profile_frames, profile_stacks, ProfileStacks};
pub use read::{
    read, read_coverage, read_window_counts, CoverageByEvent, HostView, Read, ReadResult,
    ReadScope, Spans,
};
pub use reanalysis::{
    claim_reanalysis, finish_reanalysis, get_reanalysis, latest_reanalysis, reanalysis_batch,
    record_reanalysis_progress, release_reanalysis, Reanalysis, ReanalysisStatus,
};
pub use requests::{
    resolve_open_requests, NewRequest, RequestDeadlines, RequestFilter, RequestKind, RequestRow,
    RequestStatus, Requests,
};
pub use rollups::{
    block_cache, build_day, days_to_build, profiles_to_roll_up, roll_up, BlockCache,
    BlockCacheStats, DayBuilt, RolledUp, DAY_SETTLE,
};
pub use rules::{
    create_user_rule, get_rule, install_seed_rules, list_rules, save_user_rule, update_user_rule,
    RuleRow,
};
pub use runs::{NewRun, RunEnd, RunHost, RunHostRow, RunIssue, RunRow, RunState, Runs};
pub use schedules::{
    claim_run, Fired, NewSchedule, RunOutcome, SchedulePatch, ScheduleRow, ScheduleRunRow,
    SchedulerTick, Schedules, SCHEDULER_LOCK_KEY,
};
pub use services::{NewService, ServiceHost, ServicePatch, ServiceRow, Services};
pub use timeline::{profile_timeline, TimelineWindow};
pub use triggers::{
    Claim, FiringReport, FiringRow, HeldBack, NewTrigger, Settled, TriggerPatch, TriggerRow,
    Triggers,
};

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
    /// An argument the store cannot act on (a downsampling bucket that
    /// does not divide an hour): the caller's to check first.
    #[error("invalid argument: {0}")]
    Invalid(String),
    /// A read spans windows of several events, whose samples cannot be
    /// added (see [`read::Read::event`]).
    #[error(
        "the profiles read measure different events ({}): choose one with `event`",
        .0.iter().map(|e| e.as_str()).collect::<Vec<_>>().join(", ")
    )]
    MixedEvents(Vec<odp_core::EventKind>),
    /// A statement written once for both backends that cannot be
    /// rendered (a parameter without an argument): a bug, never input.
    #[error("malformed statement: {0}")]
    Statement(String),
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

    /// The unique key or constraint a [`Violation::Unique`] names:
    /// Postgres says it, MySQL and MariaDB only write it into the message
    /// (`… for key 'name'`, which MySQL 8 prefixes with the table).
    pub fn violated_key(&self) -> Option<&str> {
        let StoreError::Database(sqlx::Error::Database(db)) = self else {
            return None;
        };
        db.constraint()
            .or_else(|| key_of_duplicate_entry(db.message()))
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
            | StoreError::Invalid(_)
            | StoreError::MixedEvents(_)
            | StoreError::Statement(_)
            | StoreError::UnsupportedUrl(_) => false,
        }
    }
}

/// `outcome`, a unique key's refusal (a name taken) as a
/// [`StoreError::Conflict`] saying `taken`.
pub(crate) fn conflict_if_taken<T>(
    outcome: Result<T>,
    taken: impl FnOnce() -> String,
) -> Result<T> {
    match outcome {
        Err(e) if e.violation() == Some(Violation::Unique) => Err(StoreError::Conflict(taken())),
        other => other,
    }
}

/// A row this store just wrote, read back: its absence is corruption
/// (`what`, such as `schedule <id>`, vanished).
pub(crate) fn written<T>(row: Option<T>, what: impl FnOnce() -> String) -> Result<T> {
    row.ok_or_else(|| StoreError::Corrupt(format!("{} vanished", what())))
}

/// The key of MySQL's duplicate-entry error (1062): `… for key 'name'`,
/// which MySQL 8 prefixes with the table (`'profiles.name'`).
fn key_of_duplicate_entry(message: &str) -> Option<&str> {
    let (_, quoted) = message.rsplit_once("for key '")?;
    let key = quoted.strip_suffix('\'')?;
    Some(key.rsplit('.').next().unwrap_or(key))
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn duplicate_entries_name_their_key_on_both_servers() {
        // As MariaDB 10.11 and MySQL 8 word error 1062.
        let mariadb = "Duplicate entry 'h1-cpu-\u{1}' for key 'profiles_one_live_per_target'";
        let mysql8 = "Duplicate entry 'ci-k' for key 'profiles.profiles_idempotency'";
        assert_eq!(
            key_of_duplicate_entry(mariadb),
            Some("profiles_one_live_per_target")
        );
        assert_eq!(key_of_duplicate_entry(mysql8), Some("profiles_idempotency"));
        assert_eq!(key_of_duplicate_entry("Deadlock found"), None);
    }
}
