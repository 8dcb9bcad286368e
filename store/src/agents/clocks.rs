//! Hosts' clock offsets: how far ahead of the api-server each host's clock
//! runs, measured from its agent's heartbeats as they arrive (the
//! api-server follows the events topic live). The pipeline reads them to
//! place a skewed host's windows and events at the time they happened.

use chrono::{DateTime, Utc};

use crate::database::{Backend, Database};
use crate::sql::Sql;
use crate::Result;

use super::{mysql, postgres};

/// A host's clock offset from which its windows and events are moved by
/// it: a window's length (the agent's default). Below it a window stays in
/// its place give or take part of itself, and the measurement's own error
/// (heartbeats delayed seconds on a loaded machine) could move an in-step
/// host's windows more than its clock is off.
pub const CLOCK_CORRECTED_FROM_MS: i64 = 10_000;

/// A host's clock offset as last measured.
#[derive(Debug, Clone, PartialEq, Eq, sqlx::FromRow)]
pub struct HostClock {
    pub host: String,
    /// Ms the host's clock is ahead (negative: behind).
    pub offset_ms: i64,
    pub measured_at: DateTime<Utc>,
}

impl HostClock {
    /// What the host's times are moved by: its offset, once it is
    /// [`CLOCK_CORRECTED_FROM_MS`] or more either way.
    pub fn correction_ms(&self) -> i64 {
        if self.offset_ms.abs() >= CLOCK_CORRECTED_FROM_MS {
            self.offset_ms
        } else {
            0
        }
    }
}

/// Records each `(host, offset_ms)` as measured now, replacing the last.
pub async fn record_host_clocks(db: impl Into<Database>, clocks: &[(String, i64)]) -> Result<()> {
    let db = db.into();
    let upsert = match db.backend() {
        Backend::Postgres => postgres::RECORD_CLOCK,
        Backend::MySql => mysql::RECORD_CLOCK,
    };
    let mut tx = db.begin().await?;
    for (host, offset_ms) in clocks {
        Sql::new(upsert)
            .bind(host)
            .bind(*offset_ms)
            .execute(&mut tx)
            .await?;
    }
    tx.commit().await
}

/// Every host's clock offset measured since `since`.
pub async fn host_clocks(db: impl Into<Database>, since: DateTime<Utc>) -> Result<Vec<HostClock>> {
    Sql::new(
        "select host, offset_ms, measured_at from host_clocks
         where measured_at >= $1 order by host",
    )
    .bind(since)
    .fetch_all(&db.into())
    .await
}
