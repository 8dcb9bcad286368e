//! Regression detection of continuous profiles against a real Postgres:
//! an hour's segment is compared with the same host's segments of the same
//! hour in earlier weeks; a growth beyond three standard errors and the
//! threshold raises one alert that names the baseline to diff with, and a
//! growth within chance raises none; after a deploy, a segment is compared
//! with the host's hours on the release before.

mod support;

use odp_core::continuous::{segment_profile_id, SEGMENT_SECS};
use odp_core::{EventKind, Target};
use odp_devstack::{Stack, StackOptions};
use odp_pipeline::detect::Detector;
use odp_store::{
    Configuration as _, ContinuousProfiles, Database, NewContinuous, NewService, Segment, Services,
};
use sqlx::PgPool;
use uuid::Uuid;

const WEEK: i64 = 7 * 24 * 3600;

/// Opens h-1's segment of `continuous` starting at `start`, with 10,000
/// samples `parse_pct`% in `parse`, and ends it.
async fn segment(
    db: &Database,
    continuous: &ContinuousProfiles,
    id: Uuid,
    start: i64,
    parse_pct: u64,
) -> Uuid {
    let assignment = continuous.get(id).await.unwrap().unwrap().assignment();
    let profile_id = segment_profile_id(id, "h-1", start);
    let opened = continuous
        .open_segment(&Segment {
            profile_id,
            assignment: &assignment,
            host: "h-1",
            segment_start_s: start,
            agent_id: "agent",
        })
        .await
        .unwrap();
    assert!(opened);
    let window = support::snapshot(
        profile_id,
        0,
        &[
            (&["main", "handle", "parse"], parse_pct * 100),
            (&["main", "handle"], (100 - parse_pct) * 100),
        ],
    );
    odp_store::store_snapshots(db.clone(), &[&window])
        .await
        .unwrap();
    let pool = match db {
        Database::Postgres(pool) => pool,
        Database::MySql(_) => unreachable!("this test runs on Postgres"),
    };
    sqlx::query("update profiles set status = 'finished' where id = $1")
        .bind(profile_id)
        .execute(pool)
        .await
        .unwrap();
    profile_id
}

/// Service `checkout`, profiled always.
async fn always_checkout(db: &Database) -> (ContinuousProfiles, Uuid) {
    Services::new(db.clone())
        .create(&NewService {
            name: "checkout".into(),
            target: Target::ProcessName("checkout".into()),
            owner_team: None,
            description: None,
            created_by: "alice".into(),
        })
        .await
        .unwrap();
    let continuous = ContinuousProfiles::new(db.clone());
    let id = continuous
        .create(&NewContinuous {
            service: "checkout".into(),
            event: EventKind::CpuClock,
            frequency_hz: 19,
            cpu_budget_ppm: 5_000,
            hosts: None,
            created_by: "alice".into(),
        })
        .await
        .unwrap()
        .id;
    (continuous, id)
}

/// A stack with service `checkout` profiled always, its detector and a
/// channel that takes every alert.
struct Checkout {
    _stack: Stack,
    pool: PgPool,
    db: Database,
    detector: Detector,
    continuous: ContinuousProfiles,
    id: Uuid,
}

impl Checkout {
    async fn start() -> Checkout {
        let stack = Stack::start(StackOptions::ephemeral()).await.unwrap();
        let pool = stack.connect().await.unwrap();
        let db = Database::from(&pool);
        let detector = Detector::start(&db).await.unwrap();
        support::add_catch_all_channel(&pool).await;
        let (continuous, id) = always_checkout(&db).await;
        Checkout {
            _stack: stack,
            pool,
            db,
            detector,
            continuous,
            id,
        }
    }
}

async fn regression(pool: &PgPool, profile_id: Uuid) -> Option<(f64, serde_json::Value)> {
    finding(pool, profile_id, "continuous-regression").await
}

async fn finding(pool: &PgPool, profile_id: Uuid, rule: &str) -> Option<(f64, serde_json::Value)> {
    sqlx::query_as("select share, detail from detections where profile_id = $1 and rule_id = $2")
        .bind(profile_id)
        .bind(rule)
        .fetch_optional(pool)
        .await
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_hour_is_compared_with_the_same_hour_of_earlier_weeks() {
    let Checkout {
        _stack,
        pool,
        db,
        detector,
        continuous,
        id,
    } = Checkout::start().await;
    let hour = 1_800_000_000 / SEGMENT_SECS * SEGMENT_SECS;

    // Two weeks ago and last week at 10% and 12% (an 11% mean over 20,000
    // samples); the day before at 40%, which is not this hour's baseline.
    segment(&db, &continuous, id, hour - 2 * WEEK, 10).await;
    segment(&db, &continuous, id, hour - WEEK, 12).await;
    segment(&db, &continuous, id, hour - 86_400, 40).await;

    // This hour at 12%: one point over the mean, under the 2-point
    // threshold and within chance (the difference's error is 0.38 points).
    let calm = segment(&db, &continuous, id, hour, 12).await;
    detector.evaluate_profile(&db, calm).await.unwrap();
    assert_eq!(regression(&pool, calm).await, None);

    // The next week's hour at 16%: 5 points, 12 standard errors.
    let grown = segment(&db, &continuous, id, hour + WEEK, 16).await;
    detector.evaluate_profile(&db, grown).await.unwrap();
    let (share, detail) = regression(&pool, grown).await.expect("a regression");
    assert!((share - 4.67).abs() < 0.01, "16% against 11.33%: {share}");
    assert_eq!(detail["runs_compared"], 3, "{detail}");
    assert_eq!(detail["functions"][0]["function"], "parse");
    let stderr = detail["functions"][0]["growth_stderr_points"]
        .as_f64()
        .unwrap();
    assert!(stderr > 0.3 && stderr < 0.5, "{detail}");
    assert_eq!(detail["baseline_profiles"][0], calm.to_string().as_str());
    // The schedule rule does not judge segments.
    let scheduled: i64 =
        sqlx::query_scalar("select count(*) from detections where rule_id = 'schedule-regression'")
            .fetch_one(&pool)
            .await
            .unwrap();
    assert_eq!(scheduled, 0);

    // One alert, naming the hour it was compared with.
    let due = odp_store::claim_due_deliveries(db.clone(), 10, std::time::Duration::from_secs(60))
        .await
        .unwrap();
    let regressions: Vec<_> = due
        .iter()
        .filter(|d| d.rule_id == "continuous-regression")
        .collect();
    assert_eq!(regressions.len(), 1);
    assert_eq!(regressions[0].profile_id, grown);
    assert_eq!(regressions[0].compared_with, Some(calm));
}

/// h-1's agent says which release its host runs.
async fn runs_release(db: &Database, release: &str, at_s: i64) {
    let event = odp_devstack::fixtures::release_heartbeat("h-1", "agent", release, at_s);
    odp_store::record_agent_event(db.clone(), &event)
        .await
        .unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_first_hours_of_a_release_are_compared_with_the_release_before() {
    let Checkout {
        _stack,
        pool,
        db,
        detector,
        continuous,
        id,
    } = Checkout::start().await;
    let hour = 1_800_000_000 / SEGMENT_SECS * SEGMENT_SECS;
    let hours = |n: i64| hour + n * SEGMENT_SECS;

    // Release 1.0 at 10% and 11%; then 1.1 at 16%.
    runs_release(&db, "1.0", hours(0)).await;
    let old = [
        segment(&db, &continuous, id, hours(0), 10).await,
        segment(&db, &continuous, id, hours(1), 11).await,
    ];
    runs_release(&db, "1.1", hours(2)).await;
    let deployed = segment(&db, &continuous, id, hours(2), 16).await;
    detector.evaluate_profile(&db, deployed).await.unwrap();
    let (share, detail) = finding(&pool, deployed, "release-regression")
        .await
        .expect("a release regression");
    assert!((share - 5.5).abs() < 0.01, "16% against 10.5%: {share}");
    assert_eq!(detail["functions"][0]["function"], "parse");
    assert_eq!(detail["baseline_profiles"][0], old[1].to_string().as_str());
    assert_eq!(detail["baseline_profiles"][1], old[0].to_string().as_str());
    // No same hour of an earlier week: the weekly rule has nothing to say.
    assert_eq!(regression(&pool, deployed).await, None);
    // The next hour of 1.1, as hot: compared with 1.0 again, not with 1.1.
    let next = segment(&db, &continuous, id, hours(3), 16).await;
    detector.evaluate_profile(&db, next).await.unwrap();
    let (share, _) = finding(&pool, next, "release-regression").await.unwrap();
    assert!((share - 5.5).abs() < 0.01, "{share}");
    // Within 1.0 nothing is compared: 11% after 10% is no release change.
    detector.evaluate_profile(&db, old[1]).await.unwrap();
    assert_eq!(finding(&pool, old[1], "release-regression").await, None);

    let due = odp_store::claim_due_deliveries(db.clone(), 10, std::time::Duration::from_secs(60))
        .await
        .unwrap();
    let alerted: Vec<_> = due
        .iter()
        .filter(|d| d.rule_id == "release-regression")
        .map(|d| (d.profile_id, d.compared_with))
        .collect();
    assert!(alerted.contains(&(deployed, Some(old[1]))), "{alerted:?}");
}
