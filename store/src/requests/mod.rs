//! Control requests (deploy, undeploy, stop) and their lifecycle:
//! requested → dispatched (a command was sent) → running (a deployer
//! runs) → finished / failed.

use std::time::Duration;

use chrono::{DateTime, Utc};
use uuid::Uuid;

use crate::columns::{OptionalText, Text};
use crate::database::{on_backend, repository, Database};
use crate::sql::{Sql, Table};
use crate::{written, Result, StoreError};

use odp_core::command::UndeployMode;

mod mysql;
mod postgres;
pub use odp_core::domain::{RequestKind, RequestStatus};

/// A request as asked for.
#[derive(Debug, Clone, PartialEq, sqlx::FromRow)]
pub struct NewRequest {
    #[sqlx(try_from = "Text<RequestKind>")]
    pub kind: RequestKind,
    pub host: String,
    pub profile_id: Option<Uuid>,
    #[sqlx(try_from = "OptionalText<UndeployMode>")]
    pub mode: Option<UndeployMode>,
    pub requested_by: String,
}

/// A stored request: as asked for, and how far it got.
#[derive(Debug, Clone, PartialEq, sqlx::FromRow)]
pub struct RequestRow {
    pub id: Uuid,
    #[sqlx(flatten)]
    pub request: NewRequest,
    #[sqlx(try_from = "Text<RequestStatus>")]
    pub status: RequestStatus,
    pub status_reason: Option<String>,
    pub command_id: Option<Uuid>,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
}

/// The table and the columns of [`RequestRow`] (MySQL's table has one
/// more, generated).
const REQUESTS: Table = Table {
    name: "control_requests",
    columns: "id, kind, host, profile_id, mode, requested_by, status, status_reason, command_id, \
              created_at, updated_at",
};

#[derive(Debug, Clone, Default)]
pub struct RequestFilter {
    pub kind: Option<RequestKind>,
    pub host: Option<String>,
    pub open_only: bool,
    pub limit: i64,
}

repository! {
    /// Control requests, in whichever database the store runs on.
    Requests
}

impl Requests {
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
        Sql::new(
            "insert into control_requests (id, kind, host, profile_id, mode, requested_by, status)
             values ($1, $2, $3, $4, $5, $6, 'requested')",
        )
        .bind(id)
        .bind(request.kind.as_str())
        .bind(&request.host)
        .bind(request.profile_id)
        .bind(request.mode.map(UndeployMode::as_str))
        .bind(&request.requested_by)
        .execute(&self.db)
        .await?;
        written(self.get(id).await?, || format!("control request {id}"))
    }

    pub async fn get(&self, id: Uuid) -> Result<Option<RequestRow>> {
        REQUESTS.get(&self.db, id).await
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
        let moved = Sql::new(
            "update control_requests
             set status = $2, status_reason = coalesce($3, status_reason),
                 command_id = coalesce($4, command_id), updated_at = {now}
             where id = $1 and status in ('requested', 'dispatched', 'running')",
        )
        .bind(id)
        .bind(status.as_str())
        .bind(reason)
        .bind(command_id)
        .execute(&self.db)
        .await?;
        Ok(moved == 1)
    }

    /// Newest first.
    pub async fn list(&self, filter: &RequestFilter) -> Result<Vec<RequestRow>> {
        REQUESTS
            .select(
                "where ($1 is null or kind = $1)
                   and ($2 is null or host = $2)
                   and (not $3 or status in ('requested', 'dispatched', 'running'))
                 order by created_at desc, id
                 limit $4",
            )
            .bind(filter.kind.map(RequestKind::as_str))
            .bind(&filter.host)
            .bind(filter.open_only)
            .bind(filter.limit.clamp(1, 500))
            .fetch_all(&self.db)
            .await
    }
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
    let seconds = |secs: i64| Duration::from_secs(secs.max(0).unsigned_abs());
    let d = deadlines;
    let mut ended = Sql::new(
        "update control_requests
         set status = 'finished', status_reason = 'the agent is live', updated_at = {now}
         where kind = 'deploy' and status in ('requested', 'dispatched', 'running')
           and exists (select 1 from agents a
                       where a.host = control_requests.host
                         and a.last_seen >= control_requests.created_at)",
    )
    .execute(&db)
    .await?;
    ended += Sql::new(
        "update control_requests
         set status = 'finished', status_reason = 'the agent stopped', updated_at = {now}
         where kind = 'undeploy' and status = 'dispatched'
           and not exists (select 1 from agents a
                           where a.host = control_requests.host
                             and a.last_seen > {now} - $1)",
    )
    .bind(seconds(d.live_within_secs))
    .execute(&db)
    .await?;
    ended += on_backend!(db, finish_stopped())?;
    let overdue = [
        ("kind = 'deploy'", d.deploy_secs),
        ("kind = 'undeploy' and mode = 'drain'", d.drain_secs),
        (
            "kind <> 'deploy' and not (kind = 'undeploy' and coalesce(mode, '') = 'drain')",
            d.command_secs,
        ),
    ];
    for (kinds, deadline) in overdue {
        ended += Sql::new(format!(
            "update control_requests
             set status = 'failed', updated_at = {{now}}, status_reason = case
                 when kind = 'deploy' then 'no heartbeat from the host in time'
                 when kind = 'undeploy' then 'the agent still heartbeats'
                 else 'the profile did not end in time' end
             where status in ('requested', 'dispatched', 'running') and {kinds}
               and created_at < {{now}} - $1"
        ))
        .bind(seconds(deadline))
        .execute(&db)
        .await?;
    }
    Ok(ended)
}
