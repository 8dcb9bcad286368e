//! Services: defined once (name, target, owning team) and reused by runs,
//! schedules, rules and alerts; and the hosts that run one, from the
//! agents' heartbeats.

use std::collections::{BTreeMap, HashMap};
use std::time::Duration;

use chrono::{DateTime, Utc};
use odp_core::Target;

use crate::database::repository;
use crate::sql::{Arg, Sql, Table};
use crate::{conflict_if_taken, written, Result};

/// A service as the store keeps it: as defined, and when.
#[derive(Debug, Clone, PartialEq, sqlx::FromRow)]
pub struct ServiceRow {
    #[sqlx(flatten)]
    pub service: NewService,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
}

/// A service to define; names are checked by the API before they get here.
#[derive(Debug, Clone, PartialEq, sqlx::FromRow)]
pub struct NewService {
    pub name: String,
    #[sqlx(json)]
    pub target: Target,
    pub owner_team: Option<String>,
    pub description: Option<String>,
    pub created_by: String,
}

/// A change to a service: what is `Some` is replaced.
#[derive(Debug, Clone, Default)]
pub struct ServicePatch {
    pub target: Option<Target>,
    pub owner_team: Option<Option<String>>,
    pub description: Option<Option<String>>,
}

/// A live host running a service, with the labels its agent reported.
#[derive(Debug, Clone, PartialEq)]
pub struct ServiceHost {
    pub host: String,
    pub agent_id: String,
    pub labels: BTreeMap<String, String>,
    pub last_seen: DateTime<Utc>,
}

const SERVICES: Table = Table {
    name: "services",
    columns: "name, target, owner_team, description, created_by, created_at, updated_at",
};

repository! {
    /// Service definitions, in whichever database the store runs on.
    Services
}

impl Services {
    /// Defines a service; a name already defined is a
    /// [`crate::StoreError::Conflict`].
    pub async fn create(&self, new: &NewService) -> Result<ServiceRow> {
        let inserted = Sql::new(
            "insert into services (name, target, owner_team, description, created_by)
             values ($1, $2, $3, $4, $5)",
        )
        .bind(&new.name)
        .bind(Arg::json(&new.target)?)
        .bind(new.owner_team.as_deref())
        .bind(new.description.as_deref())
        .bind(&new.created_by)
        .execute(&self.db)
        .await;
        conflict_if_taken(inserted, || {
            format!("service {:?} is already defined", new.name)
        })?;
        written(self.get(&new.name).await?, || {
            format!("service {:?}", new.name)
        })
    }

    pub async fn get(&self, name: &str) -> Result<Option<ServiceRow>> {
        SERVICES
            .select("where name = $1")
            .bind(name)
            .fetch_optional(&self.db)
            .await
    }

    /// Every service, by name.
    pub async fn list(&self) -> Result<Vec<ServiceRow>> {
        SERVICES.list(&self.db, "order by name").await
    }

    /// Applies `patch`; `None` when no such service.
    pub async fn update(&self, name: &str, patch: &ServicePatch) -> Result<Option<ServiceRow>> {
        let target = patch.target.as_ref().map(Arg::json).transpose()?;
        let changed = SERVICES
            .patch()
            .keep_unless_given("target", target.unwrap_or(Arg::Json(None)))
            .replace_if(
                patch.owner_team.is_some(),
                "owner_team",
                patch.owner_team.clone().flatten(),
            )
            .replace_if(
                patch.description.is_some(),
                "description",
                patch.description.clone().flatten(),
            )
            .of_row("name", name)
            .execute(&self.db)
            .await?;
        if changed == 0 {
            return Ok(None);
        }
        self.get(name).await
    }

    /// Removes a service; whether it existed.
    pub async fn delete(&self, name: &str) -> Result<bool> {
        let deleted = Sql::new("delete from services where name = $1")
            .bind(name)
            .execute(&self.db)
            .await?;
        Ok(deleted == 1)
    }

    /// The hosts whose agent heartbeated within `live_within` and reported
    /// a live process of `service`, by host. A host's latest heartbeat
    /// speaks for it (an agent restarted under a new id replaces the old).
    pub async fn hosts_running(
        &self,
        service: &str,
        live_within: Duration,
    ) -> Result<Vec<ServiceHost>> {
        let rows: Vec<HeartbeatRow> = Sql::new(
            "select host, agent_id, labels, services, last_seen from agents
             where last_seen > {now} - $1
             order by host, last_seen desc",
        )
        .bind(live_within)
        .fetch_all(&self.db)
        .await?;
        Ok(latest_per_host(rows)
            .into_iter()
            .filter(|row| row.services.iter().any(|s| s == service))
            .map(|row| ServiceHost {
                host: row.host,
                agent_id: row.agent_id,
                labels: row.labels,
                last_seen: row.last_seen,
            })
            .collect())
    }
}

#[derive(sqlx::FromRow)]
struct HeartbeatRow {
    host: String,
    agent_id: String,
    #[sqlx(json)]
    labels: BTreeMap<String, String>,
    #[sqlx(json)]
    services: Vec<String>,
    last_seen: DateTime<Utc>,
}

/// Each host's most recent heartbeat row, in host order.
fn latest_per_host(rows: Vec<HeartbeatRow>) -> Vec<HeartbeatRow> {
    let mut latest: HashMap<String, HeartbeatRow> = HashMap::new();
    for row in rows {
        match latest.get(&row.host) {
            Some(kept) if kept.last_seen >= row.last_seen => {}
            _ => {
                latest.insert(row.host.clone(), row);
            }
        }
    }
    let mut hosts: Vec<HeartbeatRow> = latest.into_values().collect();
    hosts.sort_by(|a, b| a.host.cmp(&b.host));
    hosts
}
