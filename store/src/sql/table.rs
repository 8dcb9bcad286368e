//! The reads and writes every area makes of its own table the same way:
//! a row by its id, every row in some order, an update read back in its
//! transaction, a row deleted by its id, the newest rows of a page, a
//! revocation that keeps the first one. Written once here, so each area's
//! `get`, `list`, `update`, `delete` and `revoke` are one call.

use super::{Arg, On, Patch, Row, Sql};
use crate::{Database, Result};

/// An area's table: its name, and the columns its row type reads.
#[derive(Clone, Copy)]
pub(crate) struct Table {
    pub(crate) name: &'static str,
    pub(crate) columns: &'static str,
}

impl Table {
    /// `select` the row type's columns `from` the table, then `rest` (the
    /// `where`, `order by` and `limit` clauses).
    pub(crate) fn select(&self, rest: &str) -> Sql {
        Sql::new(format!("select {} from {} {rest}", self.columns, self.name))
    }

    /// Every row `rest` selects (its `where` and `order by` clauses).
    pub(crate) async fn list<'a, T: Row + Send + Unpin>(
        &self,
        on: impl Into<On<'a>>,
        rest: &str,
    ) -> Result<Vec<T>> {
        self.select(rest).fetch_all(on).await
    }

    /// The row whose `id` is `id`.
    pub(crate) fn by_id(&self, id: impl Into<Arg>) -> Sql {
        Sql::by_id(self.columns, self.name, id)
    }

    /// The row whose `id` is `id`, if there is one.
    pub(crate) async fn get<'a, T: Row + Send + Unpin>(
        &self,
        on: impl Into<On<'a>>,
        id: impl Into<Arg>,
    ) -> Result<Option<T>> {
        self.by_id(id).fetch_optional(on).await
    }

    /// Runs `update`, a change of the row whose `id` is `id`, and reads
    /// that row back in the same transaction, so the row returned is the
    /// one the update wrote; `None` when there is no such row.
    pub(crate) async fn update<T: Row + Send + Unpin>(
        &self,
        db: &Database,
        update: Sql,
        id: impl Into<Arg>,
    ) -> Result<Option<T>> {
        let mut tx = db.begin().await?;
        update.execute(&mut tx).await?;
        let row = self.get(&mut tx, id).await?;
        tx.commit().await?;
        Ok(row)
    }

    /// A change of one of the table's rows ([`Patch::of_row`]).
    pub(crate) fn patch(&self) -> Patch {
        Patch::of(self.name)
    }

    /// Applies `patch` to the row whose `id` is `id` and reads that row
    /// back, as [`Table::update`] does.
    pub(crate) async fn apply<T: Row + Send + Unpin>(
        &self,
        db: &Database,
        patch: Patch,
        id: impl Into<Arg> + Copy,
    ) -> Result<Option<T>> {
        self.update(db, patch.of_row("id", id), id).await
    }

    /// Deletes the row whose `id` is `id` (and what the schema deletes
    /// with it); whether there was one.
    pub(crate) async fn delete<'a>(
        &self,
        on: impl Into<On<'a>>,
        id: impl Into<Arg>,
    ) -> Result<bool> {
        let deleted = Sql::new(format!("delete from {} where id = $1", self.name))
            .bind(id)
            .execute(on)
            .await?;
        Ok(deleted == 1)
    }

    /// A page of rows, newest first (by the `at` column, then by id), at
    /// most `limit`; only those whose `column` is `value` when it is given.
    pub(crate) async fn newest<'a, T: Row + Send + Unpin>(
        &self,
        on: impl Into<On<'a>>,
        at: &str,
        (column, value): (&str, Option<&str>),
        limit: i64,
    ) -> Result<Vec<T>> {
        self.select(&format!(
            "where ($1 is null or {column} = $1) order by {at} desc, id limit $2"
        ))
        .bind(value)
        .bind(limit)
        .fetch_all(on)
        .await
    }

    /// Marks the row whose `id` is `id` revoked (its `revoked_at` and
    /// `revoked_by` columns) by `by`, now, unless it was already: the first
    /// revocation stands. Returns the row as it then is, if there is one.
    pub(crate) async fn revoke_once<T: Row + Send + Unpin>(
        &self,
        db: &Database,
        id: impl Into<Arg> + Copy,
        by: &str,
    ) -> Result<Option<T>> {
        Sql::new(format!(
            "update {} set revoked_at = {{now}}, revoked_by = $2
             where id = $1 and revoked_at is null",
            self.name
        ))
        .bind(id)
        .bind(by)
        .execute(db)
        .await?;
        self.get(db, id).await
    }
}
