//! Continuous profiles on a live agent, run in this process with segments
//! of 10 s instead of an hour, through a real broker (Tansu): a busy
//! process profiled by name at 19 Hz in segments whose profile ids the
//! pipeline derives too, a service with no process left alone until one
//! appears, each next segment started at its boundary (the gap measured),
//! an on-demand profile of the same process beside a segment, the segment
//! taken back by a restarted agent, restarted at once at a new rate,
//! stopped by a sync that removes it and by an undeploy's drain.
//!
//! Needs the `tansu` binary (`ODP_TANSU_BIN`, `PATH` or `~/.cargo/bin`) and
//! perf events (as the other live tests).

mod support;

use std::time::{Duration, Instant};

use odp_core::command::{CommandAction, StartProfile, UndeployMode};
use odp_core::continuous::{segment_profile_id, ContinuousAssignment};
use odp_core::event::{AgentEvent, AgentEventKind, FinishReason};
use odp_core::service::{ServiceDefinition, SyncServices};
use odp_core::{EventKind, Snapshot, Target};
use odp_profiler_service::continuous::SEQUENCES_PER_MS;
use odp_profiler_service::window::unix_ms;
use uuid::Uuid;

use support::in_process::InProcessAgent;
use support::kafka::{Broker, Harness, Seen};

const SEGMENT_MS: i64 = 10_000;
const RATE_HZ: u32 = 19;
/// The rate a sync changes it to.
const FASTER_HZ: u32 = 29;

/// 2 s windows, and segments of [`SEGMENT_MS`].
fn short_segments(config: &mut odp_profiler_service::Config) {
    config.window = Duration::from_secs(2);
    config.continuous_segment = Duration::from_millis(SEGMENT_MS as u64);
}

fn segment_start_s(unix_ms: i64) -> i64 {
    unix_ms.div_euclid(SEGMENT_MS) * SEGMENT_MS / 1000
}

async fn sleep_until_unix_ms(at_ms: i64) {
    let ms = u64::try_from(at_ms - unix_ms()).unwrap_or(0);
    tokio::time::sleep(Duration::from_millis(ms)).await;
}

/// CPU time a process has used, from `/proc/<pid>/stat`.
fn cpu_time(pid: u32) -> Duration {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
    let after_comm = &stat[stat.rfind(')').unwrap() + 2..];
    let fields: Vec<&str> = after_comm.split(' ').collect();
    // utime and stime, fields 14 and 15 of the whole line.
    let ticks: u64 = fields[11].parse::<u64>().unwrap() + fields[12].parse::<u64>().unwrap();
    Duration::from_millis(ticks * 1000 / odp_profiler_service::targets::TICKS_PER_SECOND)
}

fn events(h: &Harness) -> Vec<AgentEvent> {
    h.seen()
        .into_iter()
        .filter_map(|m| match m {
            Seen::Event(e) => Some(e),
            _ => None,
        })
        .collect()
}

fn started_at(h: &Harness, wanted: impl Fn(&AgentEvent, Uuid) -> bool) -> Option<(i64, Uuid)> {
    events(h).into_iter().find_map(|e| match e.kind {
        AgentEventKind::ProfileStarted { profile_id, .. } if wanted(&e, profile_id) => {
            Some((e.at_ms, profile_id))
        }
        _ => None,
    })
}

/// Waits for the first `profile_started` that `wanted` accepts.
async fn wait_started(h: &Harness, wanted: impl Fn(&AgentEvent, Uuid) -> bool) -> (i64, Uuid) {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        if let Some(found) = started_at(h, &wanted) {
            return found;
        }
        assert!(Instant::now() < deadline, "no profile started");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// The `profile_finished` of a profile, waiting for it.
async fn wait_finished(h: &Harness, id: Uuid) -> (FinishReason, u64) {
    let seen = h
        .wait(|m| {
            matches!(m, Seen::Event(e) if matches!(e.kind,
                AgentEventKind::ProfileFinished { profile_id, .. } if profile_id == id))
        })
        .await;
    match seen {
        Seen::Event(AgentEvent {
            kind:
                AgentEventKind::ProfileFinished {
                    reason, snapshots, ..
                },
            ..
        }) => (reason, snapshots),
        _ => unreachable!(),
    }
}

/// Every window of a profile (by one agent, or any), by sequence.
fn windows(h: &Harness, id: Uuid, agent: Option<&str>) -> Vec<Snapshot> {
    let mut found: Vec<Snapshot> = h
        .seen()
        .into_iter()
        .filter_map(|m| match m {
            Seen::Stacks { snapshot, .. }
                if snapshot.profile_id == id && agent.is_none_or(|a| snapshot.agent_id == a) =>
            {
                Some(snapshot)
            }
            _ => None,
        })
        .collect();
    found.sort_by_key(|s| s.sequence);
    found
}

fn sync(services: &[(&str, &str)], continuous: Vec<ContinuousAssignment>) -> CommandAction {
    let services = services
        .iter()
        .map(|(name, process)| ServiceDefinition {
            name: (*name).to_owned(),
            target: Target::ProcessName((*process).to_owned()),
        })
        .collect();
    CommandAction::SyncServices(SyncServices::with_continuous(
        services,
        Vec::new(),
        continuous,
    ))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_service_is_profiled_in_segments_beside_on_demand_profiles_and_across_restarts() {
    let broker = Broker::start().await.expect("start the broker");
    let h = Harness::new(&broker, 2).await;
    let state = tempfile::tempdir().unwrap();
    let name = format!("cb-{}", &Uuid::new_v4().simple().to_string()[..8]);
    let burner = support::build_burner(&name);
    let idle = format!("idle-{}", &Uuid::new_v4().simple().to_string()[..8]);
    let assign = |service: &str| ContinuousAssignment {
        id: Uuid::new_v4(),
        service: service.into(),
        event: EventKind::CpuClock,
        frequency_hz: RATE_HZ,
        // 20 % of a core: the default 0.5 % binds this debug build's
        // sampling thread (it took the rate down to 12 Hz), and this test
        // measures the rate.
        cpu_budget_ppm: 200_000,
        hosts: None,
    };
    let (busy, quiet) = (assign("busy"), assign("quiet"));
    let segment_of = |at_ms: i64| segment_profile_id(busy.id, &h.host, segment_start_s(at_ms));

    let agent = InProcessAgent::start(&h, state.path(), &h.agent_id, short_segments);
    let services = [("busy", name.as_str()), ("quiet", idle.as_str())];
    h.send(
        &h.host,
        &h.command(sync(&services, vec![busy.clone(), quiet.clone()])),
    )
    .await;

    // No process of either service: no segment, over several scans.
    tokio::time::sleep(Duration::from_secs(3)).await;
    assert_eq!(started_at(&h, |_, _| true), None);

    // The busy one appears: its segment starts within a few seconds.
    let appeared_ms = unix_ms();
    let process = support::start_burner(&burner, 300);
    let pid = process.id();
    let (first_at, first) = wait_started(&h, |_, _| true).await;
    let latency_ms = first_at - appeared_ms;
    eprintln!("segment started {latency_ms} ms after its process");
    assert!(latency_ms < 5_000, "{latency_ms} ms");
    assert_eq!(first, segment_of(first_at), "the derived segment id");

    // Two whole segments; the first of them has an on-demand profile of
    // the same process beside it.
    let b1 = (segment_start_s(first_at) * 1000) + SEGMENT_MS;
    let b2 = b1 + SEGMENT_MS;
    sleep_until_unix_ms(b1).await;
    let (cpu_at_b1, late_at_b1) = (cpu_time(pid), unix_ms() - b1);
    tokio::time::sleep(Duration::from_secs(2)).await;
    let on_demand = Uuid::new_v4();
    h.send(
        &h.host,
        &h.command(CommandAction::Start(StartProfile {
            profile_id: on_demand,
            target: Target::Pid(pid),
            duration_ms: 3_000,
            frequency_hz: 49,
            window_ms: Some(1_000),
            options: Default::default(),
        })),
    )
    .await;
    let (reason, _) = wait_finished(&h, on_demand).await;
    assert_eq!(reason, FinishReason::DurationElapsed);
    let beside: u64 = windows(&h, on_demand, None)
        .iter()
        .map(Snapshot::total_samples)
        .sum();
    // The segment's samples, counted below, stay its CPU time × its rate.
    eprintln!("on-demand profile beside the segment: {beside} samples in 3 s at 49 Hz");
    assert!(beside > 0);
    sleep_until_unix_ms(b2).await;
    let (cpu_at_b2, late_at_b2) = (cpu_time(pid), unix_ms() - b2);
    let cpu_in_segment = cpu_at_b2 - cpu_at_b1;

    // Restarted early in the next segment, under a new agent id: the same
    // segment comes back from the state directory.
    sleep_until_unix_ms(b2 + 1_000).await;
    let third = segment_of(b2);
    agent.stop().await;
    let (reason, _) = wait_finished(&h, third).await;
    assert_eq!(reason, FinishReason::Stopped);
    let restarted_id = format!("{}-2", h.agent_id);
    let stopped_ms = unix_ms();
    let agent = InProcessAgent::start(&h, state.path(), &restarted_id, short_segments);
    let (back_at, back) = wait_started(&h, |e, _| e.agent_id == restarted_id).await;
    eprintln!(
        "segment taken back {} ms after the agent stopped",
        back_at - stopped_ms
    );
    assert!(back_at < b2 + SEGMENT_MS, "restarted within the segment");
    assert_eq!(back, third, "the same segment, under the new agent id");

    // A new rate takes effect at once: the part stops, flushed, and the
    // rest of the segment starts at the new rate, numbered above it.
    tokio::time::sleep(Duration::from_millis(1_500)).await;
    let faster = ContinuousAssignment {
        frequency_hz: FASTER_HZ,
        ..busy.clone()
    };
    let changed_ms = unix_ms();
    h.send(&h.host, &h.command(sync(&services, vec![faster])))
        .await;
    let (reason, _) = wait_finished(&h, third).await;
    assert_eq!(reason, FinishReason::Stopped);
    let (rerated_at, rerated) = wait_started(&h, |e, _| e.at_ms > changed_ms).await;
    assert_eq!(rerated, third, "the same segment");
    assert!(rerated_at < b2 + SEGMENT_MS);

    // Removed by a sync: the running segment stops, flushed, and none
    // starts again.
    tokio::time::sleep(Duration::from_secs(2)).await;
    h.send(&h.host, &h.command(sync(&services, Vec::new())))
        .await;
    let (reason, _) = wait_finished(&h, third).await;
    assert_eq!(reason, FinishReason::Stopped);
    let removed_ms = unix_ms();
    tokio::time::sleep(Duration::from_secs(3)).await;
    let after = started_at(&h, |e, _| e.at_ms > removed_ms);
    assert_eq!(after, None, "nothing starts once removed");

    // Assigned again, then the agent undeployed with a drain: the segment
    // stops at once rather than at its end, and the agent exits.
    h.send(&h.host, &h.command(sync(&services, vec![busy.clone()])))
        .await;
    let (again_at, again) = wait_started(&h, |e, _| e.at_ms > removed_ms).await;
    assert_eq!(again, segment_of(again_at));
    h.send(
        &h.host,
        &h.command(CommandAction::Undeploy {
            mode: UndeployMode::Drain,
        }),
    )
    .await;
    let (reason, _) = wait_finished(&h, again).await;
    assert_eq!(reason, FinishReason::Stopped);
    tokio::time::timeout(Duration::from_secs(15), agent.task)
        .await
        .expect("drained and exited")
        .unwrap()
        .expect("the agent ran");
    drop(process);

    // Every profile started was a segment of the busy service, or the
    // on-demand one: never the service with no process.
    for e in events(&h) {
        if let AgentEventKind::ProfileStarted {
            profile_id,
            frequency_hz,
            event,
            ..
        } = e.kind
        {
            if profile_id != on_demand {
                assert_eq!(profile_id, segment_of(e.at_ms));
                let rate = if e.at_ms == rerated_at {
                    FASTER_HZ
                } else {
                    RATE_HZ
                };
                assert_eq!((frequency_hz, event), (rate, EventKind::CpuClock));
            }
        }
    }

    // The whole segment [b1, b2): every window inside it, at the rate, and
    // as many samples as its CPU time × the rate.
    let second = segment_of(b1);
    let (reason, _) = wait_finished(&h, second).await;
    assert_eq!(reason, FinishReason::DurationElapsed);
    let segment = windows(&h, second, Some(&h.agent_id));
    assert!(!segment.is_empty());
    for w in &segment {
        assert!(w.window_start_ms >= b1, "{} before {b1}", w.window_start_ms);
        assert_eq!(w.frequency_hz, RATE_HZ, "the budget did not bind");
    }
    let samples: u64 = segment.iter().map(Snapshot::total_samples).sum();
    let expected = cpu_in_segment.as_secs_f64() * f64::from(RATE_HZ);
    eprintln!(
        "segment of {SEGMENT_MS} ms: {samples} samples, CPU {:?} × {RATE_HZ} Hz = {expected:.1} \
         (CPU read {late_at_b1} ms and {late_at_b2} ms after the boundaries)",
        cpu_in_segment
    );
    // What the one busy thread may have run while this test woke late.
    let late = (late_at_b1 + late_at_b2) as f64 / 1000.0 * f64::from(RATE_HZ);
    assert!(
        (samples as f64 - expected).abs() <= expected * 0.1 + 3.0 + late,
        "{samples} samples against {expected:.1}"
    );
    // Numbered from its start's milliseconds into the segment.
    let first_sequence = segment[0].sequence;
    assert_eq!(first_sequence % SEQUENCES_PER_MS, 0);
    assert!(
        first_sequence / SEQUENCES_PER_MS < 1_000,
        "{first_sequence}"
    );

    // The gaps at the two boundaries: the last window of one segment to
    // the first of the next.
    for (before, after, boundary) in [(first, second, b1), (second, third, b2)] {
        let last = windows(&h, before, Some(&h.agent_id))
            .last()
            .cloned()
            .unwrap();
        let next = windows(&h, after, Some(&h.agent_id))[0].clone();
        let gap = next.window_start_ms - last.window_end_ms;
        eprintln!(
            "boundary {boundary}: last window ends {:+} ms, next starts {:+} ms: gap {gap} ms",
            last.window_end_ms - boundary,
            next.window_start_ms - boundary
        );
        assert!(gap.abs() < 500, "gap {gap} ms");
        // Late by its session's opening, at most by the grace.
        let late = last.window_end_ms - boundary;
        let grace = odp_profiler_service::continuous::OVERDUE_GRACE.as_millis() as i64;
        assert!(late < grace + 300, "{late} ms");
    }

    // The restarted agent's part of the third segment is numbered past
    // the first agent's.
    let before_restart = windows(&h, third, Some(&h.agent_id));
    let after_restart = windows(&h, third, Some(&restarted_id));
    assert!(!before_restart.is_empty() && !after_restart.is_empty());
    assert!(after_restart[0].sequence > before_restart.last().unwrap().sequence);
    // Its two parts, before and after the new rate: numbered apart, and
    // what the change cost in sampling.
    let (slow, fast): (Vec<&Snapshot>, Vec<&Snapshot>) = after_restart
        .iter()
        .partition(|w| w.frequency_hz == RATE_HZ);
    assert!(fast.iter().all(|w| w.frequency_hz == FASTER_HZ));
    let (last_slow, first_fast) = (slow.last().unwrap(), fast[0]);
    assert!(first_fast.sequence > last_slow.sequence);
    let gap = first_fast.window_start_ms - last_slow.window_end_ms;
    eprintln!("a new rate restarted the segment's sampling after a gap of {gap} ms");
    assert!((0..2_000).contains(&gap), "gap {gap} ms");
    let (snapshots, _) = h.assert_signed();
    assert!(snapshots > 0);
}
