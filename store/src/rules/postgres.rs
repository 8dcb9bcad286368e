//! What rules do differently in Postgres: the seed pack is upserted in one
//! statement from a JSON recordset, refreshing only the seed rows it
//! changes; an upsert names the key it replaces on.

use odp_rules::RuleDef;

use super::Dialect;
use crate::database::Database;
use crate::sql::{Arg, Sql};
use crate::Result;

pub(super) const DIALECT: Dialect = Dialect {
    on_taken_id: "on conflict (id) do update set",
    new_value: ("excluded.", ""),
};

pub(super) async fn install_seed_rules(db: &Database, rules: &[RuleDef]) -> Result<u64> {
    Sql::new(
        "insert into rules (id, title, explanation, fix, link, kind, spec, threshold_pct,
                            service_thresholds, enabled, source)
         select id, title, explanation, fix, link, kind, spec, threshold_pct,
                service_thresholds, enabled, 'seed'
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
                excluded.service_thresholds, excluded.enabled)",
    )
    .bind(Arg::json(rules)?)
    .execute(db)
    .await
}
