//! What a read's windows earned and lost, summed per event in the
//! database: an aggregate over a fleet reads one row per event, however
//! many windows it covers.

use odp_core::timeline::{LostSamples, SampleCoverage};
use odp_core::EventKind;
use sqlx::QueryBuilder;

use super::{window_query, Read};
use crate::database::Database;
use crate::Result;

/// Per event: expected, windows that measured it, their samples, all
/// samples, and the five loss reasons' samples.
type CoverageRow = (String, i64, i64, i64, i64, i64, i64, i64, i64, i64);

/// The coverage of a read's windows, per event.
#[derive(Debug, Clone, Default)]
pub struct CoverageByEvent(Vec<(String, SampleCoverage)>);

impl CoverageByEvent {
    /// The coverage of the windows of `event` (of the only event there is
    /// when `None`: a profile whose agent has not said what it measures
    /// yet); nothing expected, captured or lost otherwise.
    pub fn of(&self, event: Option<EventKind>) -> SampleCoverage {
        let found = match (event, self.0.as_slice()) {
            (Some(event), all) => all.iter().find(|(e, _)| e == event.as_str()),
            (None, [only]) => Some(only),
            (None, _) => None,
        };
        found
            .map(|(_, coverage)| coverage.clone())
            .unwrap_or_default()
    }
}

/// What the read's windows earned and lost (the thread and stack filters
/// narrow what is shown, not what the targets earned).
pub async fn read_coverage(db: impl Into<Database>, read: &Read) -> Result<CoverageByEvent> {
    let rows: Vec<CoverageRow> = match db.into() {
        Database::Postgres(pool) => {
            coverage_query(read, "bigint")
                .build_query_as()
                .fetch_all(&pool)
                .await?
        }
        Database::MySql(pool) => {
            coverage_query(read, "signed")
                .build_query_as()
                .fetch_all(&pool)
                .await?
        }
    };
    Ok(CoverageByEvent(rows.into_iter().map(coverage).collect()))
}

fn coverage(row: CoverageRow) -> (String, SampleCoverage) {
    let (event, expected, measured, captured_measured, captured, a, b, c, d, e) = row;
    let lost = LostSamples {
        overflow: a,
        throttled: b,
        paused: c,
        undiscovered: d,
        transport: e,
    };
    let expected = (measured > 0).then_some(expected);
    let coverage = SampleCoverage::from_sums(expected, captured, captured_measured, lost);
    (event, coverage)
}

/// The sums, cast to a 64-bit integer (`integer` is the dialect's name
/// for it): both dialects widen a sum of `bigint`s to a decimal.
fn coverage_query<'a, DB>(read: &'a Read, integer: &str) -> QueryBuilder<'a, DB>
where
    DB: sqlx::Database,
    uuid::Uuid: sqlx::Encode<'a, DB> + sqlx::Type<DB>,
    &'a str: sqlx::Encode<'a, DB> + sqlx::Type<DB>,
    chrono::DateTime<chrono::Utc>: sqlx::Encode<'a, DB> + sqlx::Type<DB>,
{
    let sum = |expression: &str| format!("cast(coalesce(sum({expression}), 0) as {integer})");
    let columns = [
        "n.event".to_owned(),
        sum("n.expected_samples"),
        format!("cast(count(n.expected_samples) as {integer})"),
        sum("case when n.expected_samples is null then 0 else n.samples end"),
        sum("n.samples"),
        sum("n.lost_overflow"),
        sum("n.lost_throttled"),
        sum("n.lost_paused"),
        sum("n.lost_undiscovered"),
        sum("n.lost_transport"),
    ]
    .join(", ");
    window_query(read, &columns, "n.event")
}
