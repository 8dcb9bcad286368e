//! What rules do differently in MySQL and MariaDB. Affected-row counts
//! cannot tell an insert from an unchanged upsert (sqlx sets
//! CLIENT_FOUND_ROWS), so seeding reads the pack's rows first and writes
//! only the new and changed ones, counting them itself.

use std::collections::HashMap;

use odp_rules::RuleDef;

use super::{insert, update, Dialect, RuleRow, StoredRule};
use crate::database::Database;
use crate::sql::Sql;
use crate::Result;

pub(super) const DIALECT: Dialect = Dialect {
    on_taken_id: "on duplicate key update",
    new_value: ("values(", ")"),
};

pub(super) async fn install_seed_rules(db: &Database, rules: &[RuleDef]) -> Result<u64> {
    if rules.is_empty() {
        return Ok(0);
    }
    let mut tx = db.begin().await?;
    let stored: Vec<StoredRule> = Sql::new("select * from rules where id in $1 for update")
        .bind_list(rules.iter().map(|r| r.id.as_str()))
        .fetch_all(&mut tx)
        .await?;
    let stored: HashMap<String, RuleRow> = stored
        .into_iter()
        .map(|row| (row.id.clone(), RuleRow::from(row)))
        .collect();
    let mut written = 0;
    for rule in rules {
        match stored.get(&rule.id) {
            None => insert(rule, "seed", "")?.execute(&mut tx).await?,
            Some(row) if row.source == "seed" && row.rule != *rule => {
                update(rule, "seed")?.execute(&mut tx).await?
            }
            // Unchanged, or an admin's.
            Some(_) => continue,
        };
        written += 1;
    }
    tx.commit().await?;
    Ok(written)
}
