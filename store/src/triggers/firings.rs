//! The firings of triggers: each agent report, recorded once, with what
//! the api-server made of it.
//!
//! A report is claimed in one transaction that locks its trigger's row, so
//! concurrent reports of one trigger (from many hosts, read by every
//! api-server replica) are decided one after another: the same report
//! twice is seen as such (the `(trigger, host, held_since_ms)` key), the
//! host's cooldown is counted from the firings that started profiles (by
//! the agent's times of them, which the agent keeps its cooldown by), and
//! the cap counts the trigger's profiles still live plus the firings
//! claimed to start one that have not yet named it (for a minute).

use chrono::{DateTime, Utc};
use std::time::Duration;
use uuid::Uuid;

use super::{TriggerRow, Triggers, TRIGGERS};
use crate::sql::Sql;
use crate::{Result, Violation};

/// An agent's report that a trigger's condition held on its host.
#[derive(Debug, Clone)]
pub struct FiringReport {
    pub trigger_id: Uuid,
    pub host: String,
    pub held_since_ms: i64,
    pub observed: f64,
}

/// Why a firing started nothing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HeldBack {
    Cooldown,
    Capped,
}

impl HeldBack {
    pub fn as_str(self) -> &'static str {
        match self {
            HeldBack::Cooldown => "cooldown",
            HeldBack::Capped => "capped",
        }
    }
}

/// What the ledger made of a report.
#[derive(Debug, Clone, PartialEq)]
pub enum Claim {
    /// No such trigger (deleted since the agent's last sync).
    Unknown,
    /// The trigger is turned off.
    Disabled,
    /// This report was claimed before (redelivered, or read by another
    /// replica).
    Seen,
    /// Recorded and held back; `first` when it is the first held back
    /// since the trigger last started a profile: what is reported.
    HeldBack {
        firing: Uuid,
        why: HeldBack,
        first: bool,
    },
    /// Recorded as starting a profile: the caller starts it and settles
    /// the firing ([`Triggers::settle`]).
    Start {
        firing: Uuid,
        trigger: Box<TriggerRow>,
    },
}

/// What became of a firing claimed to start.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Settled<'a> {
    /// Its profile started.
    Started(Uuid),
    /// The target was being profiled already, by `profile`.
    Busy { profile: Uuid, reason: &'a str },
    /// The profile could not be started.
    Failed(&'a str),
}

/// A firing as the store keeps it.
#[derive(Debug, Clone, PartialEq, sqlx::FromRow)]
pub struct FiringRow {
    pub id: Uuid,
    pub trigger_id: Uuid,
    pub host: String,
    pub held_since_ms: i64,
    pub observed: f64,
    pub fired_at: DateTime<Utc>,
    pub outcome: String,
    pub reason: Option<String>,
    pub profile_id: Option<Uuid>,
}

/// The firing outcome a claim to start records until it is settled.
const STARTED: &str = "started";
/// How long a claim to start holds a place under the cap before its
/// profile is named: an api-server that died between the claim and the
/// start frees it after this.
const SETTLING: Duration = Duration::from_secs(60);

impl Triggers {
    /// Records `report` and decides, under its trigger's row lock, whether
    /// it may start a profile.
    pub async fn claim(&self, report: &FiringReport) -> Result<Claim> {
        let mut tx = self.db.begin().await?;
        let trigger: Option<TriggerRow> = TRIGGERS
            .select("where id = $1 for update")
            .bind(report.trigger_id)
            .fetch_optional(&mut tx)
            .await?;
        let Some(trigger) = trigger else {
            return Ok(Claim::Unknown);
        };
        if !trigger.enabled {
            return Ok(Claim::Disabled);
        }
        let held_back = held_back(&mut tx, &trigger, report).await?;
        let firing = Uuid::new_v4();
        let outcome = held_back.map_or(STARTED, HeldBack::as_str);
        let inserted = Sql::new(
            "insert into trigger_firings (id, trigger_id, host, held_since_ms, observed, outcome)
             values ($1, $2, $3, $4, $5, $6)",
        )
        .bind(firing)
        .bind(report.trigger_id)
        .bind(&report.host)
        .bind(report.held_since_ms)
        .bind(report.observed)
        .bind(outcome)
        .execute(&mut tx)
        .await;
        match inserted {
            Ok(_) => {}
            Err(e) if e.violation() == Some(Violation::Unique) => return Ok(Claim::Seen),
            Err(e) => return Err(e),
        }
        let claim = match held_back {
            None => Claim::Start {
                firing,
                trigger: Box::new(trigger),
            },
            Some(why) => {
                Sql::new(
                    "update triggers set held_back = held_back + 1,
                         held_back_reason = case when held_back_since is null then $2
                                                 else held_back_reason end,
                         held_back_since = coalesce(held_back_since, {now})
                     where id = $1",
                )
                .bind(report.trigger_id)
                .bind(why.as_str())
                .execute(&mut tx)
                .await?;
                Claim::HeldBack {
                    firing,
                    why,
                    first: trigger.held_back_since.is_none(),
                }
            }
        };
        tx.commit().await?;
        Ok(claim)
    }

    /// Records what became of a firing claimed to start: started with its
    /// profile (the trigger counts it, and its held-back state ends), or
    /// busy / failed with the reason (and the live profile that made it
    /// busy).
    pub async fn settle(&self, firing: Uuid, settled: Settled<'_>) -> Result<()> {
        let (outcome, reason, profile_id) = match settled {
            Settled::Started(profile) => (STARTED, None, Some(profile)),
            Settled::Busy { profile, reason } => ("busy", Some(reason), Some(profile)),
            Settled::Failed(reason) => ("failed", Some(reason), None),
        };
        let mut tx = self.db.begin().await?;
        Sql::new(
            "update trigger_firings set outcome = $2, reason = $3, profile_id = $4
             where id = $1",
        )
        .bind(firing)
        .bind(outcome)
        .bind(reason)
        .bind(profile_id)
        .execute(&mut tx)
        .await?;
        if outcome == STARTED {
            Sql::new(
                "update triggers set fired = fired + 1, last_fired_at = {now},
                     held_back_since = null, held_back_reason = null
                 where id = (select trigger_id from trigger_firings where id = $1)",
            )
            .bind(firing)
            .execute(&mut tx)
            .await?;
        }
        tx.commit().await
    }

    /// The latest `limit` firings of a trigger, newest first.
    pub async fn firings(&self, trigger_id: Uuid, limit: i64) -> Result<Vec<FiringRow>> {
        Sql::new(
            "select id, trigger_id, host, held_since_ms, observed, fired_at, outcome, reason,
                    profile_id
             from trigger_firings where trigger_id = $1
             order by fired_at desc, id limit $2",
        )
        .bind(trigger_id)
        .bind(limit)
        .fetch_all(&self.db)
        .await
    }
}

/// How much shorter than the cooldown two firings of a host may be apart:
/// an agent's period starts within a tick of a second of where it should.
const COOLDOWN_SLACK_MS: i64 = 1000;

/// Why `report` may not start a profile now: its host fired within the
/// cooldown, or the trigger's live profiles reached its cap.
async fn held_back(
    tx: &mut crate::sql::Tx,
    trigger: &TriggerRow,
    report: &FiringReport,
) -> Result<Option<HeldBack>> {
    // Measured on the agent's clock, between the periods the firings
    // report, as the agent keeps its cooldown: by the times they reach
    // this server, a firing exactly one cooldown after the last can look
    // early by however much sooner it was delivered.
    let within_ms = (i64::from(trigger.cooldown_secs) * 1000 - COOLDOWN_SLACK_MS).max(0);
    let recent: Option<i64> = Sql::new(
        "select count(*) from trigger_firings
         where trigger_id = $1 and host = $2 and outcome = 'started'
           and held_since_ms > $3 - $4 and held_since_ms < $3 + $4",
    )
    .bind(trigger.id)
    .bind(&report.host)
    .bind(report.held_since_ms)
    .bind(within_ms)
    .fetch_value(&mut *tx)
    .await?;
    if recent.unwrap_or(0) > 0 {
        return Ok(Some(HeldBack::Cooldown));
    }
    let live: Option<i64> = Sql::new(
        "select count(*) from trigger_firings f left join profiles p on p.id = f.profile_id
         where f.trigger_id = $1 and f.outcome = 'started'
           and (p.status in ('requested', 'dispatched', 'running')
                or (f.profile_id is null and f.fired_at > {now} - $2))",
    )
    .bind(trigger.id)
    .bind(SETTLING)
    .fetch_value(&mut *tx)
    .await?;
    if live.unwrap_or(0) >= i64::from(trigger.max_concurrent) {
        return Ok(Some(HeldBack::Capped));
    }
    Ok(None)
}
