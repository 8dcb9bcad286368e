//! Continuous profiles and triggers are one kind of thing over two
//! tables: a service's configuration that the api-server assigns to the
//! agents running the service (on the hosts it lists, or on all of them)
//! while it is enabled, recording who created it and who changed it last.
//! Their repositories are one generic type, [`Configurations`], which reads,
//! changes and deletes them alike; each area adds what is its own (its
//! columns, a continuous profile's segments, a trigger's firings) in an
//! `impl` of its row's repository.

use std::marker::PhantomData;

use sqlx::mysql::MySqlRow;
use sqlx::postgres::PgRow;
use sqlx::FromRow;
use uuid::Uuid;

use crate::columns::host_list;
use crate::database::Database;
use crate::sql::{Patch, Table};
use crate::Result;

/// A row of a configuration table ([`crate::ContinuousRow`],
/// [`crate::TriggerRow`]).
pub trait Configuration:
    for<'r> FromRow<'r, PgRow> + for<'r> FromRow<'r, MySqlRow> + Send + Unpin
{
    /// What the agents are sent of a configuration.
    type Assignment;

    /// What the agents are sent of this one.
    fn assignment(&self) -> Self::Assignment;
}

/// The configurations of one table, in whichever database the store runs
/// on: [`crate::ContinuousProfiles`], [`crate::Triggers`].
#[derive(Clone)]
pub struct Configurations<R> {
    pub(crate) db: Database,
    table: Table,
    rows: PhantomData<fn() -> R>,
}

impl<R: Configuration> Configurations<R> {
    /// The repository of the configurations kept in `table`.
    pub(crate) fn over(db: impl Into<Database>, table: Table) -> Self {
        Configurations {
            db: db.into(),
            table,
            rows: PhantomData,
        }
    }

    pub async fn get(&self, id: Uuid) -> Result<Option<R>> {
        self.table.get(&self.db, id).await
    }

    /// Removes a configuration (a trigger with its firings); whether it
    /// existed. The profiles it started stay.
    pub async fn delete(&self, id: Uuid) -> Result<bool> {
        self.table.delete(&self.db, id).await
    }

    /// What the agents are sent: every enabled configuration.
    pub async fn assignments(&self) -> Result<Vec<R::Assignment>> {
        let rows: Vec<R> = self
            .table
            .list(&self.db, "where enabled order by id")
            .await?;
        Ok(rows.iter().map(R::assignment).collect())
    }

    /// Applies `own`, the change of the area's own columns, with the change
    /// of what every configuration has: its hosts ([`host_list`];
    /// `Some(None)` is every host), whether it is on, and who changed it.
    /// `None` when there is no such configuration.
    pub(crate) async fn change(
        &self,
        id: Uuid,
        own: Patch,
        hosts: &Option<Option<Vec<String>>>,
        enabled: Option<bool>,
        updated_by: &str,
    ) -> Result<Option<R>> {
        let new_hosts = host_list(&hosts.clone().flatten())?;
        let change = own
            .replace_if(hosts.is_some(), "hosts", new_hosts)
            .keep_unless_given("enabled", enabled)
            .set("updated_by", updated_by);
        self.table.apply(&self.db, change, id).await
    }
}
