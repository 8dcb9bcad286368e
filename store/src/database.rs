//! The database a store runs on: Postgres, or MySQL 8 / MariaDB 10.11+,
//! chosen by the scheme of the URL. Each repository dispatches on it to its
//! backend's module; both backends pass one behaviour suite
//! (`store/tests/profiles.rs`).

use sqlx::{Encode, MySql, MySqlPool, PgPool, QueryBuilder, Type};

use crate::pool::PoolConfig;
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

/// Declares a repository: a public struct over the [`Database`] its
/// statements run on, made with `new` from anything that converts into
/// one (a `Database`, a pool). Its operations are the area's `impl`.
macro_rules! repository {
    ($(#[$doc:meta])* $name:ident) => {
        $(#[$doc])*
        #[derive(Clone)]
        pub struct $name {
            db: $crate::database::Database,
        }

        impl $name {
            pub fn new(db: impl Into<$crate::database::Database>) -> Self {
                $name { db: db.into() }
            }
        }
    };
}
pub(crate) use repository;

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
    /// A pool on `url` (`postgres://…` or `mysql://…`, also `mariadb://`)
    /// configured by `config`, with one connection opened now.
    pub async fn connect_with(url: &str, config: &PoolConfig) -> Result<Database> {
        Ok(match Backend::of(url)? {
            Backend::Postgres => crate::pool::connect_with(url, config).await?.into(),
            Backend::MySql => {
                let url = url.replacen("mariadb://", "mysql://", 1);
                crate::pool::open::<sqlx::MySql>(&url, config).await?.into()
            }
        })
    }

    /// Connects to `url` with the default [`PoolConfig`] and applies that
    /// backend's pending migrations.
    pub async fn connect_and_migrate(url: &str) -> Result<Database> {
        let db = Database::connect_with(url, &PoolConfig::default()).await?;
        db.migrate().await?;
        Ok(db)
    }

    /// Applies pending migrations through a pool of its own (default
    /// configuration: a migration may take longer than `config`'s
    /// statement timeout), then connects as `config` says.
    pub async fn connect_and_migrate_with(url: &str, config: &PoolConfig) -> Result<Database> {
        let migrations = Database::connect_and_migrate(url).await?;
        migrations.close().await;
        Database::connect_with(url, config).await
    }

    /// Applies this backend's pending migrations (`migrations/` for
    /// Postgres, `migrations/mysql` for MySQL 8 and MariaDB 10.11+). A
    /// binary older than the database's schema still starts (its
    /// migrations are a prefix of the applied ones), so services can be
    /// upgraded one at a time.
    pub async fn migrate(&self) -> Result<()> {
        match self {
            Database::Postgres(pool) => {
                let mut migrator = sqlx::migrate!("../migrations");
                migrator.set_ignore_missing(true);
                migrator.run(pool).await?;
            }
            Database::MySql(pool) => {
                let mut migrator = sqlx::migrate!("../migrations/mysql");
                migrator.set_ignore_missing(true);
                migrator.run(pool).await?;
            }
        }
        Ok(())
    }

    /// Which server and database this is: what tells apart the rows of
    /// two databases one process reads.
    pub(crate) fn identity(&self) -> String {
        // The two backends' options are different types with the same
        // getters.
        macro_rules! identity {
            ($backend:literal, $pool:expr) => {{
                let o = $pool.connect_options();
                format!(
                    "{} {}:{} {:?} /{}",
                    $backend,
                    o.get_host(),
                    o.get_port(),
                    o.get_socket(),
                    o.get_database().unwrap_or_default()
                )
            }};
        }
        match self {
            Database::Postgres(pool) => identity!("postgres", pool),
            Database::MySql(pool) => identity!("mysql", pool),
        }
    }

    /// Whether the database answers a trivial query.
    pub async fn ping(&self) -> Result<()> {
        match self {
            Database::Postgres(pool) => {
                sqlx::query("select 1").execute(pool).await?;
            }
            Database::MySql(pool) => {
                sqlx::query("select 1").execute(pool).await?;
            }
        }
        Ok(())
    }

    pub fn backend(&self) -> Backend {
        match self {
            Database::Postgres(_) => Backend::Postgres,
            Database::MySql(_) => Backend::MySql,
        }
    }
}

/// The kind of database server a [`Database`] talks to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Backend {
    Postgres,
    /// MySQL 8 or MariaDB 10.11+.
    MySql,
}

impl Backend {
    /// The backend `url`'s scheme names.
    pub fn of(url: &str) -> Result<Backend> {
        match url.split_once("://").map(|(scheme, _)| scheme) {
            Some("postgres" | "postgresql") => Ok(Backend::Postgres),
            Some("mysql" | "mariadb") => Ok(Backend::MySql),
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
    fn the_scheme_names_the_backend() {
        assert_eq!(Backend::of("postgres://h/odp").unwrap(), Backend::Postgres);
        assert_eq!(
            Backend::of("postgresql://h/odp").unwrap(),
            Backend::Postgres
        );
        assert_eq!(Backend::of("mysql://h/odp").unwrap(), Backend::MySql);
        assert_eq!(Backend::of("mariadb://h/odp").unwrap(), Backend::MySql);
        let error = Backend::of("sqlite://u:pw@h/odp").unwrap_err().to_string();
        assert!(
            error.contains("sqlite://…@h/odp") && !error.contains("pw"),
            "{error}"
        );
    }

    #[test]
    fn urls_are_shown_without_their_password() {
        assert_eq!(
            redacted("mysql://odp:secret@127.0.0.1:3306/odp"),
            "mysql://…@127.0.0.1:3306/odp"
        );
    }
}
