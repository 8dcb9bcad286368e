//! Statements written once for both backends.
//!
//! Most of what the store says reads the same in Postgres and in MySQL /
//! MariaDB but for two things: how a parameter is written (`$1` against
//! `?`, where MySQL also needs a value bound again each time it is used)
//! and a few functions (`now()`, whose MySQL form keeps only seconds
//! unless asked for microseconds). A [`Sql`] holds the text in Postgres'
//! notation and its arguments; [`render()`] writes it for the backend it
//! runs on. What really differs between the dialects (`returning`,
//! `on conflict` against `on duplicate key`, arrays against `in` lists,
//! `COPY`, advisory locks, intervals) stays in the areas' `postgres.rs`
//! and `mysql.rs`, which then hold only that.
//!
//! The text may use, besides `$1`…`$n`:
//! - `"name"`: a quoted identifier, in backticks for MySQL;
//! - `{now}`: the current time with microseconds (`now()`, `now(6)`);
//! - `{clock}`: the time the statement runs (`clock_timestamp()`,
//!   `now(6)`), where Postgres' `now()` is its transaction's start: a
//!   time that orders writes by when they took their rows' locks;
//! - a `$n` bound to a `std::time::Duration`, which is written as an
//!   interval: `at < {now} - $1`;
//! - a `$n` bound with [`Sql::bind_list`], written `(v1, v2, …)`:
//!   `status in $2`.

mod arg;
pub(crate) mod mysql_lists;
mod patch;
mod render;
mod table;

use sqlx::mysql::MySqlRow;
use sqlx::postgres::PgRow;
use sqlx::{Decode, FromRow, MySql, MySqlConnection, PgConnection, Postgres, Transaction, Type};

pub(crate) use arg::Arg;
use arg::Bound;
pub(crate) use patch::Patch;
use render::{render, Dialect};
pub(crate) use table::Table;

use crate::database::Database;
use crate::Result;

/// One statement and its arguments, written once for both backends.
#[derive(Debug, Clone)]
#[must_use = "a statement does nothing until it is run"]
pub(crate) struct Sql {
    text: String,
    args: Vec<Bound>,
}

/// Where a statement runs: a pool, or a transaction's connection.
pub(crate) enum On<'a> {
    PgPool(&'a sqlx::PgPool),
    MySqlPool(&'a sqlx::MySqlPool),
    PgConnection(&'a mut PgConnection),
    MySqlConnection(&'a mut MySqlConnection),
}

impl<'a> From<&'a Database> for On<'a> {
    fn from(db: &'a Database) -> Self {
        match db {
            Database::Postgres(pool) => On::PgPool(pool),
            Database::MySql(pool) => On::MySqlPool(pool),
        }
    }
}

impl<'a> From<&'a sqlx::PgPool> for On<'a> {
    fn from(pool: &'a sqlx::PgPool) -> Self {
        On::PgPool(pool)
    }
}

impl<'a> From<&'a sqlx::MySqlPool> for On<'a> {
    fn from(pool: &'a sqlx::MySqlPool) -> Self {
        On::MySqlPool(pool)
    }
}

impl<'a> From<&'a mut Tx> for On<'a> {
    fn from(tx: &'a mut Tx) -> Self {
        match tx {
            Tx::Postgres(tx) => On::PgConnection(tx),
            Tx::MySql(tx) => On::MySqlConnection(tx),
        }
    }
}

impl<'a> From<&'a mut PgConnection> for On<'a> {
    fn from(conn: &'a mut PgConnection) -> Self {
        On::PgConnection(conn)
    }
}

impl<'a> From<&'a mut MySqlConnection> for On<'a> {
    fn from(conn: &'a mut MySqlConnection) -> Self {
        On::MySqlConnection(conn)
    }
}

/// A transaction on either backend: statements run in it through
/// `On::from(&mut tx)`, and nothing is kept unless it is committed.
pub(crate) enum Tx {
    Postgres(Transaction<'static, Postgres>),
    MySql(Transaction<'static, MySql>),
}

impl Tx {
    pub(crate) async fn commit(self) -> Result<()> {
        match self {
            Tx::Postgres(tx) => tx.commit().await?,
            Tx::MySql(tx) => tx.commit().await?,
        }
        Ok(())
    }
}

impl Database {
    /// Starts a transaction (MySQL's at the server's isolation level,
    /// repeatable read unless configured otherwise).
    pub(crate) async fn begin(&self) -> Result<Tx> {
        Ok(match self {
            Database::Postgres(pool) => Tx::Postgres(pool.begin().await?),
            Database::MySql(pool) => Tx::MySql(pool.begin().await?),
        })
    }
}

/// Runs `$query` (a function of the rendered text and arguments, such as
/// `sqlx::query_as_with`) on whichever backend `$on` is, then `$run` on it.
macro_rules! on_either {
    // One place: the statement rendered for its dialect, run there.
    (@at $rendered:expr, $at:expr, |$text:ident, $args:ident| $query:expr, $run:ident $(=> $then:ident)?) => {{
        let ($text, $args) = $rendered?;
        $query.$run($at).await?$(.$then())?
    }};
    ($sql:expr, $on:expr, |$text:ident, $args:ident| $query:expr, $run:ident $(=> $then:ident)?) => {{
        let sql = $sql;
        match $on.into() {
            On::PgPool(at) => {
                on_either!(@at sql.postgres(), at, |$text, $args| $query, $run $(=> $then)?)
            }
            On::PgConnection(at) => {
                on_either!(@at sql.postgres(), at, |$text, $args| $query, $run $(=> $then)?)
            }
            On::MySqlPool(at) => {
                on_either!(@at sql.mysql(), at, |$text, $args| $query, $run $(=> $then)?)
            }
            On::MySqlConnection(at) => {
                on_either!(@at sql.mysql(), at, |$text, $args| $query, $run $(=> $then)?)
            }
        }
    }};
}

/// The methods that read rows: each runs a sqlx query builder (`$query`,
/// such as `query_as_with`) and one of its fetches (`$run`).
macro_rules! fetches {
    ($($(#[$doc:meta])* fn $name:ident -> $out:ty, T: $bound:ident, $query:ident, $run:ident;)*) => {$(
        $(#[$doc])*
        pub(crate) async fn $name<'a, T>(self, on: impl Into<On<'a>>) -> Result<$out>
        where
            T: $bound + Send + Unpin,
        {
            Ok(on_either!(
                self,
                on,
                |text, args| sqlx::$query::<_, T, _>(&text, args),
                $run
            ))
        }
    )*};
}

/// A row both backends can decode.
pub(crate) trait Row: for<'r> FromRow<'r, PgRow> + for<'r> FromRow<'r, MySqlRow> {}
impl<T> Row for T where T: for<'r> FromRow<'r, PgRow> + for<'r> FromRow<'r, MySqlRow> {}

/// A single column both backends can decode.
pub(crate) trait Scalar:
    for<'r> Decode<'r, Postgres> + Type<Postgres> + for<'r> Decode<'r, MySql> + Type<MySql>
{
}
impl<T> Scalar for T where
    T: for<'r> Decode<'r, Postgres> + Type<Postgres> + for<'r> Decode<'r, MySql> + Type<MySql>
{
}

impl Sql {
    /// A statement in Postgres' notation (`$1`, `$2`, … and the tokens of
    /// the module's documentation); bind its arguments in order.
    pub(crate) fn new(text: impl Into<String>) -> Sql {
        Sql {
            text: text.into(),
            args: Vec::new(),
        }
    }

    /// The row of `table` (its `columns`) whose `id` is `id`.
    pub(crate) fn by_id(columns: &str, table: &str, id: impl Into<Arg>) -> Sql {
        Sql::new(format!("select {columns} from {table} where id = $1")).bind(id)
    }

    /// Binds the next argument: `$1` first.
    pub(crate) fn bind(mut self, arg: impl Into<Arg>) -> Sql {
        self.args.push(Bound::One(arg.into()));
        self
    }

    /// Binds the next argument as a list, written `(v1, v2, …)` where its
    /// `$n` stands: `status in $2`. Meant for short lists (statuses,
    /// kinds); bulk id lists are a dialect's business (`= any` arrays,
    /// chunked `in` lists).
    pub(crate) fn bind_list<A: Into<Arg>>(mut self, list: impl IntoIterator<Item = A>) -> Sql {
        self.args
            .push(Bound::List(list.into_iter().map(Into::into).collect()));
        self
    }

    fn rendered(&self, dialect: Dialect) -> Result<(String, Vec<Arg>)> {
        let shapes: Vec<_> = self.args.iter().map(Bound::shape).collect();
        let (text, order) = render(&self.text, &shapes, dialect)?;
        let values = order
            .into_iter()
            .map(|(arg, element)| self.args[arg].element(element).for_dialect(dialect))
            .collect();
        Ok((text, values))
    }

    fn postgres(self) -> Result<(String, sqlx::postgres::PgArguments)> {
        let (text, values) = self.rendered(Dialect::Postgres)?;
        Ok((text, arg::arguments::<Postgres>(values)?))
    }

    fn mysql(self) -> Result<(String, sqlx::mysql::MySqlArguments)> {
        let (text, values) = self.rendered(Dialect::MySql)?;
        Ok((text, arg::arguments::<MySql>(values)?))
    }

    /// Runs the statement; the number of rows it changed.
    pub(crate) async fn execute<'a>(self, on: impl Into<On<'a>>) -> Result<u64> {
        Ok(on_either!(
            self,
            on,
            |text, args| sqlx::query_with(&text, args),
            execute => rows_affected
        ))
    }

    fetches! {
        /// Every row.
        fn fetch_all -> Vec<T>, T: Row, query_as_with, fetch_all;
        /// The first row, if there is one.
        fn fetch_optional -> Option<T>, T: Row, query_as_with, fetch_optional;
        /// The first row; none is `sqlx::Error::RowNotFound`.
        fn fetch_one -> T, T: Row, query_as_with, fetch_one;
        /// The first column of every row.
        fn fetch_column -> Vec<T>, T: Scalar, query_scalar_with, fetch_all;
        /// The first column of the first row, if there is one.
        fn fetch_value -> Option<T>, T: Scalar, query_scalar_with, fetch_optional;
    }
}
