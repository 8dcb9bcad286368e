//! Triggers on a live agent, run in this process, through a real broker
//! (Tansu): a signed sync assigns `cpu_above 50 % for 3 s, cooldown 60 s`
//! for a service nothing runs yet; after a quiet period a CPU spike starts
//! (busy processes of the service's name), and exactly one signed
//! `trigger_fired` reports it, its period starting with the spike and the
//! event right after the period. The spike goes on: nothing more during
//! the cooldown. A trigger assigned to another host never fires here.
//!
//! Needs the `tansu` binary (`ODP_TANSU_BIN`, `PATH` or `~/.cargo/bin`) and
//! a C compiler for the busy process.

mod support;

use std::process::Command;
use std::time::{Duration, Instant};

use odp_core::command::CommandAction;
use odp_core::event::{AgentEvent, AgentEventKind};
use odp_core::service::{ServiceDefinition, SyncServices};
use odp_core::trigger::{TriggerAssignment, TriggerCondition};
use odp_core::Target;
use odp_profiler_service::triggers::JITTER_MS;
use odp_profiler_service::window::unix_ms;
use uuid::Uuid;

use support::in_process::InProcessAgent;
use support::kafka::{Broker, Harness, Seen};
use support::Killed;

const FOR_SECS: u32 = 3;

/// The `trigger_fired` events seen so far: the event's time, trigger,
/// observed value and period start.
fn firings(h: &Harness) -> Vec<(i64, Uuid, f64, i64)> {
    h.seen()
        .into_iter()
        .filter_map(|m| match m {
            Seen::Event(AgentEvent {
                at_ms,
                kind:
                    AgentEventKind::TriggerFired {
                        trigger_id,
                        observed,
                        held_since_ms,
                    },
                ..
            }) => Some((at_ms, trigger_id, observed, held_since_ms)),
            _ => None,
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cpu_spike_is_reported_once_right_after_its_period_and_not_again_in_its_cooldown() {
    let broker = Broker::start().await.expect("start the broker");
    let h = Harness::new(&broker, 2).await;
    let state = tempfile::tempdir().unwrap();
    let name = format!("tr-{}", &Uuid::new_v4().simple().to_string()[..8]);
    let spinner = support::build_burner(&name);
    let agent = InProcessAgent::start(&h, state.path(), &h.agent_id, |_| {});

    let hot = TriggerCondition::CpuAbove {
        percent: 50,
        for_secs: FOR_SECS,
    };
    let here = TriggerAssignment {
        id: Uuid::new_v4(),
        service: "spinner".into(),
        condition: hot,
        cooldown_secs: 60,
        hosts: Some(vec![h.host.clone()]),
    };
    let elsewhere = TriggerAssignment {
        id: Uuid::new_v4(),
        hosts: Some(vec!["another-host".into()]),
        ..here.clone()
    };
    let sync = SyncServices::new(vec![ServiceDefinition {
        name: "spinner".into(),
        target: Target::ProcessName(name.clone()),
    }])
    .with_triggers(vec![here.clone(), elsewhere]);
    let digest = sync.digest.clone();
    h.send(&h.host, &h.command(CommandAction::SyncServices(sync)))
        .await;
    // Taken once a heartbeat reports its digest.
    h.wait(|m| {
        matches!(m, Seen::Event(AgentEvent {
            kind: AgentEventKind::Heartbeat { services_digest: Some(d), .. }, ..
        }) if *d == digest)
    })
    .await;

    // Quiet: no process of the service, nothing fires.
    tokio::time::sleep(Duration::from_secs(4)).await;
    assert_eq!(firings(&h), []);

    // The spike: four busy processes, so that the service stays above half
    // a core on a two-core machine that other builds load (two of them
    // have shared 77 % of a core there, a second below half).
    let spun_ms = unix_ms();
    let spike: Vec<Killed> = (0..4)
        .map(|_| Killed(Command::new(&spinner).arg("120").spawn().unwrap()))
        .collect();
    let deadline = Instant::now() + Duration::from_secs(30);
    let (fired, arrived_ms) = loop {
        if let Some(&fired) = firings(&h).first() {
            break (fired, unix_ms());
        }
        assert!(Instant::now() < deadline, "no trigger fired");
        tokio::time::sleep(Duration::from_millis(10)).await;
    };
    let (at_ms, trigger_id, observed, held_since_ms) = fired;
    let held_ms = held_since_ms + i64::from(FOR_SECS) * 1000;
    eprintln!(
        "trigger fired: {observed:.1} {} held since {:+} ms from the spike; the event made \
         {} ms after the condition first held for {FOR_SECS} s, seen on the topic {} ms after it",
        hot.unit(),
        held_since_ms - spun_ms,
        at_ms - held_ms,
        arrived_ms - held_ms
    );
    assert_eq!(trigger_id, here.id);
    assert!(observed > 50.0, "{observed}");
    assert!(
        (held_since_ms - spun_ms).abs() <= 1_500,
        "held since {held_since_ms}, spike at {spun_ms}"
    );
    assert!(
        (-JITTER_MS..=1_500).contains(&(at_ms - held_ms)),
        "made {} ms after it held",
        at_ms - held_ms
    );
    assert!(arrived_ms - held_ms < 5_000, "{} ms", arrived_ms - held_ms);

    // The spike goes on, inside the cooldown: reported once.
    tokio::time::sleep(Duration::from_secs(8)).await;
    assert_eq!(firings(&h).len(), 1, "{:?}", firings(&h));
    drop(spike);
    agent.stop().await;
    let (_, events) = h.assert_signed();
    assert!(events > 0);
}
