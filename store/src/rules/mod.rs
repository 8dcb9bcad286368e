//! Detection rules: the shipped seed pack and admins' own rules.
//!
//! A rule row's `source` says who owns it. Seed rows are refreshed from
//! the pack the pipeline ships each time it starts; writing a rule through
//! [`save_user_rule`] (an admin creating or editing one, seed ids included)
//! makes it `user`, and the pack never overwrites it again.

use chrono::{DateTime, Utc};
use odp_rules::RuleDef;

use crate::database::{on_backend, Database};
use crate::reanalysis::Reanalysis;
use crate::Result;

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

impl From<RuleRow> for odp_api_types::Rule {
    fn from(row: RuleRow) -> Self {
        let rule = row.rule;
        odp_api_types::Rule {
            id: rule.id,
            title: rule.title,
            explanation: rule.explanation,
            fix: rule.fix,
            link: rule.link,
            kind: rule.kind,
            spec: rule.spec,
            threshold_pct: rule.threshold_pct,
            service_thresholds: rule.service_thresholds,
            enabled: rule.enabled,
            source: row.source,
            created_at: row.created_at,
            updated_at: row.updated_at,
        }
    }
}

/// Installs the seed pack: new rules are inserted, seed rows refreshed when
/// the pack changed them; rules an admin owns are left alone. Returns how
/// many rows were written.
pub async fn install_seed_rules(db: impl Into<Database>, rules: &[RuleDef]) -> Result<u64> {
    let db = db.into();
    on_backend!(db, install_seed_rules(rules))
}

/// Creates or replaces a rule on an admin's behalf; from then on it is the
/// admin's and seeding never touches it.
pub async fn save_user_rule(db: impl Into<Database>, rule: &RuleDef) -> Result<RuleRow> {
    let db = db.into();
    on_backend!(db, save_user_rule(rule))
}

/// Creates an admin's rule and queues its re-analysis of past profiles, in
/// one transaction; `None` when the id is taken.
pub async fn create_user_rule(
    db: impl Into<Database>,
    rule: &RuleDef,
    requested_by: &str,
) -> Result<Option<(RuleRow, Reanalysis)>> {
    let db = db.into();
    on_backend!(db, create_user_rule(rule, requested_by))
}

/// Replaces a rule (a seed rule becomes the admin's) and queues its
/// re-analysis of past profiles, in one transaction; `None` when there is
/// no such rule.
pub async fn update_user_rule(
    db: impl Into<Database>,
    rule: &RuleDef,
    requested_by: &str,
) -> Result<Option<(RuleRow, Reanalysis)>> {
    let db = db.into();
    on_backend!(db, update_user_rule(rule, requested_by))
}

/// The rule, if there is one with that id.
pub async fn get_rule(db: impl Into<Database>, id: &str) -> Result<Option<RuleRow>> {
    let db = db.into();
    on_backend!(db, get_rule(id))
}

/// Every rule, by id.
pub async fn list_rules(db: impl Into<Database>) -> Result<Vec<RuleRow>> {
    let db = db.into();
    on_backend!(db, list_rules())
}
