//! Rolled-up profiles, read back out of their service's rollups.
//!
//! A profile rolled up into its service's hourly rollups keeps no block of
//! its own (migration 0028): the rollups hold its windows, each with its
//! profile id. Reading it loads the rollups of the hours its windows span
//! and keeps its windows, one pass over each rollup for all the profiles
//! read from it (a run's members share their hours).

use std::collections::{BTreeMap, BTreeSet, HashMap};

use chrono::{DateTime, Utc};
use odp_profile::halves::map_in_halves;
use odp_profile::{Profile, ProfileBuilder};
use uuid::Uuid;

use crate::cpu::blocking;
use crate::database::Database;
use crate::rollups::{self, HOUR_MS};
use crate::sql::mysql_lists::fetch_any;
use crate::{Result, StoreError};

/// Per rolled-up profile: its service and the span of its compacted
/// windows' rows.
type Span = (Uuid, String, DateTime<Utc>, DateTime<Utc>);

/// The compacted windows of each of `profile_ids` (rolled-up profiles),
/// from their services' rollups. A profile whose rollups hold none of its
/// windows (retention took them) is absent.
pub(super) async fn load(db: &Database, profile_ids: &[Uuid]) -> Result<HashMap<Uuid, Profile>> {
    if profile_ids.is_empty() {
        return Ok(HashMap::new());
    }
    let spans: Vec<Span> = fetch_any(
        db,
        "select n.profile_id, p.service, min(n.window_start), max(n.window_end)
         from snapshots n join profiles p on p.id = n.profile_id
         where n.profile_id = any($1) and n.compacted and p.service is not null
         group by n.profile_id, p.service",
        profile_ids,
    )
    .await?;
    let mut by_service: BTreeMap<String, Vec<Span>> = BTreeMap::new();
    for span in spans {
        by_service.entry(span.1.clone()).or_default().push(span);
    }
    let mut profiles = HashMap::new();
    for (service, spans) in by_service {
        profiles.extend(load_service(db, &service, &spans).await?);
    }
    Ok(profiles)
}

/// [`load`] of one service's profiles.
async fn load_service(
    db: &Database,
    service: &str,
    spans: &[Span],
) -> Result<HashMap<Uuid, Profile>> {
    let hours = hours_spanned(spans)?;
    let stored = rollups::load_hours(db, service, &hours, None).await?;
    let ids: Vec<Uuid> = spans.iter().map(|s| s.0).collect();
    blocking(move || Ok(split(&stored, &ids))).await
}

/// Every hour a window of `spans` may start in. A window's row may span
/// more than its block's window (pushed profiles), and the rollups place
/// a window by its block's start: so every hour from the first row's
/// start to the last row's end.
fn hours_spanned(spans: &[Span]) -> Result<Vec<DateTime<Utc>>> {
    let mut hours = BTreeSet::new();
    for (_, _, start, end) in spans {
        let first = rollups::hour_of(start.timestamp_millis());
        let last = rollups::hour_of(end.timestamp_millis() - 1).max(first);
        hours.extend((first..=last).step_by(HOUR_MS as usize));
    }
    hours
        .into_iter()
        .map(|ms| {
            DateTime::<Utc>::from_timestamp_millis(ms)
                .ok_or_else(|| StoreError::Corrupt(format!("hour {ms} ms out of range")))
        })
        .collect()
}

/// Each of `ids`' windows in `rollups`, merged across them in their order;
/// ids without a window are absent.
fn split(rollups: &[Profile], ids: &[Uuid]) -> HashMap<Uuid, Profile> {
    let index: HashMap<Uuid, usize> = ids.iter().enumerate().map(|(i, &id)| (id, i)).collect();
    let parts: Vec<Vec<Profile>> = map_in_halves(rollups, 2, |rollup| {
        rollup.split_windows(ids.len(), |w| index.get(&w.profile_id).copied())
    });
    let mut builders: Vec<Option<ProfileBuilder>> = (0..ids.len()).map(|_| None).collect();
    for hour in &parts {
        for (builder, part) in builders.iter_mut().zip(hour) {
            if !part.windows.is_empty() {
                builder
                    .get_or_insert_with(Default::default)
                    .add_profile(part);
            }
        }
    }
    ids.iter()
        .zip(builders)
        .filter_map(|(&id, builder)| Some((id, builder?.build())))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(ms: i64) -> DateTime<Utc> {
        DateTime::from_timestamp_millis(ms).unwrap()
    }

    #[test]
    fn a_profile_is_looked_for_in_every_hour_its_rows_span() {
        let span = |start, end| (Uuid::nil(), "s".to_owned(), at(start), at(end));
        let hours = hours_spanned(&[span(HOUR_MS - 10, 2 * HOUR_MS + 5)]).unwrap();
        assert_eq!(hours, [at(0), at(HOUR_MS), at(2 * HOUR_MS)]);
        // A window ending on the hour does not reach into the next one.
        let hours = hours_spanned(&[span(0, HOUR_MS), span(5, 5)]).unwrap();
        assert_eq!(hours, [at(0)]);
    }
}
