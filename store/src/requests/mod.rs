//! Control requests (deploy, undeploy, stop) and their lifecycle:
//! requested → dispatched (a command was sent) → running (a deployer
//! runs) → finished / failed.

use chrono::{DateTime, Utc};
use uuid::Uuid;

use crate::columns::{OptionalText, Text};
use crate::database::{on_backend, Database};
use crate::{Result, StoreError};

use odp_api_types::UndeployMode;

mod mysql;
mod postgres;
pub use odp_api_types::{RequestKind, RequestStatus};

#[derive(Debug, Clone)]
pub struct NewRequest {
    pub kind: RequestKind,
    pub host: String,
    pub profile_id: Option<Uuid>,
    pub mode: Option<UndeployMode>,
    pub requested_by: String,
}

#[derive(Debug, Clone, PartialEq, sqlx::FromRow)]
pub struct RequestRow {
    pub id: Uuid,
    #[sqlx(try_from = "Text<RequestKind>")]
    pub kind: RequestKind,
    pub host: String,
    pub profile_id: Option<Uuid>,
    #[sqlx(try_from = "OptionalText<UndeployMode>")]
    pub mode: Option<UndeployMode>,
    pub requested_by: String,
    #[sqlx(try_from = "Text<RequestStatus>")]
    pub status: RequestStatus,
    pub status_reason: Option<String>,
    pub command_id: Option<Uuid>,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
}

impl From<RequestRow> for odp_api_types::ControlRequest {
    fn from(row: RequestRow) -> Self {
        odp_api_types::ControlRequest {
            id: row.id,
            kind: row.kind,
            host: row.host,
            profile_id: row.profile_id,
            mode: row.mode,
            requested_by: row.requested_by,
            status: row.status,
            status_reason: row.status_reason,
            command_id: row.command_id,
            created_at: row.created_at,
            updated_at: row.updated_at,
        }
    }
}

/// The columns of [`RequestRow`] (MySQL's table has one more, generated).
const COLUMNS: &str = "id, kind, host, profile_id, mode, requested_by, status, status_reason, \
                       command_id, created_at, updated_at";

#[derive(Debug, Clone, Default)]
pub struct RequestFilter {
    pub kind: Option<RequestKind>,
    pub host: Option<String>,
    pub open_only: bool,
    pub limit: i64,
}

/// Control requests, in whichever database the store runs on.
#[derive(Clone)]
pub struct Requests {
    db: Database,
}

impl Requests {
    pub fn new(db: impl Into<Database>) -> Self {
        Requests { db: db.into() }
    }

    /// Records a request. A deploy for a host that already has one in
    /// flight returns that one instead (`Err(existing)`), so the deployer
    /// never runs twice for a host.
    pub async fn insert(
        &self,
        request: &NewRequest,
    ) -> Result<std::result::Result<RequestRow, RequestRow>> {
        match self.insert_new(request).await {
            Ok(row) => Ok(Ok(row)),
            Err(StoreError::Database(sqlx::Error::Database(db))) if db.is_unique_violation() => {
                let open = RequestFilter {
                    kind: Some(request.kind),
                    host: Some(request.host.clone()),
                    open_only: true,
                    limit: 1,
                };
                match self.list(&open).await?.into_iter().next() {
                    Some(existing) => Ok(Err(existing)),
                    // It ended in between: this one may go ahead.
                    None => self.insert_new(request).await.map(Ok),
                }
            }
            Err(e) => Err(e),
        }
    }

    async fn insert_new(&self, request: &NewRequest) -> Result<RequestRow> {
        let id = Uuid::new_v4();
        on_backend!(self.db, insert(id, request))
    }

    pub async fn get(&self, id: Uuid) -> Result<Option<RequestRow>> {
        on_backend!(self.db, get(id))
    }

    /// Moves an open request to `status`; a request that already ended
    /// keeps its end state. Returns whether it moved.
    pub async fn transition(
        &self,
        id: Uuid,
        status: RequestStatus,
        reason: Option<&str>,
        command_id: Option<Uuid>,
    ) -> Result<bool> {
        let moved = RequestMove {
            id,
            status,
            reason,
            command_id,
        };
        on_backend!(self.db, transition(&moved))
    }

    /// Newest first.
    pub async fn list(&self, filter: &RequestFilter) -> Result<Vec<RequestRow>> {
        on_backend!(self.db, list(filter))
    }
}

struct RequestMove<'a> {
    id: Uuid,
    status: RequestStatus,
    reason: Option<&'a str>,
    command_id: Option<Uuid>,
}

/// How long each kind of request may stay open before it is failed.
#[derive(Debug, Clone, Copy)]
pub struct RequestDeadlines {
    /// A host counts as live while its last heartbeat is this recent.
    pub live_within_secs: i64,
    pub deploy_secs: i64,
    /// `undeploy mode=now` and `stop`.
    pub command_secs: i64,
    /// `undeploy mode=drain` waits for the host's profiles to end.
    pub drain_secs: i64,
}

/// Moves open requests to their end state from what the database shows:
/// a deploy ends when its host heartbeats after it was asked for, an
/// undeploy when the host stops heartbeating, a stop when its profile
/// ends; requests past their deadline fail. Returns how many ended.
/// Safe to run from several api-server replicas at once.
pub async fn resolve_open_requests(
    db: impl Into<Database>,
    deadlines: RequestDeadlines,
) -> Result<u64> {
    let db: Database = db.into();
    on_backend!(db, resolve_open(deadlines))
}
