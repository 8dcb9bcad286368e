//! Profiling schedules: the CRUD API with its access rules and validation,
//! the api-server's own scheduler after a simulated downtime, and two
//! schedulers racing over one database.

use chrono::{DateTime, DurationRound as _, Utc};
use clap::Parser as _;
use odp_api_server::scheduler::{tick, SchedulerOptions};
use odp_client::types::ProfileStatus;
use odp_devstack::{mint_scoped_token, ApiClient, DatabaseKind};
use reqwest::Method;
use serde_json::{json, Value};

use crate::common::{self, Harness};
use crate::db::{count, execute, schedule_runs, Param};

fn schedule_body(name: &str, host: &str, process: &str, cron: &str) -> Value {
    json!({
        "name": name, "host": host, "process_name": process,
        "duration_secs": 5, "cron": cron,
    })
}

async fn status(client: &ApiClient, method: Method, path: &str, body: Option<Value>) -> u16 {
    client
        .request(method.clone(), path, body.as_ref())
        .await
        .unwrap_or_else(|e| panic!("{method} {path}: {e}"))
        .status
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn schedules_crud_with_roles_and_validation() {
    let h = common::start_configured("sched-crud", |o| {
        o.with_agent = false;
        o.api_env.push(("ODP_SCHEDULER".into(), "false".into()));
    })
    .await;
    let admin = h.platform.client();
    let anonymous = h.platform.client_for("");
    let secret = &h.platform.jwt_secret;
    let viewer = h
        .platform
        .client_for(&mint_scoped_token(secret, "v", "viewer", &[]).unwrap());
    let profiler = h
        .platform
        .client_for(&mint_scoped_token(secret, "p", "profiler", &["*"]).unwrap());
    let host = h.platform.host_id.clone();
    let yearly = schedule_body("yearly-demo", &host, "demo", "0 4 1 JAN *");
    let list = "/api/v1/schedules";

    assert_eq!(
        status(&anonymous, Method::POST, list, Some(yearly.clone())).await,
        401
    );
    assert_eq!(
        status(&viewer, Method::POST, list, Some(yearly.clone())).await,
        403
    );
    assert_eq!(
        status(&profiler, Method::POST, list, Some(yearly.clone())).await,
        403
    );
    let created = admin
        .call(Method::POST, list, Some(&yearly), 201)
        .await
        .expect("admin creates a schedule");
    let id = created["id"].as_str().expect("id").to_owned();
    assert_eq!(created["timezone"], "UTC");
    assert_eq!(created["enabled"], true);
    assert_eq!(created["created_by"], "odp-dev");
    let next: DateTime<Utc> = serde_json::from_value(created["next_run_at"].clone()).unwrap();
    assert_eq!(next.format("%m-%d %H:%M:%S").to_string(), "01-01 04:00:00");
    assert_eq!(
        status(&admin, Method::POST, list, Some(yearly.clone())).await,
        409
    );

    let with = |field: &str, value: Value| {
        let mut body = schedule_body("other", &host, "demo", "0 4 * * *");
        body[field] = value;
        Some(body)
    };
    for (body, why) in [
        (with("cron", json!("* * *")), "too few fields"),
        (with("cron", json!("*/10 * * * * *")), "sub-minute"),
        (with("cron", json!("0 9 * * 1-5")), "numeric weekdays"),
        (with("timezone", json!("Mars/Olympus")), "unknown zone"),
        (with("name", json!("two words")), "bad name"),
        (with("duration_secs", json!(0)), "zero duration"),
        (with("frequency_hz", json!(0)), "zero frequency"),
        (with("surprise", json!(1)), "unknown field"),
        (
            Some(json!({"name": "x", "host": host, "duration_secs": 5, "cron": "0 4 * * *"})),
            "no target",
        ),
    ] {
        assert_eq!(status(&admin, Method::POST, list, body).await, 422, "{why}");
    }

    assert_eq!(status(&anonymous, Method::GET, list, None).await, 401);
    let page = viewer.call(Method::GET, list, None, 200).await.unwrap();
    let names: Vec<&str> = page["schedules"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|s| s["name"].as_str())
        .collect();
    assert_eq!(names, ["yearly-demo"]);

    let one = format!("{list}/{id}");
    let unknown = format!("{list}/{}", uuid::Uuid::new_v4());
    assert_eq!(status(&anonymous, Method::GET, &one, None).await, 401);
    let detail = viewer.call(Method::GET, &one, None, 200).await.unwrap();
    assert_eq!(detail["name"], "yearly-demo");
    assert_eq!(detail["runs"], json!([]));
    assert_eq!(status(&viewer, Method::GET, &unknown, None).await, 404);
    assert_eq!(
        status(&viewer, Method::GET, &format!("{list}/nope"), None).await,
        400
    );

    let disable = Some(json!({"enabled": false}));
    assert_eq!(
        status(&anonymous, Method::PATCH, &one, disable.clone()).await,
        401
    );
    assert_eq!(
        status(&viewer, Method::PATCH, &one, disable.clone()).await,
        403
    );
    assert_eq!(
        status(&admin, Method::PATCH, &unknown, disable.clone()).await,
        404
    );
    let disabled = admin
        .call(Method::PATCH, &one, disable.as_ref(), 200)
        .await
        .unwrap();
    assert_eq!(disabled["enabled"], false);
    assert_eq!(disabled["next_run_at"], Value::Null);
    let weekdays = json!({"enabled": true, "cron": "30 9 * * MON-FRI", "timezone": "Europe/Paris", "duration_secs": 20});
    let changed = admin
        .call(Method::PATCH, &one, Some(&weekdays), 200)
        .await
        .unwrap();
    assert_eq!(changed["cron"], "30 9 * * MON-FRI");
    assert_eq!(changed["duration_secs"], 20);
    assert!(changed["next_run_at"].is_string(), "{changed}");
    for bad in [
        json!({"timezone": "Nowhere"}),
        json!({"cron": "* * * * * *"}),
        json!({"duration_secs": 4000}),
        json!({"frequency_hz": 0}),
        json!({"name": "renamed"}),
    ] {
        assert_eq!(
            status(&admin, Method::PATCH, &one, Some(bad.clone())).await,
            422,
            "{bad}"
        );
    }

    assert_eq!(status(&anonymous, Method::DELETE, &one, None).await, 401);
    assert_eq!(status(&viewer, Method::DELETE, &one, None).await, 403);
    assert_eq!(status(&admin, Method::DELETE, &one, None).await, 204);
    assert_eq!(status(&admin, Method::DELETE, &one, None).await, 404);
    assert_eq!(status(&viewer, Method::GET, &one, None).await, 404);
}

/// Runs of a schedule as (scheduled_for, outcome, profile_id), oldest first.
async fn runs(pool: &sqlx::PgPool, id: &str) -> Vec<(DateTime<Utc>, String, Option<uuid::Uuid>)> {
    sqlx::query_as(
        "select scheduled_for, outcome, profile_id from schedule_runs
         where schedule_id = $1::uuid order by scheduled_for",
    )
    .bind(id)
    .fetch_all(pool)
    .await
    .expect("read runs")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn after_downtime_the_server_reports_missed_runs_and_fires_only_the_latest() {
    missed_runs_after_downtime_on(DatabaseKind::Postgres).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn after_downtime_on_mysql_the_server_reports_missed_runs_and_fires_only_the_latest() {
    missed_runs_after_downtime_on(DatabaseKind::Mysql).await;
}

async fn missed_runs_after_downtime_on(database: DatabaseKind) {
    let h = common::start_configured_on(database, "sched-down", |o| {
        o.with_agent = false;
        o.api_env
            .push(("ODP_SCHEDULER_TICK_SECS".into(), "1".into()));
    })
    .await;
    let admin = h.platform.client();
    let mut body = schedule_body(
        "every-minute",
        &h.platform.host_id,
        "sched-demo",
        "* * * * *",
    );
    body["enabled"] = json!(false);
    let created = admin
        .call(Method::POST, "/api/v1/schedules", Some(&body), 201)
        .await
        .unwrap();
    let id = created["id"].as_str().unwrap().to_owned();
    let schedule: uuid::Uuid = id.parse().unwrap();
    // Ten minutes of downtime: the schedule was due long before now.
    let db = h.store().await;
    let minute = Utc::now()
        .duration_trunc(chrono::Duration::minutes(1))
        .unwrap();
    execute(
        &db,
        "update schedules set enabled = true, next_run_at = ? where id = ?",
        &[
            Param::Time(minute - chrono::Duration::minutes(10)),
            Param::Uuid(schedule),
        ],
    )
    .await;
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    while count(
        &db,
        "select count(*) from schedule_runs where schedule_id = ? and outcome = 'started'",
        &[Param::Uuid(schedule)],
    )
    .await
        < 1
    {
        assert!(
            std::time::Instant::now() < deadline,
            "no run started\n{}",
            h.platform.logs()
        );
        tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    }

    let runs = schedule_runs(&db, schedule).await;
    let started: Vec<_> = runs.iter().filter(|r| r.1 == "started").collect();
    assert_eq!(started.len(), 1, "{runs:?}");
    let (fired_for, _, profile_id) = started[0];
    let missed: Vec<_> = runs.iter().filter(|r| r.1 == "missed").collect();
    assert!(missed.len() >= 10, "{runs:?}");
    assert!(missed.iter().all(|m| m.0 < *fired_for), "{runs:?}");
    // Later occurrences find the target busy with the fired profile.
    assert!(
        runs.iter()
            .all(|r| matches!(r.1.as_str(), "missed" | "started" | "skipped_busy")),
        "{runs:?}"
    );

    let profile_id = profile_id.expect("the started run links its profile");
    let profile = admin.profile(profile_id).await.unwrap();
    assert_eq!(profile.requested_by, format!("schedule:{id}"));
    assert_eq!(profile.service, "sched-demo");
    let detail = admin
        .call(Method::GET, &format!("/api/v1/schedules/{id}"), None, 200)
        .await
        .unwrap();
    let shown = detail["runs"].as_array().unwrap();
    assert!(shown
        .iter()
        .any(|r| r["outcome"] == "started" && r["profile_id"] == json!(profile_id.to_string())));
    let next: DateTime<Utc> = serde_json::from_value(detail["next_run_at"].clone()).unwrap();
    assert!(next > *fired_for);
    assert!(detail["last_run_at"].is_string(), "{detail}");
}

/// The api-server's state, as a second replica would build it.
async fn replica_state(h: &Harness) -> odp_api_server::AppState {
    let args = [
        "odp-api-server".to_owned(),
        "serve".into(),
        "--insecure-http".into(),
        format!("--database-url={}", h.stack.database_url()),
        format!("--kafka-bootstrap={}", h.stack.kafka_bootstrap()),
        format!("--topic-commands={}", h.stack.topics().commands),
        format!("--command-signing-key={}", h.platform.signing_key.display()),
        format!("--jwt-secret={}", h.platform.jwt_secret),
    ];
    let odp_api_server::CliCommand::Serve(config) = odp_api_server::Cli::parse_from(args).command
    else {
        unreachable!("parsed `serve`")
    };
    odp_api_server::build_state(&config)
        .await
        .expect("build a replica's state")
}

fn at(s: &str) -> DateTime<Utc> {
    DateTime::parse_from_rfc3339(s).unwrap().with_timezone(&Utc)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_schedulers_fire_each_due_run_exactly_once() {
    let h = common::start_configured("sched-race", |o| {
        o.with_agent = false;
        o.api_env.push(("ODP_SCHEDULER".into(), "false".into()));
    })
    .await;
    let admin = h.platform.client();
    let body = schedule_body("hourly", &h.platform.host_id, "race-demo", "0 * * * *");
    let created = admin
        .call(Method::POST, "/api/v1/schedules", Some(&body), 201)
        .await
        .unwrap();
    let id = created["id"].as_str().unwrap().to_owned();
    let pool = h.pool().await;
    sqlx::query("update schedules set next_run_at = '2030-01-01T07:00:00Z' where id = $1::uuid")
        .bind(&id)
        .execute(&pool)
        .await
        .unwrap();
    let (first, second) = (replica_state(&h).await, replica_state(&h).await);
    let options = SchedulerOptions {
        tick: std::time::Duration::from_secs(1),
        grace: chrono::Duration::seconds(60),
    };

    // While another transaction holds the scheduler lock, a tick does nothing.
    let mut holder = pool.begin().await.unwrap();
    sqlx::query("select pg_advisory_xact_lock($1)")
        .bind(odp_store::SCHEDULER_LOCK_KEY)
        .execute(&mut *holder)
        .await
        .unwrap();
    let blocked = tick(&first, &options, at("2030-01-01T10:00:20Z"))
        .await
        .unwrap();
    assert!(!blocked.locked);
    assert!(runs(&pool, &id).await.is_empty());
    holder.rollback().await.unwrap();

    // Two schedulers tick at once: 07:00 to 09:00 are missed, 10:00 fires once.
    let now = at("2030-01-01T10:00:20Z");
    let (a, b) = tokio::join!(tick(&first, &options, now), tick(&second, &options, now));
    let (a, b) = (a.unwrap(), b.unwrap());
    assert_eq!(a.started + b.started, 1, "{a:?} {b:?}");
    assert_eq!(a.missed + b.missed, 3, "{a:?} {b:?}");
    let recorded = runs(&pool, &id).await;
    let outcomes: Vec<(String, &str)> = recorded
        .iter()
        .map(|r| (r.0.format("%H:%M").to_string(), r.1.as_str()))
        .collect();
    let want = [
        ("07:00", "missed"),
        ("08:00", "missed"),
        ("09:00", "missed"),
        ("10:00", "started"),
    ];
    assert_eq!(
        outcomes,
        want.map(|(t, o)| (t.to_owned(), o)).to_vec(),
        "{recorded:?}"
    );
    let (profiles,): (i64,) =
        sqlx::query_as("select count(*) from profiles where requested_by = $1")
            .bind(format!("schedule:{id}"))
            .fetch_one(&pool)
            .await
            .unwrap();
    assert_eq!(profiles, 1);
    let profile_id = recorded[3].2.expect("started run links its profile");
    let profile = admin.profile(profile_id).await.unwrap();
    assert_eq!(profile.requested_by, format!("schedule:{id}"));
    assert_eq!(profile.status, ProfileStatus::Dispatched);
    let (next,): (DateTime<Utc>,) =
        sqlx::query_as("select next_run_at from schedules where id = $1::uuid")
            .bind(&id)
            .fetch_one(&pool)
            .await
            .unwrap();
    assert_eq!(next, at("2030-01-01T11:00:00Z"));

    // The run row alone keeps an occurrence single: with no advisory lock,
    // a second claim of 10:30 waits for the first transaction and then
    // finds it taken.
    let mut first_claim = pool.begin().await.unwrap();
    let claimed = odp_store::claim_run(
        &mut first_claim,
        id.parse().unwrap(),
        at("2030-01-01T10:30:00Z"),
        odp_store::RunOutcome::Started,
        None,
    )
    .await
    .unwrap();
    assert!(claimed.is_some());
    let racer = {
        let pool = pool.clone();
        let id: uuid::Uuid = id.parse().unwrap();
        tokio::spawn(async move {
            let mut tx = pool.begin().await.unwrap();
            let again = odp_store::claim_run(
                &mut tx,
                id,
                at("2030-01-01T10:30:00Z"),
                odp_store::RunOutcome::Started,
                None,
            )
            .await
            .unwrap();
            tx.commit().await.unwrap();
            again
        })
    };
    // Give the racer time to block on the uncommitted claim.
    tokio::time::sleep(std::time::Duration::from_millis(300)).await;
    first_claim.commit().await.unwrap();
    assert_eq!(
        racer.await.unwrap(),
        None,
        "a claimed occurrence is never claimed twice"
    );
    sqlx::query(
        "delete from schedule_runs
         where schedule_id = $1::uuid and scheduled_for = '2030-01-01T10:30:00Z'",
    )
    .bind(&id)
    .execute(&pool)
    .await
    .unwrap();

    // Ticking again at the same instant finds nothing due.
    let again = tick(&second, &options, now).await.unwrap();
    assert_eq!((again.started, again.missed), (0, 0));
    // At 11:00 the target still has its live profile: skipped, not started.
    let busy = tick(&first, &options, at("2030-01-01T11:00:05Z"))
        .await
        .unwrap();
    assert_eq!(busy.skipped_busy, 1, "{busy:?}");
    // At 13:30, 12:00 and the 13:00 occurrence (beyond the grace) are missed.
    let late = tick(&first, &options, at("2030-01-01T13:30:00Z"))
        .await
        .unwrap();
    assert_eq!((late.started, late.missed), (0, 2), "{late:?}");
    let tail: Vec<String> = runs(&pool, &id)
        .await
        .into_iter()
        .skip(4)
        .map(|r| format!("{} {}", r.0.format("%H:%M"), r.1))
        .collect();
    assert_eq!(tail, ["11:00 skipped_busy", "12:00 missed", "13:00 missed"]);
}

fn odpctl(h: &Harness, token: &str, args: &[&str]) -> (Option<i32>, String, String) {
    let output = common::odpctl(h, token, args);
    (
        output.status.code(),
        String::from_utf8_lossy(&output.stdout).into_owned(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn odpctl_creates_lists_toggles_and_deletes_schedules() {
    let h = common::start_configured("sched-cli", |o| {
        o.with_agent = false;
        o.api_env.push(("ODP_SCHEDULER".into(), "false".into()));
    })
    .await;
    let token = h.platform.token.clone();
    let viewer = mint_scoped_token(&h.platform.jwt_secret, "v", "viewer", &[]).unwrap();
    let host = h.platform.host_id.clone();
    let run = |token: &str, args: &[&str]| tokio::task::block_in_place(|| odpctl(&h, token, args));

    let create = [
        "schedules",
        "create",
        "--name",
        "cli-nightly",
        "--host",
        &host,
        "--process-name",
        "demo",
        "--cron",
        "0 3 * * MON-FRI",
        "--tz",
        "Asia/Tokyo",
        "--duration",
        "15",
    ];
    let (code, stdout, stderr) = run(&token, &create);
    assert_eq!(code, Some(0), "{stdout}{stderr}");
    let id = stdout.trim().to_owned();
    assert_eq!(id.len(), 36, "{stdout}");
    let (code, _, stderr) = run(&token, &create);
    assert_eq!(code, Some(5), "a taken name is a conflict: {stderr}");
    let mut bad = create.to_vec();
    bad[9] = "* * * * * *";
    bad[3] = "cli-bad";
    let (code, _, stderr) = run(&token, &bad);
    assert_eq!(code, Some(2), "sub-minute cron is refused: {stderr}");
    let (code, _, stderr) = run(&viewer, &create);
    assert_eq!(code, Some(3), "viewers may not create: {stderr}");

    let (code, stdout, stderr) = run(&viewer, &["schedules", "list"]);
    assert_eq!(code, Some(0), "{stderr}");
    assert!(
        stdout.contains(&id) && stdout.contains("cli-nightly"),
        "{stdout}"
    );
    let (code, stdout, stderr) = run(&viewer, &["schedules", "show", &id, "--json"]);
    assert_eq!(code, Some(0), "{stderr}");
    let shown: Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(shown["timezone"], "Asia/Tokyo");
    assert_eq!(shown["duration_secs"], 15);

    let (code, _, stderr) = run(&token, &["schedules", "disable", &id]);
    assert_eq!(code, Some(0), "{stderr}");
    let disabled = h
        .platform
        .client()
        .call(Method::GET, &format!("/api/v1/schedules/{id}"), None, 200)
        .await
        .unwrap();
    assert_eq!(
        (disabled["enabled"].clone(), disabled["next_run_at"].clone()),
        (json!(false), Value::Null)
    );
    let (code, _, stderr) = run(&token, &["schedules", "enable", &id]);
    assert_eq!(code, Some(0), "{stderr}");
    let (code, _, stderr) = run(&token, &["schedules", "delete", &id]);
    assert_eq!(code, Some(0), "{stderr}");
    let (code, _, stderr) = run(&token, &["schedules", "show", &id]);
    assert_eq!(code, Some(4), "deleted: {stderr}");
    let (code, _, _) = run(&token, &["schedules", "show", "../profiles"]);
    assert_eq!(code, Some(2), "not an id");
}
