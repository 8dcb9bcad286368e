//! The read side: one profile, or a service's profiles over a time range,
//! narrowed to windows, threads and stacks, as [`View`]s per host and
//! merged across hosts (Atys' two-level merge).
//!
//! The windows' headers (one row each) say which profiles a read covers,
//! how many windows each host has and which event the result measures (the
//! first stored window's, so counts of different units are never added).
//! The profiles' blocks are then merged in Rust over integer ids: the
//! cost grows with the profiles' distinct stacks, not with their samples
//! or windows.
//!
//! `postgres.rs` and `mysql.rs` hold each backend's queries of headers:
//! per-group arrays (`array_agg`) and `= any` arrays for bulk lists, or
//! rows grouped in Rust and chunked `in` lists.

mod coverage;
mod mysql;
mod postgres;
mod select;
mod window_counts;

pub use coverage::{read_coverage, CoverageByEvent};
pub use window_counts::read_window_counts;

use std::collections::{BTreeMap, HashSet};

use chrono::{DateTime, Utc};
use odp_core::filter::{StackFilter, ThreadFilter};
use odp_core::flamegraph::FlameNode;
use odp_core::stats::FunctionShare;
use odp_core::{EventKind, WeightedStack};
use odp_profile::{many, stacks, Profile, Selection, View};
use sqlx::{Encode, QueryBuilder, Type};
use uuid::Uuid;

use crate::blocks::{load_profiles, load_uncompacted};
use crate::database::{on_backend, Database};
use crate::sql::mysql_lists::fetch_any;
use crate::{rollups, Result, StoreError};
use select::select_all;

/// Whose windows a read covers.
#[derive(Debug, Clone)]
pub enum ReadScope {
    Profile(Uuid),
    /// The profiles of a service, optionally only some hosts (empty: all).
    Service {
        service: String,
        hosts: Vec<String>,
    },
    /// The member profiles of a run.
    Run(Uuid),
}

/// What to read.
#[derive(Debug, Clone)]
pub struct Read {
    pub scope: ReadScope,
    /// Only windows ending after this.
    pub from: Option<DateTime<Utc>>,
    /// Only windows starting before this.
    pub to: Option<DateTime<Utc>>,
    /// Only samples of threads with a matching name.
    pub thread: Option<ThreadFilter>,
    /// Only the stacks this keeps (applied per host before the merge).
    pub stacks: StackFilter,
    /// Only windows of this event. Without it, a read whose windows
    /// measure different events (a CPU and an off-CPU profile of one
    /// service) fails with [`StoreError::MixedEvents`]: their samples
    /// cannot be added.
    pub event: Option<EventKind>,
}

impl Read {
    pub fn profile(profile_id: Uuid) -> Read {
        Read {
            scope: ReadScope::Profile(profile_id),
            from: None,
            to: None,
            thread: None,
            stacks: StackFilter::default(),
            event: None,
        }
    }
}

/// One host's part of a read.
#[derive(Debug, Clone)]
pub struct HostView {
    pub host: String,
    /// Profiles with a window in the read.
    pub profiles: u64,
    /// Windows in the read (before thread and stack filters).
    pub snapshots: i64,
    /// The host's profiles, one view each (those read from a rollup are
    /// in [`ReadResult::rollups`]).
    pub views: Vec<View>,
    /// The host's samples in the rollups read.
    pub rolled_samples: u64,
}

impl HostView {
    pub fn samples(&self) -> u64 {
        self.views.iter().map(View::samples).sum::<u64>() + self.rolled_samples
    }

    /// The host's profiles in one view.
    pub fn view(&self) -> View {
        View::merge(&self.views)
    }
}

/// A read's result, per host: Atys' first level (per instance) is each
/// host's views, the second (across hosts) is computed by what is asked:
/// a flame graph or a top table straight from the views, stacks for
/// exports from their merge.
#[derive(Debug, Clone, Default)]
pub struct ReadResult {
    /// `None` when nothing matched.
    pub event: Option<EventKind>,
    pub profiles: u64,
    pub snapshots: i64,
    /// Sorted by host.
    pub hosts: Vec<HostView>,
    /// What was read from service rollups: many hosts' windows each.
    pub rollups: Vec<View>,
    /// Event units (nanoseconds, bytes, cycles) one sample of the views
    /// stands for: the windows' period, or their mean when the views were
    /// weighted to one scale. `None` when nothing was read or a period is
    /// unknown.
    pub period: Option<f64>,
}

impl ReadResult {
    /// Every sample read (what the flame graph's root counts).
    pub fn samples(&self) -> u64 {
        self.views().into_iter().map(View::samples).sum()
    }

    fn views(&self) -> Vec<&View> {
        self.hosts
            .iter()
            .flat_map(|h| &h.views)
            .chain(&self.rollups)
            .collect()
    }

    /// The flame graph of everything read, cut to about `budget` nodes,
    /// optionally opened at `focus` (names from the root); `None` when
    /// there is no such path.
    pub fn flame_graph(&self, budget: usize, focus: Option<&[&str]>) -> Option<FlameNode> {
        many::flame_graph(&self.views(), budget, focus)
    }

    /// The hottest functions of everything read.
    pub fn top_functions(&self, limit: usize) -> Vec<FunctionShare> {
        many::top_functions(&self.views(), limit)
    }

    /// Everything read in one view.
    pub fn merged(&self) -> View {
        View::merge_owned(self.views().into_iter().cloned().collect())
    }

    /// Every stack with samples, by name.
    pub fn stacks(&self) -> Vec<WeightedStack> {
        stacks::weighted_stacks(&self.merged())
    }
}

/// What a read loaded: its event, hosts and profiles, decoded, and the
/// blocks of its service rollups, to decode.
struct Loaded {
    event: EventKind,
    ids: Vec<Uuid>,
    snapshots: i64,
    /// Per host, without views yet.
    hosts: BTreeMap<String, HostView>,
    /// Profiles read from their own blocks (and rolled-up profiles'
    /// windows not compacted yet).
    profiles: Vec<(Uuid, Profile)>,
    /// Service rollups: many profiles' windows each. A read decodes them
    /// all ([`Loaded::decode_rollups`]); a trend counts each as it decodes
    /// it, so that a month's are never all in memory at once.
    rollup_blocks: Vec<rollups::ReadBlock>,
    rollups: Vec<Profile>,
    /// How many of the profiles were read from rollups.
    rolled_up: usize,
    loaded: LoadTimes,
}

/// Where a read's loading went: finding its windows' groups, which of
/// their profiles are rolled up, and fetching and decoding the blocks.
#[derive(Debug, Clone, Copy, Default)]
struct LoadTimes {
    groups: std::time::Duration,
    rolled: std::time::Duration,
    blocks: std::time::Duration,
}

impl std::fmt::Display for LoadTimes {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let ms = |d: std::time::Duration| d.as_millis();
        write!(
            f,
            "{} ms (groups {}, rolled {}, blocks {})",
            ms(self.groups + self.rolled + self.blocks),
            ms(self.groups),
            ms(self.rolled),
            ms(self.blocks)
        )
    }
}

impl Loaded {
    /// What [`Profile::select`] keeps of it: `read`'s threads, range and
    /// hosts, its event and `stacks`.
    fn selection<'a>(
        &self,
        read: &'a Read,
        host_filter: &'a [String],
        stacks: &'a StackFilter,
    ) -> Selection<'a> {
        Selection {
            threads: read.thread.as_ref(),
            since_ms: read.from.map(|t| t.timestamp_millis()),
            until_ms: read.to.map(|t| t.timestamp_millis()),
            stacks: Some(stacks),
            hosts: Some(host_filter),
            event: Some(self.event),
        }
    }

    async fn decode_rollups(&mut self) -> Result<()> {
        let started = std::time::Instant::now();
        let blocks = std::mem::take(&mut self.rollup_blocks);
        self.rollups = rollups::decoded_and_cached(blocks).await?;
        self.loaded.blocks += started.elapsed();
        Ok(())
    }

    fn host_filter(&self) -> Vec<String> {
        self.hosts.keys().cloned().collect()
    }
}

/// How finely a read must tell its windows apart in time.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Spans {
    /// Only which windows lie in its range: whole UTC days in the range
    /// may be read as one window per host (service days), unless the read
    /// filters threads (a day keeps one name per thread).
    Range,
    /// Every window as stored (at most an hour's rollup).
    Stored,
}

impl Spans {
    /// The range whose whole days may be read as service days.
    fn whole_days(self, read: &Read) -> Option<(DateTime<Utc>, DateTime<Utc>)> {
        match (self, read.from, read.to, &read.thread) {
            (Spans::Range, Some(from), Some(to), None) => Some((from, to)),
            _ => None,
        }
    }
}

/// Finds and decodes what `read` covers; `None` when nothing matched.
async fn load(db: &Database, read: &Read, spans: Spans) -> Result<Option<Loaded>> {
    let started = std::time::Instant::now();
    let groups = window_groups(db, read).await?;
    let mut times = LoadTimes {
        groups: started.elapsed(),
        ..LoadTimes::default()
    };
    let mut events: Vec<EventKind> = groups.iter().map(|g| g.event).collect();
    events.sort_unstable_by_key(|e| e.as_str());
    events.dedup();
    if events.len() > 1 {
        return Err(StoreError::MixedEvents(events));
    }
    let Some(&event) = events.first() else {
        return Ok(None);
    };
    let mut hosts: BTreeMap<String, HostView> = BTreeMap::new();
    let mut profile_ids: HashSet<Uuid> = HashSet::new();
    let mut snapshots = 0;
    for group in groups.into_iter().filter(|g| g.event == event) {
        snapshots += group.windows;
        hosts.insert(
            group.host.clone(),
            HostView {
                host: group.host,
                profiles: group.profiles.len() as u64,
                snapshots: group.windows,
                views: Vec::new(),
                rolled_samples: 0,
            },
        );
        profile_ids.extend(group.profiles);
    }
    let mut ids: Vec<Uuid> = profile_ids.into_iter().collect();
    ids.sort_unstable();
    let started = std::time::Instant::now();
    let rolled = rolled_up(db, read, &ids).await?;
    times.rolled = started.elapsed();
    let started = std::time::Instant::now();
    let own: Vec<Uuid> = ids
        .iter()
        .filter(|id| !rolled.members.contains(id))
        .copied()
        .collect();
    let members: Vec<Uuid> = rolled.members.iter().copied().collect();
    let mut profiles = load_profiles(db, &own).await?;
    profiles.extend(load_uncompacted(db, &members).await?);
    let rollup_blocks = match &read.scope {
        ReadScope::Service { service, .. } if !rolled.hours.is_empty() => {
            rollups::hour_blocks(db, service, &rolled.hours, spans.whole_days(read)).await?
        }
        _ => Vec::new(),
    };
    Ok(Some(Loaded {
        event,
        ids,
        snapshots,
        hosts,
        profiles,
        rollup_blocks,
        rollups: Vec::new(),
        rolled_up: members.len(),
        loaded: LoadTimes {
            blocks: started.elapsed(),
            ..times
        },
    }))
}

/// Reads `read`: see the module documentation.
pub async fn read(db: impl Into<Database>, read: &Read) -> Result<ReadResult> {
    let db = db.into();
    let Some(mut loaded) = load(&db, read, Spans::Range).await? else {
        return Ok(ReadResult::default());
    };
    loaded.decode_rollups().await?;
    let started = std::time::Instant::now();
    let read_owned = read.clone();
    let (loaded, selected) = tokio::task::spawn_blocking(move || {
        let host_filter = loaded.host_filter();
        let selection = loaded.selection(&read_owned, &host_filter, &read_owned.stacks);
        let selected = select_all(&loaded.profiles, &loaded.rollups, &selection);
        (loaded, selected)
    })
    .await
    .map_err(|e| StoreError::Corrupt(format!("selecting samples failed: {e}")))?;
    let Loaded {
        event,
        ids,
        snapshots,
        mut hosts,
        rolled_up,
        loaded: load_time,
        ..
    } = loaded;
    for (host, views) in selected.host_views {
        if let Some(entry) = hosts.get_mut(&host) {
            entry.views = views;
        }
    }
    for (host, samples) in selected.host_rolled {
        if let Some(entry) = hosts.get_mut(&host) {
            entry.rolled_samples = samples;
        }
    }
    tracing::debug!(
        profiles = ids.len(),
        rolled_up,
        rollups = selected.rollups.len(),
        load = %load_time,
        select_ms = started.elapsed().as_millis() as u64,
        "read"
    );
    Ok(ReadResult {
        event: Some(event),
        profiles: ids.len() as u64,
        snapshots,
        hosts: hosts.into_values().collect(),
        rollups: selected.rollups,
        period: selected.period,
    })
}

/// Which of a service read's profiles are rolled up, and the hours of
/// their windows in the read (none for a profile or run read, which
/// reads its rolled-up profiles out of their rollups one by one).
#[derive(Default)]
struct Rolled {
    members: HashSet<Uuid>,
    hours: Vec<DateTime<Utc>>,
}

async fn rolled_up(db: &Database, read: &Read, ids: &[Uuid]) -> Result<Rolled> {
    if !matches!(read.scope, ReadScope::Service { .. }) {
        return Ok(Rolled::default());
    }
    let members: Vec<(Uuid,)> = fetch_any(
        db,
        "select profile_id from profile_blocks where profile_id = any($1) and rollup = 'rolled'",
        ids,
    )
    .await?;
    let members: Vec<Uuid> = members.into_iter().map(|(id,)| id).collect();
    if members.is_empty() {
        return Ok(Rolled::default());
    }
    let hours = on_backend!(db, rolled_hours(read, &members))?;
    Ok(Rolled {
        members: members.into_iter().collect(),
        hours,
    })
}

/// Per (host, event): windows and profiles.
struct WindowGroup {
    host: String,
    event: EventKind,
    windows: i64,
    profiles: Vec<Uuid>,
}

async fn window_groups(db: &Database, read: &Read) -> Result<Vec<WindowGroup>> {
    let rows = on_backend!(db, window_groups(read))?;
    rows.into_iter()
        .map(|(host, event, windows, profiles)| {
            let event = event
                .parse()
                .map_err(|e| StoreError::Corrupt(format!("windows of {host}: {e}")))?;
            Ok(WindowGroup {
                host,
                event,
                windows,
                profiles,
            })
        })
        .collect()
}

/// Per (host, event) of a read's windows: the count and the profiles.
type GroupRow = (String, String, i64, Vec<Uuid>);

/// `select columns` of the read's windows (aliased `n`), of its event if
/// it names one, `group by group_by`.
fn window_query<'a, DB>(read: &'a Read, columns: &str, group_by: &str) -> QueryBuilder<'a, DB>
where
    DB: sqlx::Database,
    Uuid: Encode<'a, DB> + Type<DB>,
    &'a str: Encode<'a, DB> + Type<DB>,
    DateTime<Utc>: Encode<'a, DB> + Type<DB>,
{
    let mut qb = QueryBuilder::new(format!("select {columns} from snapshots n where"));
    push_conditions(read, &mut qb);
    if let Some(event) = read.event {
        qb.push(" and n.event = ").push_bind(event.as_str());
    }
    qb.push(" group by ").push(group_by);
    qb
}

/// Appends the conditions on windows (aliased `n`) after a `where`.
fn push_conditions<'a, DB>(read: &'a Read, qb: &mut QueryBuilder<'a, DB>)
where
    DB: sqlx::Database,
    Uuid: Encode<'a, DB> + Type<DB>,
    &'a str: Encode<'a, DB> + Type<DB>,
    DateTime<Utc>: Encode<'a, DB> + Type<DB>,
{
    match &read.scope {
        ReadScope::Profile(id) => {
            qb.push(" n.profile_id = ").push_bind(*id);
        }
        ReadScope::Run(id) => {
            qb.push(" n.profile_id in (select id from profiles where run_id = ")
                .push_bind(*id)
                .push(")");
        }
        ReadScope::Service { service, hosts } => {
            qb.push(" n.profile_id in (select id from profiles where service = ")
                .push_bind(service.as_str())
                .push(")");
            if !hosts.is_empty() {
                // A few hosts, named by the reader: a short list.
                qb.push(" and n.host in (");
                let mut list = qb.separated(", ");
                for host in hosts {
                    list.push_bind(host.as_str());
                }
                list.push_unseparated(")");
            }
        }
    }
    if let Some(from) = read.from {
        qb.push(" and n.window_end > ").push_bind(from);
    }
    if let Some(to) = read.to {
        qb.push(" and n.window_start < ").push_bind(to);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use sqlx::{MySql, Postgres};

    fn sql(read: &Read) -> String {
        let mut qb = QueryBuilder::<Postgres>::new("select 1 from snapshots n where");
        push_conditions(read, &mut qb);
        qb.sql().to_owned()
    }

    #[test]
    fn service_scope_filters_hosts_only_when_given() {
        let at = DateTime::from_timestamp(1_700_000_000, 0).unwrap();
        let mut read = Read {
            scope: ReadScope::Service {
                service: "checkout".into(),
                hosts: vec![],
            },
            from: Some(at),
            to: Some(at),
            ..Read::profile(Uuid::nil())
        };
        assert_eq!(
            sql(&read),
            "select 1 from snapshots n where n.profile_id in (select id from profiles \
             where service = $1) and n.window_end > $2 and n.window_start < $3"
        );
        read.scope = ReadScope::Service {
            service: "checkout".into(),
            hosts: vec!["h-1".into(), "h-2".into()],
        };
        read.from = None;
        read.to = None;
        assert!(
            sql(&read).ends_with("and n.host in ($2, $3)"),
            "{}",
            sql(&read)
        );
        let mut qb = QueryBuilder::<MySql>::new("select 1 from snapshots n where");
        push_conditions(&read, &mut qb);
        assert!(qb.sql().ends_with("and n.host in (?, ?)"), "{}", qb.sql());
        assert_eq!(
            sql(&Read::profile(Uuid::nil())),
            "select 1 from snapshots n where n.profile_id = $1"
        );
    }
}
