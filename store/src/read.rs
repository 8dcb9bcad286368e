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

use std::collections::{BTreeMap, HashSet};

use chrono::{DateTime, Utc};
use odp_core::filter::{StackFilter, ThreadFilter};
use odp_core::flamegraph::FlameNode;
use odp_core::stats::FunctionShare;
use odp_core::{EventKind, WeightedStack};
use odp_profile::{many, stacks, weigh, NameTree, Selection, View};
use sqlx::{PgPool, Postgres, QueryBuilder};
use uuid::Uuid;

use crate::blocks::load_profiles;
use crate::Result;

/// Whose windows a read covers.
#[derive(Debug, Clone)]
pub enum ReadScope {
    Profile(Uuid),
    /// The profiles of a service, optionally only some hosts (empty: all).
    Service {
        service: String,
        hosts: Vec<String>,
    },
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
}

impl Read {
    pub fn profile(profile_id: Uuid) -> Read {
        Read {
            scope: ReadScope::Profile(profile_id),
            from: None,
            to: None,
            thread: None,
            stacks: StackFilter::default(),
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
    /// The host's profiles, one view each.
    pub views: Vec<View>,
}

impl HostView {
    pub fn samples(&self) -> u64 {
        self.views.iter().map(View::samples).sum()
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
    pub event: Option<String>,
    pub profiles: u64,
    pub snapshots: i64,
    /// Sorted by host.
    pub hosts: Vec<HostView>,
}

impl ReadResult {
    pub fn samples(&self) -> u64 {
        self.hosts.iter().map(HostView::samples).sum()
    }

    fn views(&self) -> Vec<&View> {
        self.hosts.iter().flat_map(|h| &h.views).collect()
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
        let views: Vec<View> = self.hosts.iter().flat_map(|h| h.views.clone()).collect();
        View::merge_owned(views)
    }

    /// Every stack with samples, by name.
    pub fn stacks(&self) -> Vec<WeightedStack> {
        stacks::weighted_stacks(&self.merged())
    }
}

/// Reads `read`: see the module documentation.
pub async fn read(pool: &PgPool, read: &Read) -> Result<ReadResult> {
    let groups = window_groups(pool, read).await?;
    let Some(event) = groups
        .iter()
        .min_by_key(|g| g.first_id)
        .map(|g| g.event.clone())
    else {
        return Ok(ReadResult::default());
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
            },
        );
        profile_ids.extend(group.profiles);
    }
    let mut ids: Vec<Uuid> = profile_ids.into_iter().collect();
    ids.sort_unstable();
    let host_filter: Vec<String> = hosts.keys().cloned().collect();
    let event_kind = event.parse::<EventKind>().ok();
    let started = std::time::Instant::now();
    let profiles = load_profiles(pool, &ids).await?;
    let loaded = started.elapsed();
    let read_owned = read.clone();
    let views = tokio::task::spawn_blocking(move || {
        let selection = Selection {
            threads: read_owned.thread.as_ref(),
            since_ms: read_owned.from.map(|t| t.timestamp_millis()),
            until_ms: read_owned.to.map(|t| t.timestamp_millis()),
            stacks: None,
            hosts: Some(&host_filter),
            event: event_kind,
        };
        host_views(&profiles, &selection, &read_owned.stacks)
    })
    .await
    .map_err(|e| crate::StoreError::Corrupt(format!("selecting samples failed: {e}")))?;
    let selected = started.elapsed();
    for (host, views) in views {
        if let Some(entry) = hosts.get_mut(&host) {
            entry.views = views;
        }
    }
    tracing::debug!(
        profiles = ids.len(),
        load_ms = loaded.as_millis() as u64,
        select_ms = (selected - loaded).as_millis() as u64,
        "read"
    );
    Ok(ReadResult {
        event: Some(event),
        profiles: ids.len() as u64,
        snapshots,
        hosts: hosts.into_values().collect(),
    })
}

/// Each profile's selected samples as views, weighted together (one scale
/// for all, so hosts sampled at different rates compare by time), grouped
/// by host. A profile's windows normally all come from one host; one that
/// has several is split.
fn host_views(
    profiles: &[(Uuid, odp_profile::Profile)],
    selection: &Selection<'_>,
    stack_filter: &StackFilter,
) -> BTreeMap<String, Vec<View>> {
    let mut parts = Vec::new();
    for (_, profile) in profiles {
        let names = std::rc::Rc::new(NameTree::new(profile));
        let mut profile_hosts: Vec<&str> =
            profile.windows.iter().map(|w| w.host.as_str()).collect();
        profile_hosts.sort_unstable();
        profile_hosts.dedup();
        for host in profile_hosts {
            let only = [host.to_owned()];
            let hosts = selection.hosts.map_or(&only[..], |all| {
                if all.iter().any(|h| h == host) {
                    &only[..]
                } else {
                    &[]
                }
            });
            if hosts.is_empty() {
                continue;
            }
            let sums = profile.select(
                &Selection {
                    hosts: Some(hosts),
                    ..*selection
                },
                &names,
            );
            parts.push((host.to_owned(), profile, std::rc::Rc::clone(&names), sums));
        }
    }
    let sums: Vec<&odp_profile::NodeSums> = parts.iter().map(|p| &p.3).collect();
    let weighted = weigh(&sums);
    let mut out: BTreeMap<String, Vec<View>> = BTreeMap::new();
    for ((host, profile, names, _), mut counts) in parts.into_iter().zip(weighted) {
        if !stack_filter.is_noop() {
            let kept = names.stacks_kept(&profile.tree, stack_filter);
            for (count, kept) in counts.iter_mut().zip(kept) {
                if !kept {
                    *count = 0;
                }
            }
        }
        out.entry(host).or_default().push(names.view(&counts));
    }
    out
}

/// Per (host, event): windows, profiles and the first window's id.
struct WindowGroup {
    host: String,
    event: String,
    windows: i64,
    profiles: Vec<Uuid>,
    first_id: i64,
}

async fn window_groups(pool: &PgPool, read: &Read) -> Result<Vec<WindowGroup>> {
    let mut qb = QueryBuilder::new(
        "select n.host, n.event, count(*)::bigint, array_agg(distinct n.profile_id), min(n.id)
         from snapshots n where",
    );
    push_conditions(read, &mut qb);
    qb.push(" group by n.host, n.event");
    let rows: Vec<(String, String, i64, Vec<Uuid>, i64)> =
        qb.build_query_as().fetch_all(pool).await?;
    Ok(rows
        .into_iter()
        .map(|(host, event, windows, profiles, first_id)| WindowGroup {
            host,
            event,
            windows,
            profiles,
            first_id,
        })
        .collect())
}

/// Appends the conditions on windows (aliased `n`) after a `where`.
fn push_conditions(read: &Read, qb: &mut QueryBuilder<'_, Postgres>) {
    match &read.scope {
        ReadScope::Profile(id) => {
            qb.push(" n.profile_id = ").push_bind(*id);
        }
        ReadScope::Service { service, hosts } => {
            qb.push(" n.profile_id in (select id from profiles where service = ")
                .push_bind(service.clone())
                .push(")");
            if !hosts.is_empty() {
                qb.push(" and n.host = any(")
                    .push_bind(hosts.clone())
                    .push(")");
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

    fn sql(read: &Read) -> String {
        let mut qb = QueryBuilder::new("select 1 from snapshots n where");
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
            hosts: vec!["h-1".into()],
        };
        read.from = None;
        read.to = None;
        assert!(
            sql(&read).ends_with("and n.host = any($2)"),
            "{}",
            sql(&read)
        );
        assert_eq!(
            sql(&Read::profile(Uuid::nil())),
            "select 1 from snapshots n where n.profile_id = $1"
        );
    }
}
