//! Profiling schedules, one behaviour suite run on a real Postgres and a
//! real MariaDB: the CRUD with its conflicts, which schedules are due,
//! each occurrence claimed once when two ticks race, missed runs recorded
//! once, runs finished and schedules advanced, and the scheduler lock held
//! by one tick at a time and freed however a tick ends.

use std::time::Duration;

use chrono::{DateTime, Utc};
use odp_core::cost::StartOptions;
use odp_core::run::{HostSelection, ScheduleRun, StopRule};
use odp_core::{EventKind, Target};
use odp_store::{
    Database, Fired, NewRun, NewSchedule, ProfileMode, RunOutcome, Runs, SchedulePatch,
    SchedulerTick, Schedules, StoreError,
};
use uuid::Uuid;

mod support;
use support::on_both_backends;

fn at(time: &str) -> DateTime<Utc> {
    time.parse().unwrap()
}

/// A nightly wall-clock schedule of the `checkout` service's java process,
/// as the api-server stores one created at `POST /api/v1/schedules`.
fn nightly(name: &str, next_run_at: Option<&str>) -> NewSchedule {
    NewSchedule {
        id: Uuid::new_v4(),
        name: name.into(),
        service: "checkout".into(),
        host: "h1".into(),
        target: Target::ProcessName("java".into()),
        duration_secs: 30,
        frequency_hz: 99,
        window_secs: Some(10),
        cron: "0 4 * * *".into(),
        timezone: "Europe/Paris".into(),
        enabled: true,
        created_by: "ops".into(),
        next_run_at: next_run_at.map(at),
        mode: ProfileMode::Wall,
        options: StartOptions {
            event: Some(EventKind::Wall),
            overhead_budget: Some(0.02),
            ..StartOptions::default()
        },
        run_spec: None,
    }
}

async fn names(schedules: &Schedules) -> Vec<String> {
    let rows = schedules.list().await.unwrap();
    rows.into_iter().map(|s| s.schedule.name).collect()
}

async fn crud_with_name_conflicts_and_patches(db: Database) {
    let schedules = Schedules::new(db);
    let new = nightly("nightly-checkout", Some("2030-01-01T03:00:00Z"));
    let created = schedules.create(&new).await.unwrap();
    let stored = created.clone();
    assert_eq!(
        (
            stored.schedule.id,
            stored.schedule.name.as_str(),
            stored.schedule.service.as_str()
        ),
        (new.id, "nightly-checkout", "checkout")
    );
    assert_eq!(stored.schedule.target, Target::ProcessName("java".into()));
    assert_eq!(stored.schedule.options, new.options);
    assert_eq!(
        (
            stored.schedule.mode,
            stored.schedule.duration_secs,
            stored.schedule.frequency_hz
        ),
        (ProfileMode::Wall, 30, 99)
    );
    assert_eq!(
        (
            stored.schedule.window_secs,
            stored.schedule.cron.as_str(),
            stored.schedule.timezone.as_str()
        ),
        (Some(10), "0 4 * * *", "Europe/Paris")
    );
    assert_eq!(
        (stored.schedule.enabled, stored.schedule.created_by.as_str()),
        (true, "ops")
    );
    assert_eq!(
        (stored.schedule.next_run_at, stored.last_run_at),
        (Some(at("2030-01-01T03:00:00Z")), None)
    );
    assert_eq!(stored.created_at, stored.updated_at);
    let read = schedules.get(new.id).await.unwrap().unwrap();
    assert_eq!(read, stored);

    // A taken name is a conflict, whatever else differs.
    let taken = NewSchedule {
        window_secs: None,
        ..nightly("nightly-checkout", None)
    };
    match schedules.create(&taken).await {
        Err(StoreError::Conflict(message)) => assert_eq!(
            message,
            "a schedule named \"nightly-checkout\" already exists"
        ),
        other => panic!("a taken name must conflict: {other:?}"),
    }
    // A zero duration breaks a check constraint: an error, not a conflict.
    let zero = NewSchedule {
        duration_secs: 0,
        ..nightly("zero", None)
    };
    assert!(matches!(
        schedules.create(&zero).await,
        Err(StoreError::Database(_))
    ));
    let mut unwindowed = nightly("a-first", None);
    unwindowed.window_secs = None;
    assert_eq!(
        schedules
            .create(&unwindowed)
            .await
            .unwrap()
            .schedule
            .window_secs,
        None
    );
    assert_eq!(names(&schedules).await, ["a-first", "nightly-checkout"]);

    // A patch changes only what it names, and sets next_run_at as given.
    let patch = SchedulePatch {
        enabled: Some(false),
        cron: Some("30 5 * * *".into()),
        ..SchedulePatch::default()
    };
    let patched = schedules
        .update(new.id, &patch, None)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(
        (
            patched.schedule.enabled,
            patched.schedule.cron.as_str(),
            patched.schedule.next_run_at
        ),
        (false, "30 5 * * *", None)
    );
    assert_eq!(
        (
            patched.schedule.timezone.as_str(),
            patched.schedule.duration_secs,
            patched.schedule.frequency_hz
        ),
        ("Europe/Paris", 30, 99)
    );
    assert!(patched.updated_at > created.updated_at);
    assert_eq!(patched.created_at, created.created_at);
    let every = SchedulePatch {
        enabled: Some(true),
        timezone: Some("UTC".into()),
        duration_secs: Some(60),
        frequency_hz: Some(49),
        ..SchedulePatch::default()
    };
    let next = Some(at("2030-01-02T05:30:00Z"));
    let patched = schedules
        .update(new.id, &every, next)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(
        (
            patched.schedule.enabled,
            patched.schedule.cron.as_str(),
            patched.schedule.timezone.as_str(),
            patched.schedule.duration_secs,
            patched.schedule.frequency_hz,
            patched.schedule.next_run_at
        ),
        (true, "30 5 * * *", "UTC", 60, 49, next)
    );
    let unknown = Uuid::new_v4();
    assert!(schedules
        .update(unknown, &every, None)
        .await
        .unwrap()
        .is_none());
    assert!(schedules.get(unknown).await.unwrap().is_none());

    // Deleting takes the schedule's runs with it.
    let mut tick = SchedulerTick::begin(schedules.database()).await.unwrap();
    tick.claim_run(
        new.id,
        at("2030-01-01T03:00:00Z"),
        RunOutcome::Started,
        None,
    )
    .await
    .unwrap()
    .unwrap();
    tick.commit().await.unwrap();
    assert_eq!(schedules.runs(new.id, 10).await.unwrap().len(), 1);
    assert!(schedules.delete(new.id).await.unwrap());
    assert!(!schedules.delete(new.id).await.unwrap());
    assert!(schedules.runs(new.id, 10).await.unwrap().is_empty());
    assert_eq!(names(&schedules).await, ["a-first"]);
}

async fn due_schedules_are_enabled_at_or_before_now_oldest_first(db: Database) {
    let schedules = Schedules::new(&db);
    for (name, next) in [
        ("on-time", Some("2030-01-01T11:00:00Z")),
        ("later", Some("2030-01-01T11:00:00.000001Z")),
        ("late", Some("2030-01-01T10:00:00Z")),
        ("never-again", None),
    ] {
        schedules.create(&nightly(name, next)).await.unwrap();
    }
    let disabled = NewSchedule {
        enabled: false,
        ..nightly("disabled", Some("2030-01-01T09:00:00Z"))
    };
    schedules.create(&disabled).await.unwrap();
    let now = at("2030-01-01T11:00:00Z");
    let names = |rows: Vec<odp_store::ScheduleRow>| -> Vec<String> {
        rows.into_iter().map(|s| s.schedule.name).collect()
    };

    let mut first = SchedulerTick::begin(&db).await.unwrap();
    assert_eq!(
        names(first.due(now, 100).await.unwrap()),
        ["late", "on-time"]
    );
    // While the first tick holds them, another skips them instead of waiting.
    let mut second = SchedulerTick::begin(&db).await.unwrap();
    assert!(second.due(now, 100).await.unwrap().is_empty());
    second.commit().await.unwrap();
    // Nor does a tick keep schedules from being created meanwhile.
    let created = tokio::time::timeout(
        Duration::from_secs(5),
        schedules.create(&nightly("created-meanwhile", Some("2030-01-01T10:30:00Z"))),
    )
    .await
    .expect("creating a schedule waits for no tick");
    created.unwrap();
    first.commit().await.unwrap();

    let mut tick = SchedulerTick::begin(&db).await.unwrap();
    assert_eq!(names(tick.due(now, 1).await.unwrap()), ["late"]);
    let later = at("2030-01-01T11:00:00.000001Z");
    assert_eq!(
        names(tick.due(later, 100).await.unwrap()),
        ["late", "created-meanwhile", "on-time", "later"]
    );
    tick.rollback().await.unwrap();
}

async fn a_run_is_claimed_once_when_two_ticks_race(db: Database) {
    let schedule = Schedules::new(&db)
        .create(&nightly("nightly", Some("2030-01-01T10:00:00Z")))
        .await
        .unwrap()
        .schedule;
    let ten = at("2030-01-01T10:00:00Z");
    let eleven = at("2030-01-01T11:00:00Z");
    // The racer's claim waits on the first tick's uncommitted one.
    let race = |occurrence| {
        let db = db.clone();
        tokio::spawn(async move {
            let mut tick = SchedulerTick::begin(&db).await.unwrap();
            let claimed = tick
                .claim_run(schedule.id, occurrence, RunOutcome::Started, None)
                .await
                .unwrap();
            tick.commit().await.unwrap();
            claimed
        })
    };

    let mut first = SchedulerTick::begin(&db).await.unwrap();
    let won = first
        .claim_run(schedule.id, ten, RunOutcome::Started, None)
        .await
        .unwrap()
        .expect("the first claim wins");
    let racer = race(ten);
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(!racer.is_finished(), "the racer waits for the first tick");
    first.commit().await.unwrap();
    assert_eq!(racer.await.unwrap(), None, "an occurrence is claimed once");

    // A claim rolled back leaves the occurrence to the racer.
    let mut first = SchedulerTick::begin(&db).await.unwrap();
    first
        .claim_run(schedule.id, eleven, RunOutcome::Started, None)
        .await
        .unwrap()
        .unwrap();
    let racer = race(eleven);
    tokio::time::sleep(Duration::from_millis(300)).await;
    first.rollback().await.unwrap();
    let taken_over = racer.await.unwrap().expect("the racer claims it");
    assert_ne!(taken_over, won);

    let runs = Schedules::new(&db).runs(schedule.id, 10).await.unwrap();
    let recorded: Vec<_> = runs
        .iter()
        .map(|r| (r.id, r.scheduled_for, r.outcome, r.profile_id))
        .collect();
    assert_eq!(
        recorded,
        [
            (taken_over, eleven, RunOutcome::Started, None),
            (won, ten, RunOutcome::Started, None)
        ]
    );
}

async fn missed_runs_are_recorded_once(db: Database) {
    let schedules = Schedules::new(&db);
    let schedule = schedules
        .create(&nightly("hourly", Some("2030-01-01T07:00:00Z")))
        .await
        .unwrap()
        .schedule;
    let hours = |hours: &[&str]| -> Vec<DateTime<Utc>> {
        hours
            .iter()
            .map(|h| at(&format!("2030-01-01T{h}:00:00Z")))
            .collect()
    };
    let detail = "not fired: no scheduler was running when it fell due";
    let mut tick = SchedulerTick::begin(&db).await.unwrap();
    let missed = hours(&["07", "08", "09"]);
    assert_eq!(
        tick.record_missed(schedule.id, &missed, detail)
            .await
            .unwrap(),
        3
    );
    tick.commit().await.unwrap();
    let mut tick = SchedulerTick::begin(&db).await.unwrap();
    let again = hours(&["08", "09", "10"]);
    assert_eq!(
        tick.record_missed(schedule.id, &again, detail)
            .await
            .unwrap(),
        1
    );
    assert_eq!(
        tick.record_missed(schedule.id, &[], detail).await.unwrap(),
        0
    );
    // A missed occurrence is recorded: it is never claimed to fire.
    assert_eq!(
        tick.claim_run(schedule.id, missed[0], RunOutcome::Started, None)
            .await
            .unwrap(),
        None
    );
    tick.commit().await.unwrap();

    let runs = schedules.runs(schedule.id, 10).await.unwrap();
    let recorded: Vec<_> = runs
        .iter()
        .map(|r| (r.scheduled_for, r.outcome, r.detail.as_deref()))
        .collect();
    let want: Vec<_> = hours(&["10", "09", "08", "07"])
        .into_iter()
        .map(|h| (h, RunOutcome::Missed, Some(detail)))
        .collect();
    assert_eq!(recorded, want);
    let newest = schedules.runs(schedule.id, 2).await.unwrap();
    let newest: Vec<_> = newest.iter().map(|r| r.scheduled_for).collect();
    assert_eq!(newest, hours(&["10", "09"]));

    // Recording waits for a tick's uncommitted claim of one of the
    // occurrences, then leaves that one to it; duplicates count once.
    let mut firing = SchedulerTick::begin(&db).await.unwrap();
    let fired = firing
        .claim_run(schedule.id, hours(&["12"])[0], RunOutcome::Started, None)
        .await
        .unwrap()
        .unwrap();
    let recording = {
        let db = db.clone();
        let late = hours(&["11", "12", "13", "13"]);
        tokio::spawn(async move {
            let mut tick = SchedulerTick::begin(&db).await.unwrap();
            let new = tick.record_missed(schedule.id, &late, "late").await;
            tick.commit().await.unwrap();
            new.unwrap()
        })
    };
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(!recording.is_finished(), "recording waits for the claim");
    firing.commit().await.unwrap();
    assert_eq!(recording.await.unwrap(), 2);
    let runs = schedules.runs(schedule.id, 3).await.unwrap();
    let recorded: Vec<_> = runs
        .iter()
        .map(|r| (r.id, r.scheduled_for, r.outcome))
        .collect();
    let [thirteen, twelve, eleven] = [&runs[0], &runs[1], &runs[2]];
    assert_eq!(
        recorded,
        [
            (thirteen.id, hours(&["13"])[0], RunOutcome::Missed),
            (fired, twelve.scheduled_for, RunOutcome::Started),
            (eleven.id, hours(&["11"])[0], RunOutcome::Missed),
        ]
    );
    assert_eq!(twelve.scheduled_for, hours(&["12"])[0]);
}

async fn runs_finish_and_schedules_advance(db: Database) {
    let schedules = Schedules::new(&db);
    let schedule = schedules
        .create(&nightly("nightly", Some("2030-01-01T10:00:00Z")))
        .await
        .unwrap()
        .schedule;
    let ten = at("2030-01-01T10:00:00Z");
    let eleven = at("2030-01-01T11:00:00Z");
    let profile = Uuid::new_v4();

    let mut tick = SchedulerTick::begin(&db).await.unwrap();
    let started = tick
        .claim_run(schedule.id, ten, RunOutcome::Started, None)
        .await
        .unwrap()
        .unwrap();
    tick.finish_run(
        started,
        RunOutcome::Started,
        Fired::Profile(Some(profile)),
        None,
    )
    .await
    .unwrap();
    let busy = tick
        .claim_run(schedule.id, eleven, RunOutcome::Started, None)
        .await
        .unwrap()
        .unwrap();
    let why = "the target already has a live profile";
    tick.finish_run(
        busy,
        RunOutcome::SkippedBusy,
        Fired::Profile(None),
        Some(why),
    )
    .await
    .unwrap();
    let fired = at("2030-01-01T11:00:05Z");
    tick.advance(schedule.id, Some(at("2030-01-01T12:00:00Z")), Some(fired))
        .await
        .unwrap();
    tick.commit().await.unwrap();

    let runs = schedules.runs(schedule.id, 10).await.unwrap();
    let recorded: Vec<_> = runs
        .iter()
        .map(|r| (r.id, r.outcome, r.profile_id, r.detail.as_deref()))
        .collect();
    assert_eq!(
        recorded,
        [
            (busy, RunOutcome::SkippedBusy, None, Some(why)),
            (started, RunOutcome::Started, Some(profile), None)
        ]
    );
    assert_eq!(
        (runs[1].scheduled_for, runs[1].profile_id),
        (ten, Some(profile))
    );
    let moved = schedules.get(schedule.id).await.unwrap().unwrap();
    assert_eq!(
        (moved.schedule.next_run_at, moved.last_run_at),
        (Some(at("2030-01-01T12:00:00Z")), Some(fired))
    );

    // A schedule that never fires again keeps when it last fired.
    let mut tick = SchedulerTick::begin(&db).await.unwrap();
    tick.advance(schedule.id, None, None).await.unwrap();
    tick.commit().await.unwrap();
    let ended = schedules.get(schedule.id).await.unwrap().unwrap();
    assert_eq!(
        (ended.schedule.next_run_at, ended.last_run_at),
        (None, Some(fired))
    );
}

/// Whether no session holds the scheduler lock, seen from outside any tick.
async fn lock_is_free(db: &Database) -> bool {
    match db {
        Database::Postgres(pool) => {
            let (held,): (i64,) =
                sqlx::query_as("select count(*) from pg_locks where locktype = 'advisory'")
                    .fetch_one(pool)
                    .await
                    .unwrap();
            held == 0
        }
        Database::MySql(pool) => {
            let (free,): (i64,) = sqlx::query_as(
                "select is_free_lock(concat(left(database(), 50), '.odp-scheduler'))",
            )
            .fetch_one(pool)
            .await
            .unwrap();
            free == 1
        }
    }
}

/// Opens a tick and tries the lock.
async fn locked_tick(db: &Database) -> (SchedulerTick, bool) {
    let mut tick = SchedulerTick::begin(db).await.unwrap();
    let locked = tick.try_lock().await.unwrap();
    (tick, locked)
}

async fn one_tick_holds_the_lock_and_every_end_frees_it(db: Database) {
    assert!(lock_is_free(&db).await);
    let (mut first, locked) = locked_tick(&db).await;
    assert!(locked);
    assert!(
        first.try_lock().await.unwrap(),
        "taking it again is a no-op"
    );
    let (second, locked) = locked_tick(&db).await;
    assert!(!locked, "a second tick finds the lock held");
    second.commit().await.unwrap();
    assert!(!lock_is_free(&db).await);
    first.commit().await.unwrap();
    assert!(lock_is_free(&db).await, "commit frees the lock");

    let (rolled_back, locked) = locked_tick(&db).await;
    assert!(locked);
    rolled_back.rollback().await.unwrap();
    assert!(lock_is_free(&db).await, "rollback frees the lock");

    // After a failed statement (a run of no schedule), the caller's
    // rollback frees the lock at once.
    let (mut failed, locked) = locked_tick(&db).await;
    assert!(locked);
    let orphan = failed
        .claim_run(
            Uuid::new_v4(),
            at("2030-01-01T10:00:00Z"),
            RunOutcome::Started,
            None,
        )
        .await;
    assert!(matches!(orphan, Err(StoreError::Database(_))), "{orphan:?}");
    failed.rollback().await.unwrap();
    assert!(
        lock_is_free(&db).await,
        "rollback after an error frees the lock"
    );
    let (next, locked) = locked_tick(&db).await;
    assert!(locked);
    next.commit().await.unwrap();

    // A tick dropped mid-way (an error passed up with `?`) frees it too,
    // without a connection going back to the pool still holding it.
    let (dropped, locked) = locked_tick(&db).await;
    assert!(locked);
    drop(dropped);
    let mut waited = Duration::ZERO;
    while !lock_is_free(&db).await {
        assert!(
            waited < Duration::from_secs(10),
            "a dropped tick kept the lock"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
        waited += Duration::from_millis(50);
    }
    let (after, locked) = locked_tick(&db).await;
    assert!(locked);
    after.commit().await.unwrap();
    assert!(lock_is_free(&db).await);
}

/// A run schedule keeps its run's spec, and each started occurrence links
/// the run it started.
async fn a_run_schedule_keeps_its_spec_and_links_its_runs(db: Database) {
    let schedules = Schedules::new(&db);
    let spec = ScheduleRun {
        hosts: HostSelection::Percent(25.0),
        stratify_by: vec!["zone".into()],
        seed: Some(7),
        strict: true,
        stop_when: Some(StopRule {
            top: 3,
            max_stderr: 0.02,
        }),
    };
    let new = NewSchedule {
        host: "*".into(),
        run_spec: Some(spec.clone()),
        ..nightly("hourly-checkout-run", Some("2030-01-01T10:00:00Z"))
    };
    let created = schedules.create(&new).await.unwrap();
    assert_eq!(created.schedule.run_spec.as_ref(), Some(&spec));
    assert_eq!(created.schedule.host, "*");
    let plain = schedules.create(&nightly("plain", None)).await.unwrap();
    assert!(plain.schedule.run_spec.is_none());

    let run = Uuid::new_v4();
    Runs::new(&db)
        .create(&NewRun {
            id: run,
            service: "checkout".into(),
            selection: serde_json::json!({}),
            chosen: serde_json::json!({}),
            stop_rule: None::<serde_json::Value>,
            max_duration_ms: 30_000,
            requested_by: format!("schedule:{}", new.id),
        })
        .await
        .unwrap();
    let mut tick = SchedulerTick::begin(&db).await.unwrap();
    let ten = at("2030-01-01T10:00:00Z");
    let started = tick
        .claim_run(new.id, ten, RunOutcome::Started, None)
        .await
        .unwrap()
        .unwrap();
    tick.finish_run(started, RunOutcome::Started, Fired::Run(Some(run)), None)
        .await
        .unwrap();
    let eleven = at("2030-01-01T11:00:00Z");
    let busy = tick
        .claim_run(new.id, eleven, RunOutcome::Started, None)
        .await
        .unwrap()
        .unwrap();
    let why = format!("its previous run {run} is still running");
    tick.finish_run(busy, RunOutcome::SkippedBusy, Fired::Run(None), Some(&why))
        .await
        .unwrap();
    tick.commit().await.unwrap();
    let recorded: Vec<_> = schedules
        .runs(new.id, 10)
        .await
        .unwrap()
        .into_iter()
        .map(|r| (r.outcome, r.profile_id, r.run_id, r.detail))
        .collect();
    assert_eq!(
        recorded,
        [
            (RunOutcome::SkippedBusy, None, None, Some(why)),
            (RunOutcome::Started, None, Some(run), None),
        ]
    );
    let latest = schedules.runs(new.id, 1).await.unwrap().remove(0);
    assert_eq!(latest.run_id, None);
    assert!(schedules.delete(new.id).await.unwrap());
}

on_both_backends!(
    a_run_schedule_keeps_its_spec_and_links_its_runs,
    crud_with_name_conflicts_and_patches,
    due_schedules_are_enabled_at_or_before_now_oldest_first,
    a_run_is_claimed_once_when_two_ticks_race,
    missed_runs_are_recorded_once,
    runs_finish_and_schedules_advance,
    one_tick_holds_the_lock_and_every_end_frees_it,
);
