//! A trend's read: per window of a service's history, its samples and
//! those on stacks a pattern matches. Each rollup block is counted as it
//! is decoded and dropped after, so that a month of days is never all in
//! memory at once, and the two threads reuse the memory of the blocks
//! they are done with.

use odp_core::filter::StackFilter;
use odp_core::EventKind;
use odp_profile::halves::map_in_halves;
use odp_profile::{Profile, Selection};

use odp_core::trend::WindowCount;

use super::{load, Read, Spans};
use crate::database::Database;
use crate::{rollups, Result, StoreError};

/// Per window that `read` covers (its threads, range and hosts), its
/// samples and those of `matched` stacks: what a function's trend is
/// made of ([`odp_core::trend`]). With [`Spans::Range`], a whole UTC day
/// of a service may come as one window per host: for steps of whole days
/// that start at midnight. `None` when nothing matched.
pub async fn read_window_counts(
    db: impl Into<Database>,
    read: &Read,
    matched: &StackFilter,
    spans: Spans,
) -> Result<Option<(EventKind, Vec<WindowCount>)>> {
    let db = db.into();
    let Some(loaded) = load(&db, read, spans).await? else {
        return Ok(None);
    };
    let read = read.clone();
    let matched = matched.clone();
    let started = std::time::Instant::now();
    let counted = tokio::task::spawn_blocking(move || -> Result<_> {
        let host_filter = loaded.host_filter();
        let all = loaded.selection(&read, &host_filter, &read.stacks);
        let parts: Vec<Part<'_>> = loaded
            .profiles
            .iter()
            .map(|(_, profile)| Part::Decoded(profile))
            .chain(loaded.rollup_blocks.iter().map(Part::Block))
            .collect();
        let counts = map_in_halves(&parts, 2, |part| match part {
            Part::Decoded(profile) => Ok(window_counts(profile, &all, &matched)),
            Part::Block(block) => rollups::decode_and_cache(block)
                .map(|profile| window_counts(&profile, &all, &matched)),
        });
        let counts = counts.into_iter().collect::<Result<Vec<_>>>()?;
        let counts = counts.into_iter().flatten().collect();
        Ok((loaded.loaded, Some((loaded.event, counts))))
    })
    .await
    .map_err(|e| StoreError::Corrupt(format!("counting windows failed: {e}")))?;
    let (times, counts) = counted?;
    tracing::debug!(
        load = %times,
        count_ms = started.elapsed().as_millis() as u64,
        "window counts"
    );
    Ok(counts)
}

/// A part of a trend's read: a profile decoded, or a rollup's block,
/// decoded when its windows are counted.
enum Part<'a> {
    Decoded(&'a Profile),
    Block(&'a rollups::ReadBlock),
}

/// Per window of `profile`, the samples `selection` keeps and those of
/// them `matched` keeps.
fn window_counts(
    profile: &Profile,
    selection: &Selection<'_>,
    matched: &StackFilter,
) -> Vec<WindowCount> {
    let hits = profile.window_hits(selection, matched);
    profile
        .windows
        .iter()
        .zip(hits)
        .filter(|(_, hits)| hits.samples > 0)
        .map(|(window, hits)| WindowCount {
            host: window.host.clone(),
            start_ms: window.start_ms,
            end_ms: window.end_ms,
            period: window.period,
            samples: hits.samples,
            matched: hits.matched,
        })
        .collect()
}
