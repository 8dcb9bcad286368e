//! Bulk lists of ids in MySQL and MariaDB, which have no arrays: where
//! Postgres binds one array (`id = any($1)`), MySQL takes an `in (?, …)`
//! list, cut into chunks that stay far below its 65,535 placeholders.
//! Each chunk is its own statement: rows come back in order per chunk
//! only, and a write of several chunks is atomic only inside a
//! transaction.
//!
//! [`fetch_any`] and [`execute_any`] run a statement written once, in
//! Postgres' `= any($1)` form, on either backend; [`fetch_in`] and
//! [`execute_in`] are MySQL's half, for statements only MySQL runs.

use sqlx::mysql::MySqlRow;
use sqlx::postgres::PgHasArrayType;
use sqlx::{Encode, MySql, MySqlConnection, Postgres, QueryBuilder, Type};

use super::{On, Row};
use crate::database::push_in_list;
use crate::{Result, StoreError};

/// Values per `in (…)` list: far below MySQL's 65,535 placeholders.
pub(crate) const IN_LIST_CHUNK: usize = 5_000;

/// Rows of `prefix (?, …) suffix` for every chunk of `values`.
pub(crate) async fn fetch_in<'v, T, V>(
    conn: &mut MySqlConnection,
    prefix: &str,
    values: &'v [V],
    suffix: &str,
) -> Result<Vec<T>>
where
    T: for<'r> sqlx::FromRow<'r, MySqlRow> + Send + Unpin,
    V: Sync,
    &'v V: Encode<'v, MySql> + Type<MySql> + Send,
{
    let mut rows = Vec::new();
    for chunk in values.chunks(IN_LIST_CHUNK) {
        let mut query = QueryBuilder::<MySql>::new(prefix);
        push_in_list(&mut query, chunk.iter());
        query.push(suffix);
        rows.extend(query.build_query_as::<T>().fetch_all(&mut *conn).await?);
    }
    Ok(rows)
}

/// Runs `prefix (?, …) suffix` for every chunk of `values`; the rows
/// affected.
pub(crate) async fn execute_in<'v, V>(
    conn: &mut MySqlConnection,
    prefix: &str,
    values: &'v [V],
    suffix: &str,
) -> Result<u64>
where
    V: Sync,
    &'v V: Encode<'v, MySql> + Type<MySql> + Send,
{
    let mut affected = 0;
    for chunk in values.chunks(IN_LIST_CHUNK) {
        let mut query = QueryBuilder::<MySql>::new(prefix);
        push_in_list(&mut query, chunk.iter());
        query.push(suffix);
        affected += query.build().execute(&mut *conn).await?.rows_affected();
    }
    Ok(affected)
}

/// Where the list stands in a statement written for [`fetch_any`].
const ANY: &str = "= any($1)";

/// `text`'s MySQL form around its list: the part before it, ending in
/// `in `, and the part after it. The list must be the only parameter.
fn around_list(text: &str) -> Result<(String, &str)> {
    match text.split_once(ANY) {
        Some((before, after)) if !before.contains('$') && !after.contains('$') => {
            Ok((format!("{} in ", before.trim_end()), after))
        }
        _ => Err(StoreError::Statement(format!(
            "a bulk list is the one parameter, `{ANY}`, in: {}",
            text.trim()
        ))),
    }
}

/// The rows of `text`, a statement whose one parameter is `list`, written
/// `column = any($1)`: one array on Postgres, chunked `in` lists on MySQL
/// (in order per chunk: sort what must be in order).
pub(crate) async fn fetch_any<'a, 'v, T, V>(
    on: impl Into<On<'a>>,
    text: &str,
    list: &'v [V],
) -> Result<Vec<T>>
where
    T: Row + Send + Unpin,
    V: Sync + PgHasArrayType + for<'q> Encode<'q, Postgres> + Type<Postgres>,
    &'v V: Encode<'v, MySql> + Type<MySql> + Send,
{
    let (prefix, suffix) = around_list(text)?;
    Ok(match on.into() {
        On::PgPool(pool) => sqlx::query_as(text).bind(list).fetch_all(pool).await?,
        On::PgConnection(conn) => sqlx::query_as(text).bind(list).fetch_all(conn).await?,
        On::MySqlPool(pool) => {
            let mut conn = pool.acquire().await?;
            fetch_in(&mut conn, &prefix, list, suffix).await?
        }
        On::MySqlConnection(conn) => fetch_in(conn, &prefix, list, suffix).await?,
    })
}

/// Runs `text`, a statement whose one parameter is `list`, written
/// `column = any($1)` (see [`fetch_any`]); the rows affected.
pub(crate) async fn execute_any<'a, 'v, V>(
    on: impl Into<On<'a>>,
    text: &str,
    list: &'v [V],
) -> Result<u64>
where
    V: Sync + PgHasArrayType + for<'q> Encode<'q, Postgres> + Type<Postgres>,
    &'v V: Encode<'v, MySql> + Type<MySql> + Send,
{
    let (prefix, suffix) = around_list(text)?;
    Ok(match on.into() {
        On::PgPool(pool) => sqlx::query(text)
            .bind(list)
            .execute(pool)
            .await?
            .rows_affected(),
        On::PgConnection(conn) => sqlx::query(text)
            .bind(list)
            .execute(conn)
            .await?
            .rows_affected(),
        On::MySqlPool(pool) => {
            let mut conn = pool.acquire().await?;
            execute_in(&mut conn, &prefix, list, suffix).await?
        }
        On::MySqlConnection(conn) => execute_in(conn, &prefix, list, suffix).await?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mysql_writes_the_list_as_an_in_list_where_postgres_binds_an_array() {
        let (prefix, suffix) =
            around_list("select id from stacks where id = any($1) order by id for update").unwrap();
        assert_eq!(prefix, "select id from stacks where id in ");
        assert_eq!(suffix, " order by id for update");
    }

    #[test]
    fn the_list_must_be_the_only_parameter() {
        for text in [
            "select id from stacks where id in $1",
            "select id from stacks where id = any($1) and stored_at > $2",
            "select id from stacks where id = any($2)",
        ] {
            let error = around_list(text).unwrap_err();
            assert!(error.to_string().contains("bulk list"), "{error}");
        }
    }
}
