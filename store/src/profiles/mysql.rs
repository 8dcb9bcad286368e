//! Profile requests in MySQL and MariaDB. What Postgres does with
//! `returning`, constraint names and `= any(array)`, this does with a read
//! after the insert, the key named in the duplicate-entry message, and an
//! `in` list (see docs/mysql-schema.md).

use sqlx::types::Json;
use sqlx::{MySql, MySqlPool, QueryBuilder};
use uuid::Uuid;

use super::{
    answer_to_violation, live_one_just_ended, push_filters, Inserted, NewProfile, ProfileFilter,
    ProfileRow, Transition, Violation,
};
use crate::database::push_in_list;
use crate::{Result, StoreError};

pub(super) async fn insert(pool: &MySqlPool, p: &NewProfile) -> Result<Inserted> {
    let inserted = sqlx::query(
        "insert into profiles (id, host, service, target, duration_ms, frequency_hz, status,
                               requested_by, idempotency_key, labels, mode, options)
         values (?, ?, ?, ?, ?, ?, 'requested', ?, ?, ?, ?, ?)",
    )
    .bind(p.id)
    .bind(&p.host)
    .bind(&p.service)
    .bind(Json(&p.target))
    .bind(p.duration_ms)
    .bind(p.frequency_hz)
    .bind(&p.requested_by)
    .bind(&p.idempotency_key)
    .bind(Json(&p.labels))
    .bind(p.mode.as_str())
    .bind(Json(&p.options))
    .execute(pool)
    .await;
    let violated = match inserted {
        Ok(_) => {
            let row = get(pool, p.id).await?;
            return row
                .map(Inserted::Created)
                .ok_or_else(|| StoreError::Corrupt(format!("profile {} vanished", p.id)));
        }
        Err(sqlx::Error::Database(db)) if db.is_unique_violation() => {
            answer_to_violation(duplicated_key(db.message()))
        }
        Err(other) => return Err(other.into()),
    };
    match violated {
        Violation::Replayed => {
            let row = sqlx::query_as::<_, ProfileRow>(
                "select * from profiles where requested_by = ? and idempotency_key = ?",
            )
            .bind(&p.requested_by)
            .bind(&p.idempotency_key)
            .fetch_one(pool)
            .await?;
            Ok(Inserted::Replayed(row))
        }
        Violation::LiveDuplicate => {
            // The same expression as the generated column the unique key
            // is over, so the target matches as the key compared it.
            let row = sqlx::query_as::<_, ProfileRow>(
                "select * from profiles
                 where host = ? and mode = ?
                   and live_target_key = unhex(sha2(json_extract(?, '$'), 256))",
            )
            .bind(&p.host)
            .bind(p.mode.as_str())
            .bind(Json(&p.target))
            .fetch_optional(pool)
            .await?;
            row.map(Inserted::Duplicate).ok_or_else(live_one_just_ended)
        }
        Violation::Other(key) => Err(StoreError::Conflict(format!(
            "unique constraint {key} violated"
        ))),
    }
}

/// The key of a duplicate-entry error (1062): `… for key 'name'`, which
/// MySQL 8 prefixes with the table (`'profiles.name'`).
fn duplicated_key(message: &str) -> Option<&str> {
    let (_, quoted) = message.rsplit_once("for key '")?;
    let key = quoted.strip_suffix('\'')?;
    Some(key.rsplit('.').next().unwrap_or(key))
}

pub(super) async fn list(pool: &MySqlPool, filter: &ProfileFilter) -> Result<Vec<ProfileRow>> {
    let mut q = QueryBuilder::<MySql>::new("select * from profiles where true");
    push_filters(&mut q, filter, |q, labels| {
        q.push(" and json_contains(labels, ")
            .push_bind(Json(labels))
            .push(")");
    });
    Ok(q.build_query_as::<ProfileRow>().fetch_all(pool).await?)
}

pub(super) async fn expire_unacknowledged(
    pool: &MySqlPool,
    after: std::time::Duration,
) -> Result<u64> {
    let result = sqlx::query(
        "update profiles set status = 'expired', updated_at = now(6), finished_at = now(6),
             status_reason = 'no agent acknowledged the request in time'
         where status in ('requested', 'dispatched')
           and created_at < now(6) - interval ? microsecond",
    )
    .bind(i64::try_from(after.as_micros()).unwrap_or(i64::MAX))
    .execute(pool)
    .await?;
    Ok(result.rows_affected())
}

pub(super) async fn get(pool: &MySqlPool, id: Uuid) -> Result<Option<ProfileRow>> {
    Ok(
        sqlx::query_as::<_, ProfileRow>("select * from profiles where id = ?")
            .bind(id)
            .fetch_optional(pool)
            .await?,
    )
}

pub(super) async fn transition(pool: &MySqlPool, moved: &Transition<'_>) -> Result<bool> {
    transition_in(pool, moved).await
}

/// [`transition`] on any executor: ingest moves profiles inside the
/// transaction that records the agent's event.
pub(crate) async fn transition_in<'e, E>(executor: E, moved: &Transition<'_>) -> Result<bool>
where
    E: sqlx::MySqlExecutor<'e>,
{
    let allowed = moved.status.allowed_from();
    if allowed.is_empty() {
        return Ok(false);
    }
    // MySQL assigns left to right and later assignments see earlier ones,
    // so none reads a column this statement sets.
    let mut q = QueryBuilder::<MySql>::new("update profiles set status = ");
    q.push_bind(moved.status.as_str())
        .push(", status_reason = coalesce(")
        .push_bind(moved.reason)
        .push(", status_reason), event = coalesce(")
        .push_bind(moved.event)
        .push(", event), agent_id = coalesce(agent_id, ")
        .push_bind(moved.agent_id)
        .push("), updated_at = now(6), started_at = case when ")
        .push_bind(moved.status == super::ProfileStatus::Running)
        .push(" then now(6) else started_at end, finished_at = case when ")
        .push_bind(moved.status.is_terminal())
        .push(" then now(6) else finished_at end where id = ")
        .push_bind(moved.id)
        .push(" and status in ");
    push_in_list(&mut q, allowed.iter().map(|status| status.as_str()));
    q.push(" and (")
        .push_bind(moved.agent_id)
        .push(" is null or agent_id is null or agent_id = ")
        .push_bind(moved.agent_id)
        .push(")");
    let result = q.build().execute(executor).await?;
    Ok(result.rows_affected() == 1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn duplicate_entries_name_their_key_on_both_servers() {
        let mariadb = "Duplicate entry 'h1-cpu-\u{1}' for key 'profiles_one_live_per_target'";
        let mysql8 = "Duplicate entry 'ci-k' for key 'profiles.profiles_idempotency'";
        assert_eq!(
            duplicated_key(mariadb),
            Some("profiles_one_live_per_target")
        );
        assert_eq!(duplicated_key(mysql8), Some("profiles_idempotency"));
        assert_eq!(duplicated_key("Deadlock found"), None);
    }
}
