//! Rules in MySQL and MariaDB. Affected-row counts cannot tell an insert
//! from an unchanged upsert (sqlx sets CLIENT_FOUND_ROWS), so seeding reads
//! the pack's rows first and writes only the new and changed ones, counting
//! them itself. Reads after writes stand for `returning`.

use std::collections::HashMap;

use odp_rules::RuleDef;
use sqlx::mysql::{MySqlArguments, MySqlRow};
use sqlx::query::Query;
use sqlx::types::Json;
use sqlx::{FromRow, MySql, MySqlConnection, MySqlPool, QueryBuilder, Row};

use super::RuleRow;
use crate::alerts::mysql::is_unique_violation;
use crate::database::push_in_list;
use crate::reanalysis::Reanalysis;
use crate::{Result, StoreError};

impl<'r> FromRow<'r, MySqlRow> for RuleRow {
    fn from_row(row: &'r MySqlRow) -> sqlx::Result<Self> {
        let Json(spec) = row.try_get("spec")?;
        let Json(service_thresholds) = row.try_get("service_thresholds")?;
        Ok(RuleRow {
            rule: RuleDef {
                id: row.try_get("id")?,
                title: row.try_get("title")?,
                explanation: row.try_get("explanation")?,
                fix: row.try_get("fix")?,
                link: row.try_get("link")?,
                kind: row.try_get("kind")?,
                spec,
                threshold_pct: row.try_get("threshold_pct")?,
                service_thresholds,
                enabled: row.try_get("enabled")?,
            },
            source: row.try_get("source")?,
            created_at: row.try_get("created_at")?,
            updated_at: row.try_get("updated_at")?,
        })
    }
}

const INSERT: &str = "insert into rules (id, title, explanation, fix, link, kind, spec,
                      threshold_pct, service_thresholds, enabled, source)
                      values (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)";

/// Replaces every field of the rule `id` (bound last) and sets its source.
const UPDATE: &str = "update rules set
                          title = ?, explanation = ?, fix = ?, link = ?, kind = ?, spec = ?,
                          threshold_pct = ?, service_thresholds = ?, enabled = ?, source = ?,
                          updated_at = now(6)
                      where id = ?";

type RuleStatement<'q> = Query<'q, MySql, MySqlArguments>;

/// Binds a rule's fields after its id, in column order, then `source`.
fn bind_fields<'q>(
    query: RuleStatement<'q>,
    rule: &'q RuleDef,
    source: &'q str,
) -> RuleStatement<'q> {
    query
        .bind(&rule.title)
        .bind(&rule.explanation)
        .bind(&rule.fix)
        .bind(&rule.link)
        .bind(&rule.kind)
        .bind(Json(&rule.spec))
        .bind(rule.threshold_pct)
        .bind(Json(&rule.service_thresholds))
        .bind(rule.enabled)
        .bind(source)
}

fn insert<'q>(rule: &'q RuleDef, source: &'q str) -> RuleStatement<'q> {
    bind_fields(sqlx::query(INSERT).bind(&rule.id), rule, source)
}

fn update<'q>(rule: &'q RuleDef, source: &'q str) -> RuleStatement<'q> {
    bind_fields(sqlx::query(UPDATE), rule, source).bind(&rule.id)
}

async fn read(conn: &mut MySqlConnection, id: &str) -> Result<RuleRow> {
    let row: Option<RuleRow> = sqlx::query_as("select * from rules where id = ?")
        .bind(id)
        .fetch_optional(&mut *conn)
        .await?;
    row.ok_or_else(|| StoreError::Corrupt(format!("rule {id:?} vanished")))
}

pub(super) async fn install_seed_rules(pool: &MySqlPool, rules: &[RuleDef]) -> Result<u64> {
    if rules.is_empty() {
        return Ok(0);
    }
    let mut tx = pool.begin().await?;
    let mut stored = QueryBuilder::<MySql>::new("select * from rules where id in ");
    push_in_list(&mut stored, rules.iter().map(|r| r.id.as_str()));
    stored.push(" for update");
    let stored: HashMap<String, RuleRow> = stored
        .build_query_as::<RuleRow>()
        .fetch_all(&mut *tx)
        .await?
        .into_iter()
        .map(|row| (row.rule.id.clone(), row))
        .collect();
    let mut written = 0;
    for rule in rules {
        match stored.get(&rule.id) {
            None => {
                insert(rule, "seed").execute(&mut *tx).await?;
            }
            Some(row) if row.source == "seed" && row.rule != *rule => {
                update(rule, "seed").execute(&mut *tx).await?;
            }
            // Unchanged, or an admin's.
            Some(_) => continue,
        }
        written += 1;
    }
    tx.commit().await?;
    Ok(written)
}

pub(super) async fn save_user_rule(pool: &MySqlPool, rule: &RuleDef) -> Result<RuleRow> {
    let mut tx = pool.begin().await?;
    sqlx::query(
        "insert into rules (id, title, explanation, fix, link, kind, spec,
                            threshold_pct, service_thresholds, enabled, source)
         values (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
         on duplicate key update
             title = values(title), explanation = values(explanation), fix = values(fix),
             link = values(link), kind = values(kind), spec = values(spec),
             threshold_pct = values(threshold_pct),
             service_thresholds = values(service_thresholds), enabled = values(enabled),
             source = 'user', updated_at = now(6)",
    )
    .bind(&rule.id)
    .bind(&rule.title)
    .bind(&rule.explanation)
    .bind(&rule.fix)
    .bind(&rule.link)
    .bind(&rule.kind)
    .bind(Json(&rule.spec))
    .bind(rule.threshold_pct)
    .bind(Json(&rule.service_thresholds))
    .bind(rule.enabled)
    .bind("user")
    .execute(&mut *tx)
    .await?;
    let row = read(&mut tx, &rule.id).await?;
    tx.commit().await?;
    Ok(row)
}

pub(super) async fn create_user_rule(
    pool: &MySqlPool,
    rule: &RuleDef,
    requested_by: &str,
) -> Result<Option<(RuleRow, Reanalysis)>> {
    let mut tx = pool.begin().await?;
    match insert(rule, "user").execute(&mut *tx).await {
        Ok(_) => {}
        // The id is the only unique key: it is taken.
        Err(e) if is_unique_violation(&e) => return Ok(None),
        Err(e) => return Err(e.into()),
    }
    let row = read(&mut tx, &rule.id).await?;
    let job = crate::reanalysis::mysql::queue(&mut tx, &row.rule.id, requested_by).await?;
    tx.commit().await?;
    Ok(Some((row, job)))
}

pub(super) async fn update_user_rule(
    pool: &MySqlPool,
    rule: &RuleDef,
    requested_by: &str,
) -> Result<Option<(RuleRow, Reanalysis)>> {
    let mut tx = pool.begin().await?;
    // CLIENT_FOUND_ROWS: a matched row counts even when nothing changed.
    let matched = update(rule, "user")
        .execute(&mut *tx)
        .await?
        .rows_affected();
    if matched == 0 {
        return Ok(None);
    }
    let row = read(&mut tx, &rule.id).await?;
    let job = crate::reanalysis::mysql::queue(&mut tx, &row.rule.id, requested_by).await?;
    tx.commit().await?;
    Ok(Some((row, job)))
}

pub(super) async fn get_rule(pool: &MySqlPool, id: &str) -> Result<Option<RuleRow>> {
    Ok(
        sqlx::query_as::<_, RuleRow>("select * from rules where id = ?")
            .bind(id)
            .fetch_optional(pool)
            .await?,
    )
}

pub(super) async fn list_rules(pool: &MySqlPool) -> Result<Vec<RuleRow>> {
    Ok(
        sqlx::query_as::<_, RuleRow>("select * from rules order by id")
            .fetch_all(pool)
            .await?,
    )
}
