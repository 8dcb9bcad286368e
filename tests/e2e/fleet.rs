//! A run over a fleet: one real agent profiling the demo beside 60
//! simulated hosts ([`odp_devstack::fleet::FleetSim`]) that speak the real
//! contracts (heartbeats with labels and services, signed commands
//! verified per host, real captured windows). The run's stratified, seeded
//! choice is reproducible and covers every zone, every member finishes,
//! and the run's samples are exactly its members'.
//!
//! `fleet_fixtures_record` records the simulator's windows again from the
//! real agent when `ODP_REGENERATE_FIXTURES=1`
//! (devstack/fixtures/fleet/README.md).

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use odp_core::run::{select_hosts, Host, HostSelection, SelectionRequest};
use odp_devstack::fleet::{fixture_dir, record_fixtures, FleetSim, SimHost};
use reqwest::Method;
use serde_json::{json, Value};
use uuid::Uuid;

use crate::{channels, common};

const SIMULATED: usize = 60;

/// Ended, and recorded so by the api-server's run watcher (which sets its
/// samples): a run whose members all ended shows `finished` before that.
fn is_ended(run: &Value) -> bool {
    ["finished", "partial", "stopped", "precise"].contains(&run["status"].as_str().unwrap_or(""))
        && !run["ended_at"].is_null()
}

/// The samples `GET /api/v1/profiles/{id}/top` reports.
async fn profile_samples(client: &odp_devstack::ApiClient, id: &str) -> u64 {
    let top = client
        .call(
            Method::GET,
            &format!("/api/v1/profiles/{id}/top"),
            None,
            200,
        )
        .await
        .unwrap_or_else(|e| panic!("top of {id}: {e}"));
    top["samples"].as_u64().unwrap_or(0)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stratified_run_over_a_simulated_fleet_and_a_real_agent() {
    let h = common::start_configured("fleet", |o| {
        o.window_secs = 2;
        o.agent_env
            .push(("ODP_LABELS".into(), "zone=z1,version=v1".into()));
        let with_agent = o.with_agent;
        channels::loopback_allowed(o);
        o.with_agent = with_agent;
    })
    .await;
    let admin = h.platform.client();
    let _demo = h.spawn_demo_for(240);
    let mut options = h.fleet_options(SimHost::numbered(&h.sim_prefix(), SIMULATED, &["demo"]));
    options.heartbeat_every = Duration::from_secs(2);
    options.default_window = Duration::from_secs(2);
    let sim = FleetSim::start(options).await.expect("start the simulator");

    admin
        .call(
            Method::POST,
            "/api/v1/services",
            Some(&json!({"name": "demo", "process_name": "cpu-split"})),
            201,
        )
        .await
        .expect("define the service");
    let found = common::wait_for_body(
        &admin,
        "/api/v1/services/demo/hosts",
        Duration::from_secs(90),
        |b| b["hosts"].as_array().is_some_and(|h| h.len() > SIMULATED),
    )
    .await;
    let live = found["hosts"].as_array().unwrap();
    assert_eq!(
        live.len(),
        SIMULATED + 1,
        "{found}\n{:?}\n{}",
        sim.stats(),
        h.platform.logs()
    );
    let stats = sim.stats();
    assert_eq!(
        stats.syncs as usize, SIMULATED,
        "one sync per host: {stats:?}"
    );
    assert_eq!(stats.commands_rejected, 0, "{stats:?}");

    // The same seed over the same live hosts: the API's choice is core's.
    let hosts: Vec<Host> = live
        .iter()
        .map(|h| Host {
            id: h["host"].as_str().unwrap().to_owned(),
            labels: serde_json::from_value(h["labels"].clone()).unwrap(),
        })
        .collect();
    let asked = SelectionRequest {
        selection: HostSelection::Count(10),
        stratify_by: vec!["zone".into()],
        seed: 7,
        strict: false,
    };
    let expected = select_hosts(&hosts, &asked).expect("a selection");
    let zones: BTreeMap<String, String> = hosts
        .iter()
        .map(|h| (h.id.clone(), h.labels["zone"].clone()))
        .collect();

    // Every host spends about 60% in demo_hot: a rule at 40% flags each
    // member, and the run alerts once for all of them.
    admin
        .call(Method::POST, "/api/v1/rules", Some(&demo_hot_rule()), 201)
        .await
        .expect("create the rule");
    let (url, mut calls) = channels::receiver().await;
    let channel = json!({"kind": "webhook", "name": "fleet", "url": url,
                         "secret": channels::SECRET, "service_pattern": "demo"});
    admin
        .call(Method::POST, "/api/v1/channels", Some(&channel), 201)
        .await
        .expect("create the channel");

    let request = json!({
        "service": "demo", "hosts": {"count": 10}, "stratify_by": ["zone"], "seed": 7,
        "duration_secs": 8, "window_secs": 2,
    });
    let started = admin
        .call(Method::POST, "/api/v1/runs", Some(&request), 202)
        .await
        .expect("start the run");
    let chosen: Vec<String> =
        serde_json::from_value(started["selection"]["hosts"].clone()).unwrap();
    assert_eq!(chosen, expected.hosts, "{started}");
    assert_eq!(chosen.len(), 10);
    let covered: BTreeSet<&str> = chosen.iter().map(|h| zones[h].as_str()).collect();
    assert_eq!(covered, BTreeSet::from(["z0", "z1", "z2"]), "{started}");
    for stratum in started["selection"]["strata"].as_array().unwrap() {
        assert!(stratum["chosen"].as_u64().unwrap() >= 1, "{started}");
    }

    let id = started["id"].as_str().unwrap().to_owned();
    let path = format!("/api/v1/runs/{id}");
    let ended = common::wait_for_body(&admin, &path, Duration::from_secs(90), is_ended).await;
    assert_eq!(
        ended["status"],
        "finished",
        "{ended}\n{:?}\n{}",
        sim.stats(),
        h.platform.logs()
    );
    let members = ended["members"].as_array().unwrap();
    assert_eq!(members.len(), 10);
    let mut member_samples = 0u64;
    for member in members {
        assert_eq!(member["status"], "finished", "{ended}");
        let profile = member["profile_id"].as_str().unwrap();
        let samples = profile_samples(&admin, profile).await;
        assert!(samples > 0, "member {member} stored no sample");
        if let Some(sent) = sim.profile(Uuid::parse_str(profile).unwrap()) {
            // What the simulated host said it sent, and the broker took.
            assert!(sent.finished.is_some(), "{sent:?}");
            assert_eq!(samples, sent.samples, "member {member}: {sent:?}");
        }
        member_samples += samples;
    }
    let recorded = ended["samples_used"]
        .as_u64()
        .unwrap_or_else(|| panic!("the run's samples: {ended}"));
    assert_eq!(recorded, member_samples, "{ended}");
    let precision = admin
        .call(Method::GET, &format!("{path}/precision"), None, 200)
        .await
        .unwrap();
    assert_eq!(
        precision["decision"]["samples_used"].as_u64(),
        Some(member_samples),
        "{precision}"
    );
    assert_eq!(
        precision["decision"]["hosts"].as_u64(),
        Some(10),
        "{precision}"
    );

    let hosts_named = the_run_alerts_once(&admin, &id, &chosen, &mut calls).await;
    assert!(hosts_named >= 5, "every member ran demo_hot");

    // The same seed again, once the first has ended: the same hosts.
    let again = admin
        .call(Method::POST, "/api/v1/runs", Some(&request), 202)
        .await
        .expect("start the second run");
    assert_eq!(again["selection"]["hosts"], started["selection"]["hosts"]);
    let second = format!("/api/v1/runs/{}", again["id"].as_str().unwrap());
    let _ = admin
        .call(Method::POST, &format!("{second}/stop"), None, 202)
        .await;
    let stats = sim.stats();
    assert_eq!(stats.commands_rejected, 0, "{stats:?}");
    assert_eq!(stats.send_failures, 0, "{stats:?}");
    sim.stop();
}

fn demo_hot_rule() -> Value {
    json!({
        "id": "fleet-demo-hot",
        "title": "demo_hot on the hot path",
        "explanation": "demo_hot takes most of the CPU",
        "fix": "cool demo_hot down",
        "link": "https://example.com/demo-hot",
        "kind": "stack_share",
        "spec": {"function": "^demo_hot$"},
        "threshold_pct": 40.0,
    })
}

/// The run's finding on its merged samples, with the hosts where it is
/// highest, and its one alert: one webhook call for the run (none per
/// member). Returns how many hosts the finding names.
async fn the_run_alerts_once(
    admin: &odp_devstack::ApiClient,
    run: &str,
    chosen: &[String],
    calls: &mut tokio::sync::mpsc::UnboundedReceiver<(String, Vec<u8>)>,
) -> usize {
    let found = common::wait_for_body(
        admin,
        &format!("/api/v1/runs/{run}/issues"),
        Duration::from_secs(60),
        |b| !b["evaluated_at"].is_null(),
    )
    .await;
    let issues = found["issues"].as_array().unwrap();
    let issue = issues
        .iter()
        .find(|i| i["rule_id"] == "fleet-demo-hot")
        .unwrap_or_else(|| panic!("the run's demo_hot finding: {found}"));
    let share = issue["share"].as_f64().unwrap();
    assert!((40.0..90.0).contains(&share), "{issue}");
    let hosts = issue["hosts"].as_array().unwrap();
    assert!(!hosts.is_empty() && hosts.len() <= 5, "{issue}");
    let shares: Vec<f64> = hosts.iter().map(|h| h["share"].as_f64().unwrap()).collect();
    assert!(
        shares.windows(2).all(|w| w[0] >= w[1]),
        "highest first: {issue}"
    );
    for host in hosts {
        let name = host["host"].as_str().unwrap();
        assert!(
            chosen.iter().any(|c| c == name),
            "{name} is not a member: {issue}"
        );
    }

    let alert = channels::next_call(calls, channels::SECRET).await;
    assert_eq!(alert["run_id"], run, "{alert}");
    assert_eq!(alert["rule"]["id"], "fleet-demo-hot", "{alert}");
    assert_eq!(alert["host"], hosts[0]["host"], "{alert}");
    assert_eq!(alert["profile_id"], hosts[0]["profile_id"], "{alert}");
    assert_eq!(
        alert["hosts"].as_array().unwrap().len(),
        hosts.len(),
        "{alert}"
    );
    // The members were judged too (each flags the rule), but alert no more.
    tokio::time::sleep(Duration::from_secs(5)).await;
    while let Ok((_, body)) = calls.try_recv() {
        let extra: Value = serde_json::from_slice(&body).unwrap();
        assert_ne!(extra["run_id"], run, "a second alert for the run: {extra}");
        assert!(
            !extra["run_id"].is_null(),
            "a member alerted on its own: {extra}"
        );
    }
    let member = hosts[0]["profile_id"].as_str().unwrap();
    let own = admin
        .call(
            Method::GET,
            &format!("/api/v1/profiles/{member}/issues"),
            None,
            200,
        )
        .await
        .unwrap();
    assert!(
        own["issues"]
            .as_array()
            .unwrap()
            .iter()
            .any(|i| i["rule_id"] == "fleet-demo-hot"),
        "the member's own detection is kept: {own}"
    );
    hosts.len()
}

/// Records the simulator's windows from the real agent profiling the demo
/// (2 s windows at 99 Hz); a no-op unless `ODP_REGENERATE_FIXTURES=1`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fleet_fixtures_record() {
    if std::env::var("ODP_REGENERATE_FIXTURES").as_deref() != Ok("1") {
        return;
    }
    let h = common::start("fleetrec", 2).await;
    let _demo = h.spawn_demo_for(60);
    tokio::time::sleep(Duration::from_secs(1)).await;
    let admin = h.platform.client();
    let answer = admin
        .request(
            Method::POST,
            "/api/v1/profiles",
            Some(&json!({
                "host": h.platform.host_id, "process_name": "cpu-split",
                "duration_secs": 8, "frequency_hz": 99, "window_secs": 2,
            })),
        )
        .await
        .expect("start a profile");
    assert!(answer.status / 100 == 2, "{:?}", answer.body);
    let id = Uuid::parse_str(answer.body["id"].as_str().unwrap()).unwrap();
    let dir = fixture_dir();
    for old in std::fs::read_dir(&dir).into_iter().flatten().flatten() {
        if old.path().extension().is_some_and(|e| e == "odps") {
            std::fs::remove_file(old.path()).unwrap();
        }
    }
    let written = record_fixtures(
        h.stack.kafka_bootstrap(),
        &h.stack.topics().stacks,
        id,
        3,
        &dir,
        Duration::from_secs(60),
    )
    .await
    .unwrap_or_else(|e| panic!("{e}\n{}", h.platform.logs()));
    println!("recorded {written:?}");
}
