//! Hosts whose clocks are off: one two hours behind, one a minute and a
//! half ahead, one in step, simulated beside the real api-server and
//! pipeline ([`odp_devstack::fleet::FleetSim`] stamps their heartbeats,
//! events and windows with their clocks, as their agents would).
//!
//! The api-server measures each offset from the heartbeats as they arrive
//! and reports it in the hosts API; every host stays live; its commands
//! are dated by its clock, which the simulator checks them against, so the
//! skewed hosts take their starts; the pipeline
//! moves the skewed hosts' windows by their offsets, so each profile's
//! windows sit at the time they were taken, and none is dropped: what is
//! stored is every sample the simulator sent.

use std::time::Duration;

use odp_devstack::fleet::{FleetSim, SimHost};
use reqwest::Method;
use serde_json::{json, Value};
use uuid::Uuid;

use crate::common;

const BEHIND_MS: i64 = -2 * 3_600_000;
const AHEAD_MS: i64 = 90_000;
/// How far a measured offset may be from the truth: a heartbeat's delay.
const MEASURED_WITHIN_MS: i64 = 3_000;

fn unix_ms() -> i64 {
    chrono::Utc::now().timestamp_millis()
}

fn agent<'a>(hosts: &'a Value, host: &str) -> Option<&'a Value> {
    hosts["agents"]
        .as_array()?
        .iter()
        .find(|a| a["host"] == host)
}

/// Whether `host` is listed live with an offset within
/// [`MEASURED_WITHIN_MS`] of `truth`.
fn measured(hosts: &Value, host: &str, truth: i64) -> bool {
    agent(hosts, host).is_some_and(|a| {
        a["live"] == true
            && a["clock_offset_ms"]
                .as_i64()
                .is_some_and(|o| (o - truth).abs() <= MEASURED_WITHIN_MS)
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_skewed_hosts_offset_is_reported_and_its_windows_placed_when_taken() {
    let h = common::start_without_agent("clocks").await;
    let admin = h.platform.client();
    let mut hosts = SimHost::numbered(&h.sim_prefix(), 3, &[]);
    hosts[0].clock_offset_ms = BEHIND_MS;
    hosts[1].clock_offset_ms = AHEAD_MS;
    let ids: Vec<String> = hosts.iter().map(|h| h.id.clone()).collect();
    let truths = [BEHIND_MS, AHEAD_MS, 0];
    let mut options = h.fleet_options(hosts);
    options.heartbeat_every = Duration::from_secs(1);
    options.default_window = Duration::from_secs(2);
    let sim = FleetSim::start(options).await.expect("start the simulator");

    // Every host live (the one behind too), each with its offset, and
    // only the skewed ones corrected.
    let listed = common::wait_for_body(&admin, "/api/v1/hosts", Duration::from_secs(90), |b| {
        ids.iter()
            .zip(truths)
            .all(|(id, truth)| measured(b, id, truth))
    })
    .await;
    for (id, truth) in ids.iter().zip(truths) {
        assert!(measured(&listed, id, truth), "{id}: {listed:#}");
        let corrected = agent(&listed, id).unwrap()["clock_corrected"] == true;
        assert_eq!(corrected, truth != 0, "{id}: {listed:#}");
    }

    // Recorded for the pipeline, which reads the offsets every 10 s.
    let db = h.store().await;
    let deadline = tokio::time::Instant::now() + Duration::from_secs(60);
    loop {
        let clocks = odp_store::host_clocks(&db, chrono::DateTime::UNIX_EPOCH)
            .await
            .expect("read the host clocks");
        let skewed = |id: &str| {
            clocks
                .iter()
                .any(|c| c.host == id && c.correction_ms() != 0)
        };
        if skewed(&ids[0]) && skewed(&ids[1]) {
            break;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "offsets not recorded: {clocks:?}\n{}",
            h.platform.logs()
        );
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    tokio::time::sleep(Duration::from_secs(11)).await;

    let requested_ms = unix_ms();
    let mut profiles = Vec::new();
    for id in &ids {
        let answer = admin
            .call(
                Method::POST,
                "/api/v1/profiles",
                Some(&json!({
                    "host": id, "pid": 4242,
                    "duration_secs": 6, "frequency_hz": 99, "window_secs": 2,
                })),
                202,
            )
            .await
            .unwrap_or_else(|e| panic!("start on {id}: {e}"));
        profiles.push(Uuid::parse_str(answer["id"].as_str().unwrap()).unwrap());
    }
    for (id, profile) in ids.iter().zip(&profiles) {
        let path = format!("/api/v1/profiles/{profile}");
        let body = common::wait_for_body(&admin, &path, Duration::from_secs(60), |b| {
            b["status"] == "finished"
        })
        .await;
        assert_eq!(
            body["status"],
            "finished",
            "{id}: {body:#}\n{}",
            h.platform.logs()
        );
    }
    let finished_ms = unix_ms();

    for (id, profile) in ids.iter().zip(&profiles) {
        let sent = sim.profile(*profile).expect("the simulator ran it");
        assert!(sent.snapshots >= 3, "{id}: {sent:?}");
        let path = format!("/api/v1/profiles/{profile}/timeline");
        let timeline = common::wait_for_body(&admin, &path, Duration::from_secs(30), |t| {
            t["windows"].as_array().map(Vec::len) == Some(sent.snapshots as usize)
        })
        .await;
        let windows = timeline["windows"].as_array().expect("windows");
        assert_eq!(windows.len() as u64, sent.snapshots, "{id}: {timeline:#}");
        let mut stored_samples = 0;
        for window in windows {
            let at = |key: &str| {
                chrono::DateTime::parse_from_rfc3339(window[key].as_str().unwrap())
                    .unwrap()
                    .timestamp_millis()
            };
            // When it was taken by true time, whatever the host's clock.
            assert!(
                at("window_start") >= requested_ms - 2_000
                    && at("window_end") <= finished_ms + 2_000,
                "{id}: window {window} outside {requested_ms}..{finished_ms}"
            );
            stored_samples += window["samples"].as_u64().unwrap();
        }
        assert_eq!(
            stored_samples, sent.samples,
            "{id}: every sample sent is stored"
        );

        // A read of those true seconds finds them all: a profile of a
        // pid without a service is of its host's name.
        let rfc = |ms: i64| {
            chrono::DateTime::from_timestamp_millis(ms)
                .unwrap()
                .to_rfc3339_opts(chrono::SecondsFormat::Millis, true)
        };
        let path = format!(
            "/api/v1/aggregate?service={id}&since={}&until={}",
            rfc(requested_ms - 2_000),
            rfc(finished_ms + 2_000)
        );
        let aggregate = admin
            .call(Method::GET, &path, None, 200)
            .await
            .unwrap_or_else(|e| panic!("{path}: {e}"));
        assert_eq!(
            aggregate["samples"].as_u64(),
            Some(sent.samples),
            "{id}: {aggregate:#}"
        );
    }
    sim.stop();
}
