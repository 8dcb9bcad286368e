//! Read side across profiles: a service's samples over a time range,
//! grouped per host (the instances of Atys' two-level merge), and one
//! profile's samples narrowed to threads and a time window; and a profile's
//! per-window timeline.
//!
//! Each result holds one event only (the first stored), so counts of
//! different units are never added. Samples are summed in SQL grouped by
//! (host, stack) in one query, then the distinct stacks are resolved to
//! frames in two more: the cost does not grow with the number of windows.

use std::collections::{BTreeMap, HashSet};

use chrono::{DateTime, Utc};
use odp_core::filter::ThreadFilter;
use odp_core::merge::{merge_instances, InstanceStacks, MergedStacks};
use odp_core::WeightedStack;
use serde::Serialize;
use sqlx::{PgPool, Postgres, QueryBuilder};
use uuid::Uuid;

use crate::query::resolve_stacks;
use crate::weighting::{weighted_counts, MergedCount, MERGED_COUNT_COLUMNS};
use crate::Result;

/// A service's samples over `[since, until)`: every snapshot of its
/// profiles whose window overlaps the range.
#[derive(Debug, Clone)]
pub struct AggregateQuery {
    pub service: String,
    pub since: DateTime<Utc>,
    pub until: DateTime<Utc>,
    /// Only these hosts; empty means all.
    pub hosts: Vec<String>,
    /// Only samples of threads with a matching name.
    pub thread: Option<ThreadFilter>,
    /// Narrows the range further when set.
    pub window_since: Option<DateTime<Utc>>,
    pub window_until: Option<DateTime<Utc>>,
}

/// One profile's samples, optionally only some threads and windows.
#[derive(Debug, Clone)]
pub struct ProfileSliceQuery {
    pub profile_id: Uuid,
    pub thread: Option<ThreadFilter>,
    pub window_since: Option<DateTime<Utc>>,
    pub window_until: Option<DateTime<Utc>>,
}

/// One host's part of a result.
#[derive(Debug, Clone, Default)]
pub struct HostStacks {
    pub host: String,
    pub profiles: u64,
    pub snapshots: i64,
    pub samples: u64,
    pub stacks: Vec<WeightedStack>,
}

/// Samples per host, of one event.
#[derive(Debug, Clone, Default)]
pub struct ScopedStacks {
    /// `None` when nothing matched.
    pub event: Option<String>,
    /// Distinct profiles with a matching snapshot.
    pub profiles: u64,
    pub snapshots: i64,
    pub samples: u64,
    /// Sorted by host.
    pub hosts: Vec<HostStacks>,
}

impl ScopedStacks {
    /// The two-level merge: per host, then across hosts.
    pub fn merged(&self) -> MergedStacks {
        let instances: Vec<InstanceStacks> = self
            .hosts
            .iter()
            .map(|h| InstanceStacks {
                instance: h.host.clone(),
                stacks: h.stacks.clone(),
            })
            .collect();
        merge_instances(&instances)
    }
}

/// Which snapshots a query reads.
enum Scope<'a> {
    Profile(Uuid),
    Service {
        service: &'a str,
        hosts: &'a [String],
    },
}

struct Selection<'a> {
    scope: Scope<'a>,
    from: Option<DateTime<Utc>>,
    to: Option<DateTime<Utc>>,
    thread: Option<&'a ThreadFilter>,
}

impl Selection<'_> {
    /// Appends the conditions on snapshots (aliased `n`) after a `where`.
    fn push_conditions(&self, qb: &mut QueryBuilder<'_, Postgres>) {
        match &self.scope {
            Scope::Profile(id) => {
                qb.push(" n.profile_id = ").push_bind(*id);
            }
            Scope::Service { service, hosts } => {
                qb.push(" n.profile_id in (select id from profiles where service = ")
                    .push_bind(service.to_string())
                    .push(")");
                if !hosts.is_empty() {
                    qb.push(" and n.host = any(")
                        .push_bind(hosts.to_vec())
                        .push(")");
                }
            }
        }
        if let Some(from) = self.from {
            qb.push(" and n.window_end > ").push_bind(from);
        }
        if let Some(to) = self.to {
            qb.push(" and n.window_start < ").push_bind(to);
        }
    }
}

fn later(a: DateTime<Utc>, b: Option<DateTime<Utc>>) -> DateTime<Utc> {
    b.map_or(a, |b| a.max(b))
}

fn earlier(a: DateTime<Utc>, b: Option<DateTime<Utc>>) -> DateTime<Utc> {
    b.map_or(a, |b| a.min(b))
}

/// A service's samples over a range, per host.
pub async fn aggregate_stacks(pool: &PgPool, query: &AggregateQuery) -> Result<ScopedStacks> {
    let selection = Selection {
        scope: Scope::Service {
            service: &query.service,
            hosts: &query.hosts,
        },
        from: Some(later(query.since, query.window_since)),
        to: Some(earlier(query.until, query.window_until)),
        thread: query.thread.as_ref(),
    };
    scoped_stacks(pool, &selection).await
}

/// One profile's samples, narrowed to threads and windows, per host.
pub async fn profile_slice(pool: &PgPool, query: &ProfileSliceQuery) -> Result<ScopedStacks> {
    let selection = Selection {
        scope: Scope::Profile(query.profile_id),
        from: query.window_since,
        to: query.window_until,
        thread: query.thread.as_ref(),
    };
    scoped_stacks(pool, &selection).await
}

async fn scoped_stacks(pool: &PgPool, selection: &Selection<'_>) -> Result<ScopedStacks> {
    // Per (host, event): snapshots, their profiles and the first snapshot
    // id, which picks the result's event as `profile_frames` does.
    let mut qb = QueryBuilder::new(
        "select n.host, n.event, count(*)::bigint, array_agg(distinct n.profile_id), min(n.id)
         from snapshots n where",
    );
    selection.push_conditions(&mut qb);
    qb.push(" group by n.host, n.event");
    let groups: Vec<(String, String, i64, Vec<Uuid>, i64)> =
        qb.build_query_as().fetch_all(pool).await?;
    let Some(event) = groups.iter().min_by_key(|g| g.4).map(|g| g.1.clone()) else {
        return Ok(ScopedStacks::default());
    };
    let mut hosts: BTreeMap<String, HostStacks> = BTreeMap::new();
    let mut all_profiles: HashSet<Uuid> = HashSet::new();
    let mut snapshots = 0;
    for (host, group_event, count, profiles, _) in groups {
        if group_event != event {
            continue;
        }
        snapshots += count;
        let entry = hosts.entry(host.clone()).or_default();
        entry.host = host;
        entry.snapshots = count;
        entry.profiles = profiles.len() as u64;
        all_profiles.extend(profiles);
    }

    let thread_names = match selection.thread {
        Some(filter) => Some(matching_thread_names(pool, selection, &event, filter).await?),
        None => None,
    };
    let rows: Vec<(String, Uuid, i64, f64, i64, i64)> = match &thread_names {
        Some(names) if names.is_empty() => Vec::new(),
        _ => {
            let mut qb = QueryBuilder::new(format!(
                "select n.host, s.stack_id, {MERGED_COUNT_COLUMNS}
                 from samples s join snapshots n on n.id = s.snapshot_id where"
            ));
            selection.push_conditions(&mut qb);
            qb.push(" and n.event = ").push_bind(event.clone());
            if let Some(names) = &thread_names {
                qb.push(
                    " and exists (select 1 from snapshot_threads t
                      where t.snapshot_id = s.snapshot_id and t.tid = s.tid and t.name = any(",
                )
                .push_bind(names.clone())
                .push("))");
            }
            qb.push(" group by n.host, s.stack_id");
            qb.build_query_as().fetch_all(pool).await?
        }
    };

    let merged: Vec<MergedCount> = rows.iter().map(|r| (r.2, r.3, r.4, r.5).into()).collect();
    let counts = weighted_counts(&merged)?;
    let mut stack_ids: Vec<Uuid> = rows.iter().map(|r| r.1).collect();
    stack_ids.sort_unstable();
    stack_ids.dedup();
    let resolved = resolve_stacks(pool, &stack_ids).await?;
    let names = resolved.display_names();
    let mut samples = 0u64;
    for ((host, stack_id, ..), count) in rows.into_iter().zip(counts) {
        let frames = resolved
            .frames_of(stack_id)?
            .iter()
            .map(|&i| names[i as usize].clone())
            .collect();
        let entry = hosts.entry(host.clone()).or_default();
        entry.host = host;
        entry.samples += count;
        entry.stacks.push(WeightedStack { frames, count });
        samples += count;
    }
    Ok(ScopedStacks {
        event: Some(event),
        profiles: all_profiles.len() as u64,
        snapshots,
        samples,
        hosts: hosts.into_values().collect(),
    })
}

/// The distinct thread names of the selected snapshots that `filter`
/// matches; matched in Rust so the pattern language is the API's, not
/// Postgres'.
async fn matching_thread_names(
    pool: &PgPool,
    selection: &Selection<'_>,
    event: &str,
    filter: &ThreadFilter,
) -> Result<Vec<String>> {
    let mut qb = QueryBuilder::new(
        "select distinct t.name from snapshot_threads t
         join snapshots n on n.id = t.snapshot_id where",
    );
    selection.push_conditions(&mut qb);
    qb.push(" and n.event = ").push_bind(event.to_owned());
    let names: Vec<(String,)> = qb.build_query_as().fetch_all(pool).await?;
    Ok(names
        .into_iter()
        .map(|(name,)| name)
        .filter(|name| filter.matches(name))
        .collect())
}

/// One window of a profile on one host.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct TimelineWindow {
    pub host: String,
    pub window_start: DateTime<Utc>,
    pub window_end: DateTime<Utc>,
    pub event: String,
    pub samples: i64,
    pub frequency_hz: i32,
}

/// A profile's windows in time order, of its first event only.
pub async fn profile_timeline(pool: &PgPool, profile_id: Uuid) -> Result<Vec<TimelineWindow>> {
    Ok(
        sqlx::query_as::<_, (String, DateTime<Utc>, DateTime<Utc>, String, i64, i32)>(
            "select host, window_start, window_end, event, samples, frequency_hz
         from snapshots
         where profile_id = $1
           and event = (select event from snapshots where profile_id = $1 order by id limit 1)
         order by window_start, id",
        )
        .bind(profile_id)
        .fetch_all(pool)
        .await?
        .into_iter()
        .map(
            |(host, window_start, window_end, event, samples, frequency_hz)| TimelineWindow {
                host,
                window_start,
                window_end,
                event,
                samples,
                frequency_hz,
            },
        )
        .collect(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sql(selection: &Selection<'_>) -> String {
        let mut qb = QueryBuilder::new("select 1 from snapshots n where");
        selection.push_conditions(&mut qb);
        qb.sql().to_owned()
    }

    #[test]
    fn service_scope_filters_hosts_only_when_given() {
        let hosts = vec!["h-1".to_owned()];
        let at = DateTime::from_timestamp(1_700_000_000, 0).unwrap();
        let all = Selection {
            scope: Scope::Service {
                service: "checkout",
                hosts: &[],
            },
            from: Some(at),
            to: Some(at),
            thread: None,
        };
        assert_eq!(
            sql(&all),
            "select 1 from snapshots n where n.profile_id in (select id from profiles \
             where service = $1) and n.window_end > $2 and n.window_start < $3"
        );
        let some = Selection {
            scope: Scope::Service {
                service: "checkout",
                hosts: &hosts,
            },
            from: None,
            to: None,
            thread: None,
        };
        assert!(
            sql(&some).ends_with(" and n.host = any($2)"),
            "{}",
            sql(&some)
        );
    }

    #[test]
    fn profile_scope_narrows_by_window_when_given() {
        let at = DateTime::from_timestamp(1_700_000_000, 0).unwrap();
        let selection = Selection {
            scope: Scope::Profile(Uuid::nil()),
            from: None,
            to: Some(at),
            thread: None,
        };
        assert_eq!(
            sql(&selection),
            "select 1 from snapshots n where n.profile_id = $1 and n.window_start < $2"
        );
    }

    #[test]
    fn window_bounds_narrow_the_range() {
        let (a, b) = (
            DateTime::from_timestamp(100, 0).unwrap(),
            DateTime::from_timestamp(200, 0).unwrap(),
        );
        assert_eq!(later(a, Some(b)), b);
        assert_eq!(later(b, Some(a)), b);
        assert_eq!(later(a, None), a);
        assert_eq!(earlier(b, Some(a)), a);
        assert_eq!(earlier(b, None), b);
    }
}
