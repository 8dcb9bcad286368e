//! A run's lifecycle through the real stack, agent and demo (issue 26): a
//! chosen host whose target already has a live profile is recorded as not
//! started, with that profile named, and the run ends `partial`; the
//! per-user host limit refuses a run before anything is created; and a
//! schedule with a run spec starts runs, skipping an occurrence while its
//! previous run still runs.

use std::time::Duration;

use chrono::{DurationRound as _, Utc};
use odp_devstack::ApiClient;
use reqwest::Method;
use serde_json::{json, Value};

use crate::common;
use crate::db::{execute, Param};

async fn status(
    client: &ApiClient,
    method: Method,
    path: &str,
    body: Option<Value>,
) -> (u16, Value) {
    let answer = client
        .request(method.clone(), path, body.as_ref())
        .await
        .unwrap_or_else(|e| panic!("{method} {path}: {e}"));
    (answer.status, answer.body)
}

/// Waits until the profile `id` has ended.
async fn ended_profile(client: &ApiClient, id: &str) -> Value {
    common::wait_for_body(
        client,
        &format!("/api/v1/profiles/{id}"),
        Duration::from_secs(40),
        |p| {
            matches!(
                p["status"].as_str(),
                Some("stopped" | "finished" | "failed" | "expired")
            )
        },
    )
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn members_say_why_they_did_not_start_the_host_limit_refuses_and_schedules_start_runs() {
    let h = common::start_configured("run-life", |o| {
        o.api_env
            .push(("ODP_MAX_RUN_HOSTS_PER_USER".into(), "1".into()));
        o.api_env
            .push(("ODP_SCHEDULER_TICK_SECS".into(), "1".into()));
        // An occurrence forced due below still fires minutes later.
        o.api_env
            .push(("ODP_SCHEDULER_GRACE_SECS".into(), "600".into()));
    })
    .await;
    let admin = h.platform.client();
    let host = h.platform.host_id.clone();
    let _demo = h.spawn_demo_for(400);
    common::define_demo_service(&h).await;
    let runs = "/api/v1/runs";

    // 1. The host's target already has a live profile: the run's member
    // is not started, says which profile, and the run ends partial.
    let (code, single) = status(
        &admin,
        Method::POST,
        "/api/v1/profiles",
        Some(
            json!({"host": host, "service": "demo", "process_name": "cpu-split",
                    "duration_secs": 60}),
        ),
    )
    .await;
    assert!((200..300).contains(&code), "{single}");
    let blocker = single["id"].as_str().unwrap().to_owned();
    let busy = admin
        .call(
            Method::POST,
            runs,
            Some(&json!({"service": "demo", "duration_secs": 30})),
            202,
        )
        .await
        .unwrap();
    let member = &busy["members"][0];
    assert_eq!(member["host"], json!(host), "{busy}");
    assert_eq!(member["profile_id"], Value::Null, "{busy}");
    assert_eq!(member["status"], "failed", "{busy}");
    let reason = member["reason"].as_str().unwrap();
    assert!(
        reason.starts_with("not started: the target already has a live profile")
            && reason.contains(&blocker),
        "{busy}"
    );
    let busy_path = format!("{runs}/{}", busy["id"].as_str().unwrap());
    let partial = common::wait_for_body(&admin, &busy_path, Duration::from_secs(20), |b| {
        b["status"] == "partial" && b["ended_at"].is_string()
    })
    .await;
    assert_eq!(
        partial["status"],
        "partial",
        "{partial}\n{}",
        h.platform.logs()
    );
    let why = partial["status_reason"].as_str().unwrap();
    assert!(why.contains(&host) && why.contains(&blocker), "{partial}");
    let (code, _) = status(
        &admin,
        Method::POST,
        &format!("/api/v1/profiles/{blocker}/stop"),
        None,
    )
    .await;
    assert!((200..300).contains(&code));
    let stopped = ended_profile(&admin, &blocker).await;
    assert_eq!(stopped["status"], "stopped", "{stopped}");

    // 2. With a limit of 1 host per user, a run while another profiles
    // the one host is refused, naming the limit and the count, and
    // nothing of it is created.
    let first = admin
        .call(
            Method::POST,
            runs,
            Some(&json!({"service": "demo", "duration_secs": 60, "window_secs": 2})),
            202,
        )
        .await
        .unwrap();
    let first_member = first["members"][0]["profile_id"]
        .as_str()
        .unwrap_or_else(|| panic!("the member starts: {first}"))
        .to_owned();
    let (code, refused) = status(
        &admin,
        Method::POST,
        runs,
        Some(json!({"service": "demo", "duration_secs": 60})),
    )
    .await;
    assert_eq!(code, 422, "{refused}");
    let message = refused["error"]["message"].as_str().unwrap();
    assert!(
        message.contains("limit of 1")
            && message.contains("profile 1")
            && message.contains("ODP_MAX_RUN_HOSTS_PER_USER"),
        "{message}"
    );
    let listed = admin.call(Method::GET, runs, None, 200).await.unwrap();
    assert_eq!(
        listed["runs"].as_array().unwrap().len(),
        2,
        "nothing half-created: {listed}"
    );
    admin
        .call(
            Method::POST,
            &format!("{runs}/{}/stop", first["id"].as_str().unwrap()),
            None,
            202,
        )
        .await
        .unwrap();
    ended_profile(&admin, &first_member).await;

    // 3. A schedule with a run spec: validated like the rest, and when it
    // fires it starts a run as `schedule:<id>`.
    let schedules = "/api/v1/schedules";
    let spec = json!({
        "name": "demo-run", "service": "demo", "duration_secs": 90,
        "cron": "* * * * *", "enabled": false,
        "run": {"hosts": "all", "stop_when": {"top": 3, "max_stderr": 0.001}}
    });
    for (field, value, why) in [
        ("service", json!("nope"), "an undefined service"),
        ("run", json!({"hosts": {"count": 0}}), "no host"),
        ("run", json!({"hosts": {"percent": 101}}), "101 percent"),
        (
            "run",
            json!({"stop_when": {"top": 0, "max_stderr": 0.01}}),
            "top 0",
        ),
        ("host", json!(host), "a host besides the run"),
        ("duration_secs", json!(0), "no duration"),
    ] {
        let mut body = spec.clone();
        body[field] = value;
        let (code, answer) = status(&admin, Method::POST, schedules, Some(body)).await;
        assert_eq!(code, 422, "{why}: {answer}");
    }
    let created = admin
        .call(Method::POST, schedules, Some(&spec), 201)
        .await
        .unwrap();
    assert_eq!(created["host"], "*", "{created}");
    assert_eq!(created["run"]["hosts"], "all", "{created}");
    let id = created["id"].as_str().unwrap().to_owned();
    let schedule: uuid::Uuid = id.parse().unwrap();
    let db = h.store().await;
    let minute = Utc::now()
        .duration_trunc(chrono::Duration::minutes(1))
        .unwrap();
    // Due since before now: the scheduler fires the latest occurrence.
    execute(
        &db,
        "update schedules set enabled = true, next_run_at = ? where id = ?",
        &[
            Param::Time(minute - chrono::Duration::minutes(2)),
            Param::Uuid(schedule),
        ],
    )
    .await;
    let one = format!("{schedules}/{id}");
    let fired = common::wait_for_body(&admin, &one, Duration::from_secs(30), |s| {
        s["runs"]
            .as_array()
            .is_some_and(|runs| runs.iter().any(|r| r["outcome"] != "missed"))
    })
    .await;
    let started = fired["runs"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["outcome"] == "started")
        .unwrap_or_else(|| panic!("{fired}\n{}", h.platform.logs()))
        .clone();
    let run_id = started["run_id"].as_str().unwrap().to_owned();
    assert_eq!(started["profile_id"], Value::Null, "{started}");
    let run = admin
        .call(Method::GET, &format!("{runs}/{run_id}"), None, 200)
        .await
        .unwrap();
    assert_eq!(run["requested_by"], format!("schedule:{id}"), "{run}");
    assert_eq!(run["service"], "demo");
    assert_eq!(run["duration_secs"], 90);
    assert!(run["members"][0]["profile_id"].is_string(), "{run}");

    // Fired again while that run still runs: skipped as busy. (The
    // occurrence's record is removed so that it fires again at once.)
    execute(
        &db,
        "delete from schedule_runs where schedule_id = ? and outcome = 'started'",
        &[Param::Uuid(schedule)],
    )
    .await;
    let scheduled_for: chrono::DateTime<Utc> =
        serde_json::from_value(started["scheduled_for"].clone()).unwrap();
    execute(
        &db,
        "update schedules set next_run_at = ? where id = ?",
        &[Param::Time(scheduled_for), Param::Uuid(schedule)],
    )
    .await;
    let skipped = common::wait_for_body(&admin, &one, Duration::from_secs(30), |s| {
        s["runs"]
            .as_array()
            .is_some_and(|runs| runs.iter().any(|r| r["outcome"] == "skipped_busy"))
    })
    .await;
    let busy_run = skipped["runs"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["outcome"] == "skipped_busy")
        .unwrap_or_else(|| panic!("{skipped}\n{}", h.platform.logs()))
        .clone();
    let detail = busy_run["detail"].as_str().unwrap();
    assert!(
        detail.contains("still running") && detail.contains(&run_id),
        "{busy_run}"
    );
    let still = admin
        .call(Method::GET, &format!("{runs}/{run_id}"), None, 200)
        .await
        .unwrap();
    assert!(
        matches!(still["status"].as_str(), Some("running" | "dispatching")),
        "{still}"
    );
    admin.call(Method::DELETE, &one, None, 204).await.unwrap();
    admin
        .call(Method::POST, &format!("{runs}/{run_id}/stop"), None, 202)
        .await
        .unwrap();
}
