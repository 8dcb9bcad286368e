//! Regression detection of continuous profiles against a real Postgres:
//! an hour's segment is compared with the same host's segments of the same
//! hour in earlier weeks; a growth beyond three standard errors and the
//! threshold raises one alert that names the baseline to diff with, and a
//! growth within chance raises none.

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

async fn regression(pool: &PgPool, profile_id: Uuid) -> Option<(f64, serde_json::Value)> {
    sqlx::query_as(
        "select share, detail from detections
         where profile_id = $1 and rule_id = 'continuous-regression'",
    )
    .bind(profile_id)
    .fetch_optional(pool)
    .await
    .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_hour_is_compared_with_the_same_hour_of_earlier_weeks() {
    let stack = Stack::start(StackOptions::ephemeral()).await.unwrap();
    let pool = stack.connect().await.unwrap();
    let db = Database::from(&pool);
    let detector = Detector::start(&db).await.unwrap();
    support::add_catch_all_channel(&pool).await;
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
