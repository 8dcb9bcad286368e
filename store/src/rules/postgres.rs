//! Rules in Postgres.

use odp_rules::RuleDef;
use sqlx::postgres::{PgArguments, PgRow};
use sqlx::query::QueryAs;
use sqlx::types::Json;
use sqlx::{FromRow, PgPool, Postgres, Row};

use super::RuleRow;
use crate::reanalysis::Reanalysis;
use crate::Result;

impl<'r> FromRow<'r, PgRow> for RuleRow {
    fn from_row(row: &'r PgRow) -> sqlx::Result<Self> {
        let Json(service_thresholds) = row.try_get("service_thresholds")?;
        Ok(RuleRow {
            rule: RuleDef {
                id: row.try_get("id")?,
                title: row.try_get("title")?,
                explanation: row.try_get("explanation")?,
                fix: row.try_get("fix")?,
                link: row.try_get("link")?,
                kind: row.try_get("kind")?,
                spec: row.try_get("spec")?,
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

const COLUMNS: &str = "id, title, explanation, fix, link, kind, spec, threshold_pct,
                       service_thresholds, enabled";

pub(super) async fn install_seed_rules(pool: &PgPool, rules: &[RuleDef]) -> Result<u64> {
    let result = sqlx::query(&format!(
        "insert into rules ({COLUMNS}, source)
         select {COLUMNS}, 'seed'
         from jsonb_to_recordset($1) as r(id text, title text, explanation text, fix text,
             link text, kind text, spec jsonb, threshold_pct float8, service_thresholds jsonb,
             enabled boolean)
         on conflict (id) do update set
             title = excluded.title, explanation = excluded.explanation, fix = excluded.fix,
             link = excluded.link, kind = excluded.kind, spec = excluded.spec,
             threshold_pct = excluded.threshold_pct,
             service_thresholds = excluded.service_thresholds, enabled = excluded.enabled,
             updated_at = now()
         where rules.source = 'seed'
           and (rules.id, rules.title, rules.explanation, rules.fix, rules.link, rules.kind,
                rules.spec, rules.threshold_pct, rules.service_thresholds, rules.enabled)
               is distinct from
               (excluded.id, excluded.title, excluded.explanation, excluded.fix, excluded.link,
                excluded.kind, excluded.spec, excluded.threshold_pct,
                excluded.service_thresholds, excluded.enabled)"
    ))
    .bind(Json(rules))
    .execute(pool)
    .await?;
    Ok(result.rows_affected())
}

type RuleQuery<'q> = QueryAs<'q, Postgres, RuleRow, PgArguments>;

/// Binds a rule's fields as `$1`..`$10` in column order.
fn bind_rule<'q>(query: RuleQuery<'q>, rule: &'q RuleDef) -> RuleQuery<'q> {
    query
        .bind(&rule.id)
        .bind(&rule.title)
        .bind(&rule.explanation)
        .bind(&rule.fix)
        .bind(&rule.link)
        .bind(&rule.kind)
        .bind(&rule.spec)
        .bind(rule.threshold_pct)
        .bind(Json(&rule.service_thresholds))
        .bind(rule.enabled)
}

const INSERT_USER_RULE: &str = "insert into rules (id, title, explanation, fix, link, kind, spec,
                                threshold_pct, service_thresholds, enabled, source)
                                values ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, 'user')";

pub(super) async fn save_user_rule(pool: &PgPool, rule: &RuleDef) -> Result<RuleRow> {
    let sql = format!(
        "{INSERT_USER_RULE}
         on conflict (id) do update set
             title = excluded.title, explanation = excluded.explanation, fix = excluded.fix,
             link = excluded.link, kind = excluded.kind, spec = excluded.spec,
             threshold_pct = excluded.threshold_pct,
             service_thresholds = excluded.service_thresholds, enabled = excluded.enabled,
             source = 'user', updated_at = now()
         returning *"
    );
    Ok(bind_rule(sqlx::query_as(&sql), rule)
        .fetch_one(pool)
        .await?)
}

pub(super) async fn create_user_rule(
    pool: &PgPool,
    rule: &RuleDef,
    requested_by: &str,
) -> Result<Option<(RuleRow, Reanalysis)>> {
    let mut tx = pool.begin().await?;
    let sql = format!("{INSERT_USER_RULE} on conflict (id) do nothing returning *");
    let Some(row) = bind_rule(sqlx::query_as(&sql), rule)
        .fetch_optional(&mut *tx)
        .await?
    else {
        return Ok(None);
    };
    let job = crate::reanalysis::postgres::queue(&mut tx, &row.rule.id, requested_by).await?;
    tx.commit().await?;
    Ok(Some((row, job)))
}

pub(super) async fn update_user_rule(
    pool: &PgPool,
    rule: &RuleDef,
    requested_by: &str,
) -> Result<Option<(RuleRow, Reanalysis)>> {
    let mut tx = pool.begin().await?;
    let sql = "update rules set
                   title = $2, explanation = $3, fix = $4, link = $5, kind = $6, spec = $7,
                   threshold_pct = $8, service_thresholds = $9, enabled = $10,
                   source = 'user', updated_at = now()
               where id = $1
               returning *";
    let Some(row) = bind_rule(sqlx::query_as(sql), rule)
        .fetch_optional(&mut *tx)
        .await?
    else {
        return Ok(None);
    };
    let job = crate::reanalysis::postgres::queue(&mut tx, &row.rule.id, requested_by).await?;
    tx.commit().await?;
    Ok(Some((row, job)))
}

pub(super) async fn get_rule(pool: &PgPool, id: &str) -> Result<Option<RuleRow>> {
    Ok(
        sqlx::query_as::<_, RuleRow>("select * from rules where id = $1")
            .bind(id)
            .fetch_optional(pool)
            .await?,
    )
}

pub(super) async fn list_rules(pool: &PgPool) -> Result<Vec<RuleRow>> {
    Ok(
        sqlx::query_as::<_, RuleRow>("select * from rules order by id")
            .fetch_all(pool)
            .await?,
    )
}
