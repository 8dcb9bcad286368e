//! Triggers ([`odp_core::trigger`]): each trigger's configuration, what the
//! api-server syncs to agents, and the ledger of firings in which the
//! api-server decides, one report at a time, whether a firing may start a
//! profile.

mod firings;

pub use firings::{Claim, FiringReport, FiringRow, HeldBack, Settled};

use chrono::{DateTime, Utc};
use odp_core::trigger::{TriggerAssignment, TriggerCondition};
use odp_core::EventKind;
use uuid::Uuid;

use crate::columns::{host_list, whole, Text};
use crate::configurations::{Configuration, Configurations};
use crate::database::Database;
use crate::sql::{Arg, Sql, Table};
use crate::{written, Result};

/// A trigger as the store keeps it.
#[derive(Debug, Clone, PartialEq, sqlx::FromRow)]
pub struct TriggerRow {
    pub id: Uuid,
    pub service: String,
    #[sqlx(json)]
    pub condition: TriggerCondition,
    pub duration_secs: i32,
    #[sqlx(try_from = "Text<EventKind>")]
    pub event: EventKind,
    pub frequency_hz: i32,
    pub cooldown_secs: i32,
    pub max_concurrent: i32,
    /// The hosts that watch it, sorted; `None`: every host running it.
    #[sqlx(json)]
    pub hosts: Option<Vec<String>>,
    pub enabled: bool,
    pub fired: i64,
    pub held_back: i64,
    pub last_fired_at: Option<DateTime<Utc>>,
    pub held_back_since: Option<DateTime<Utc>>,
    pub held_back_reason: Option<String>,
    pub created_by: String,
    pub updated_by: String,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
}

impl Configuration for TriggerRow {
    type Assignment = TriggerAssignment;

    fn assignment(&self) -> TriggerAssignment {
        TriggerAssignment {
            id: self.id,
            service: self.service.clone(),
            condition: self.condition,
            cooldown_secs: self.cooldown_secs.unsigned_abs(),
            hosts: self.hosts.clone(),
        }
    }
}

/// A trigger to create; the API checks its values first.
#[derive(Debug, Clone)]
pub struct NewTrigger {
    pub service: String,
    pub condition: TriggerCondition,
    pub duration_secs: u32,
    pub event: EventKind,
    pub frequency_hz: u32,
    pub cooldown_secs: u32,
    pub max_concurrent: u32,
    pub hosts: Option<Vec<String>>,
    pub created_by: String,
}

/// A change: what is `Some` is replaced (`hosts: Some(None)` is every
/// host).
#[derive(Debug, Clone, Default)]
pub struct TriggerPatch {
    pub condition: Option<TriggerCondition>,
    pub duration_secs: Option<u32>,
    pub event: Option<EventKind>,
    pub frequency_hz: Option<u32>,
    pub cooldown_secs: Option<u32>,
    pub max_concurrent: Option<u32>,
    pub hosts: Option<Option<Vec<String>>>,
    pub enabled: Option<bool>,
}

pub(crate) const TRIGGERS: Table = Table {
    name: "triggers",
    columns: "id, service, \"condition\", duration_secs, event, frequency_hz, cooldown_secs,
              max_concurrent, hosts, enabled, fired, held_back, last_fired_at, held_back_since,
              held_back_reason, created_by, updated_by, created_at, updated_at",
};

/// Triggers, in whichever database the store runs on.
pub type Triggers = Configurations<TriggerRow>;

impl Triggers {
    pub fn new(db: impl Into<Database>) -> Self {
        Configurations::over(db, TRIGGERS)
    }

    pub async fn create(&self, new: &NewTrigger) -> Result<TriggerRow> {
        let id = Uuid::new_v4();
        Sql::new(
            "insert into triggers (id, service, \"condition\", duration_secs, event, frequency_hz,
                                   cooldown_secs, max_concurrent, hosts, created_by, updated_by)
             values ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $10)",
        )
        .bind(id)
        .bind(&new.service)
        .bind(Arg::json(&new.condition)?)
        .bind(whole(new.duration_secs)?)
        .bind(new.event.as_str())
        .bind(whole(new.frequency_hz)?)
        .bind(whole(new.cooldown_secs)?)
        .bind(whole(new.max_concurrent)?)
        .bind(host_list(&new.hosts)?)
        .bind(&new.created_by)
        .execute(&self.db)
        .await?;
        written(self.get(id).await?, || format!("trigger {id}"))
    }

    /// Every trigger, by service, oldest first within one.
    pub async fn list(&self) -> Result<Vec<TriggerRow>> {
        TRIGGERS
            .list(&self.db, "order by service, created_at, id")
            .await
    }

    /// Applies `patch`, recording who changed it; `None` when no such
    /// trigger.
    pub async fn update(
        &self,
        id: Uuid,
        patch: &TriggerPatch,
        updated_by: &str,
    ) -> Result<Option<TriggerRow>> {
        let condition = patch.condition.as_ref().map(Arg::json).transpose()?;
        let own = TRIGGERS
            .patch()
            .replace_if(
                condition.is_some(),
                "\"condition\"",
                match condition {
                    Some(json) => json,
                    None => Arg::json(&serde_json::Value::Null)?,
                },
            )
            .keep_unless_given("duration_secs", patch.duration_secs.map(whole).transpose()?)
            .keep_unless_given("event", patch.event.map(EventKind::as_str))
            .keep_unless_given("frequency_hz", patch.frequency_hz.map(whole).transpose()?)
            .keep_unless_given("cooldown_secs", patch.cooldown_secs.map(whole).transpose()?)
            .keep_unless_given(
                "max_concurrent",
                patch.max_concurrent.map(whole).transpose()?,
            );
        self.change(id, own, &patch.hosts, patch.enabled, updated_by)
            .await
    }
}
