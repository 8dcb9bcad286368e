//! The database a store runs on: Postgres, or MySQL 8 / MariaDB 10.11+,
//! chosen by the scheme of the URL. Each repository dispatches on it to its
//! backend's module; both backends pass one behaviour suite
//! (`store/tests/profiles.rs`).

use sqlx::mysql::MySqlPoolOptions;
use sqlx::{Encode, MySql, MySqlPool, PgPool, QueryBuilder, Type};

use crate::{Result, StoreError};

/// Calls `f` of the repository's `postgres` or `mysql` module, whichever
/// `db` is, with the pool and `args`: `on_backend!(self.db, get(id))`.
macro_rules! on_backend {
    ($db:expr, $f:ident($($arg:expr),* $(,)?)) => {
        match &$db {
            $crate::database::Database::Postgres(pool) => postgres::$f(pool, $($arg),*).await,
            $crate::database::Database::MySql(pool) => mysql::$f(pool, $($arg),*).await,
        }
    };
}
pub(crate) use on_backend;

#[derive(Debug, Clone)]
pub enum Database {
    Postgres(PgPool),
    MySql(MySqlPool),
}

impl From<PgPool> for Database {
    fn from(pool: PgPool) -> Self {
        Database::Postgres(pool)
    }
}

impl From<&PgPool> for Database {
    fn from(pool: &PgPool) -> Self {
        Database::Postgres(pool.clone())
    }
}

impl From<&MySqlPool> for Database {
    fn from(pool: &MySqlPool) -> Self {
        Database::MySql(pool.clone())
    }
}

impl From<&Database> for Database {
    fn from(db: &Database) -> Self {
        db.clone()
    }
}

impl From<MySqlPool> for Database {
    fn from(pool: MySqlPool) -> Self {
        Database::MySql(pool)
    }
}

impl Database {
    /// Connects to `url` (`postgres://…` or `mysql://…`) and applies that
    /// backend's pending migrations.
    pub async fn connect_and_migrate(url: &str) -> Result<Database> {
        match url.split_once("://").map(|(scheme, _)| scheme) {
            Some("postgres" | "postgresql") => Ok(crate::connect_and_migrate(url).await?.into()),
            Some("mysql" | "mariadb") => {
                let url = url.replacen("mariadb://", "mysql://", 1);
                let pool = MySqlPoolOptions::new()
                    .max_connections(10)
                    .connect(&url)
                    .await?;
                crate::migrate_mysql(&pool).await?;
                Ok(pool.into())
            }
            _ => Err(StoreError::UnsupportedUrl(redacted(url))),
        }
    }
}

impl Database {
    /// Closes the pool, waiting for its connections to be returned.
    pub async fn close(&self) {
        match self {
            Database::Postgres(pool) => pool.close().await,
            Database::MySql(pool) => pool.close().await,
        }
    }
}

/// `url` without its password.
fn redacted(url: &str) -> String {
    match (url.split_once("://"), url.rsplit_once('@')) {
        (Some((scheme, _)), Some((_, host))) => format!("{scheme}://…@{host}"),
        _ => url.to_owned(),
    }
}

/// Pushes `(?, ?, …)` binding each of `values`: MySQL's form of Postgres'
/// `= any($1)`. An empty list is `(null)`, which matches nothing, where
/// `()` would be a syntax error.
pub(crate) fn push_in_list<'a, T>(
    query: &mut QueryBuilder<'a, MySql>,
    values: impl IntoIterator<Item = T>,
) where
    T: 'a + Encode<'a, MySql> + Type<MySql>,
{
    let mut values = values.into_iter().peekable();
    if values.peek().is_none() {
        query.push("(null)");
        return;
    }
    query.push("(");
    let mut list = query.separated(", ");
    for value in values {
        list.push_bind(value);
    }
    list.push_unseparated(")");
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn in_lists_bind_each_value_and_an_empty_one_matches_nothing() {
        let ids = [1i64, 2, 3];
        let mut query = QueryBuilder::<MySql>::new("select 1 where id in ");
        push_in_list(&mut query, ids.iter());
        assert_eq!(query.sql(), "select 1 where id in (?, ?, ?)");
        let mut query = QueryBuilder::<MySql>::new("select 1 where id in ");
        push_in_list(&mut query, Vec::<i64>::new());
        assert_eq!(query.sql(), "select 1 where id in (null)");
    }

    #[test]
    fn urls_are_shown_without_their_password() {
        assert_eq!(
            redacted("mysql://odp:secret@127.0.0.1:3306/odp"),
            "mysql://…@127.0.0.1:3306/odp"
        );
    }
}
