//! Detection rules: the shipped seed pack and admins' own rules.
//!
//! A rule row's `source` says who owns it. Seed rows are refreshed from
//! the pack the pipeline ships each time it starts; writing a rule through
//! [`save_user_rule`] (an admin creating or editing one, seed ids included)
//! makes it `user`, and the pack never overwrites it again.

use std::collections::BTreeMap;

use chrono::{DateTime, Utc};
use odp_rules::RuleDef;
use sqlx::types::Json;

use crate::database::{Backend, Database};
use crate::reanalysis::{self, Reanalysis};
use crate::sql::{Arg, On, Sql, Tx};
use crate::{Result, Violation};

mod mysql;
mod postgres;

#[derive(Debug, Clone)]
pub struct RuleRow {
    pub rule: RuleDef,
    /// `seed` or `user`.
    pub source: String,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
}

/// A `rules` row as stored, read into a [`RuleRow`].
#[derive(sqlx::FromRow)]
struct StoredRule {
    id: String,
    title: String,
    explanation: String,
    fix: String,
    link: String,
    kind: String,
    spec: Json<serde_json::Value>,
    threshold_pct: f64,
    service_thresholds: Json<BTreeMap<String, f64>>,
    enabled: bool,
    source: String,
    created_at: DateTime<Utc>,
    updated_at: DateTime<Utc>,
}

impl From<StoredRule> for RuleRow {
    fn from(row: StoredRule) -> Self {
        RuleRow {
            rule: RuleDef {
                id: row.id,
                title: row.title,
                explanation: row.explanation,
                fix: row.fix,
                link: row.link,
                kind: row.kind,
                spec: row.spec.0,
                threshold_pct: row.threshold_pct,
                service_thresholds: row.service_thresholds.0,
                enabled: row.enabled,
            },
            source: row.source,
            created_at: row.created_at,
            updated_at: row.updated_at,
        }
    }
}

/// What the backends write differently in an upsert of a rule.
struct Dialect {
    /// Ends an insert whose id is taken with the assignments that follow.
    on_taken_id: &'static str,
    /// What stands before and after a field's name for the value the
    /// insert gave it, in those assignments.
    new_value: (&'static str, &'static str),
}

/// A rule's fields after its id, in column order.
const FIELDS: [&str; 9] = [
    "title",
    "explanation",
    "fix",
    "link",
    "kind",
    "spec",
    "threshold_pct",
    "service_thresholds",
    "enabled",
];

/// Inserts `rule` owned by `source`; `then` is what to do when its id
/// is taken (nothing: fail).
fn insert(rule: &RuleDef, source: &str, then: &str) -> Result<Sql> {
    bind_fields(
        Sql::new(format!(
            "insert into rules (id, {}, source)
             values ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11) {then}",
            FIELDS.join(", ")
        )),
        rule,
        source,
    )
}

/// Replaces every field of the rule with `rule`'s id and gives it to
/// `source`.
fn update(rule: &RuleDef, source: &str) -> Result<Sql> {
    let set: Vec<String> = FIELDS
        .iter()
        .zip(2..)
        .map(|(field, n)| format!("{field} = ${n}"))
        .collect();
    bind_fields(
        Sql::new(format!(
            "update rules set {}, source = $11, updated_at = {{now}} where id = $1",
            set.join(", ")
        )),
        rule,
        source,
    )
}

/// Binds `rule`'s id, its fields in column order, then `source`.
fn bind_fields(sql: Sql, rule: &RuleDef, source: &str) -> Result<Sql> {
    Ok(sql
        .bind(&rule.id)
        .bind(&rule.title)
        .bind(&rule.explanation)
        .bind(&rule.fix)
        .bind(&rule.link)
        .bind(&rule.kind)
        .bind(Arg::json(&rule.spec)?)
        .bind(rule.threshold_pct)
        .bind(Arg::json(&rule.service_thresholds)?)
        .bind(rule.enabled)
        .bind(source))
}

async fn read<'a>(on: impl Into<On<'a>>, id: &str) -> Result<Option<RuleRow>> {
    let row: Option<StoredRule> = Sql::by_id("*", "rules", id).fetch_optional(on).await?;
    Ok(row.map(RuleRow::from))
}

/// The rule this transaction just wrote.
async fn written(tx: &mut Tx, id: &str) -> Result<RuleRow> {
    crate::written(read(tx, id).await?, || format!("rule {id:?}"))
}

/// Installs the seed pack: new rules are inserted, seed rows refreshed when
/// the pack changed them; rules an admin owns are left alone. Returns how
/// many rows were written.
pub async fn install_seed_rules(db: impl Into<Database>, rules: &[RuleDef]) -> Result<u64> {
    let db = db.into();
    match db.backend() {
        Backend::Postgres => postgres::install_seed_rules(&db, rules).await,
        Backend::MySql => mysql::install_seed_rules(&db, rules).await,
    }
}

/// Creates or replaces a rule on an admin's behalf; from then on it is the
/// admin's and seeding never touches it.
pub async fn save_user_rule(db: impl Into<Database>, rule: &RuleDef) -> Result<RuleRow> {
    let db = db.into();
    let dialect = match db.backend() {
        Backend::Postgres => &postgres::DIALECT,
        Backend::MySql => &mysql::DIALECT,
    };
    let replaced: Vec<String> = FIELDS
        .iter()
        .map(|field| {
            let (before, after) = dialect.new_value;
            format!("{field} = {before}{field}{after}")
        })
        .collect();
    let upsert = insert(
        rule,
        "user",
        &format!(
            "{} {}, source = 'user', updated_at = {{now}}",
            dialect.on_taken_id,
            replaced.join(", ")
        ),
    )?;
    let mut tx = db.begin().await?;
    upsert.execute(&mut tx).await?;
    let row = written(&mut tx, &rule.id).await?;
    tx.commit().await?;
    Ok(row)
}

/// Creates an admin's rule and queues its re-analysis of past profiles, in
/// one transaction; `None` when the id is taken.
pub async fn create_user_rule(
    db: impl Into<Database>,
    rule: &RuleDef,
    requested_by: &str,
) -> Result<Option<(RuleRow, Reanalysis)>> {
    write_and_queue(db.into(), insert(rule, "user", "")?, &rule.id, requested_by).await
}

/// Replaces a rule (a seed rule becomes the admin's) and queues its
/// re-analysis of past profiles, in one transaction; `None` when there is
/// no such rule.
pub async fn update_user_rule(
    db: impl Into<Database>,
    rule: &RuleDef,
    requested_by: &str,
) -> Result<Option<(RuleRow, Reanalysis)>> {
    write_and_queue(db.into(), update(rule, "user")?, &rule.id, requested_by).await
}

/// Runs `write`, of an admin's rule `id`, then reads the rule back and
/// queues its re-analysis, in one transaction; `None`, keeping nothing,
/// when `write` wrote no row (an insert whose id is taken, an update of no
/// rule).
async fn write_and_queue(
    db: Database,
    write: Sql,
    id: &str,
    requested_by: &str,
) -> Result<Option<(RuleRow, Reanalysis)>> {
    let mut tx = db.begin().await?;
    // The write comes first, so a taken id (the only unique key) leaves
    // nothing of this transaction to keep. MySQL counts a matched row even
    // when nothing changed (CLIENT_FOUND_ROWS), as Postgres does.
    let wrote = match write.execute(&mut tx).await {
        Err(e) if e.violation() == Some(Violation::Unique) => 0,
        other => other?,
    };
    if wrote == 0 {
        return Ok(None);
    }
    let row = written(&mut tx, id).await?;
    let job = reanalysis::queue(&mut tx, id, requested_by).await?;
    tx.commit().await?;
    Ok(Some((row, job)))
}

/// The rule, if there is one with that id.
pub async fn get_rule(db: impl Into<Database>, id: &str) -> Result<Option<RuleRow>> {
    read(&db.into(), id).await
}

/// Every rule, by id.
pub async fn list_rules(db: impl Into<Database>) -> Result<Vec<RuleRow>> {
    let rows: Vec<StoredRule> = Sql::new("select * from rules order by id")
        .fetch_all(&db.into())
        .await?;
    Ok(rows.into_iter().map(RuleRow::from).collect())
}
