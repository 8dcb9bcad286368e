//! Regression detection against a real Postgres: the finished runs of a
//! schedule are compared with its earlier runs, and a grown function or a
//! newly hit rule raises one alert.

mod support;

use odp_devstack::{Stack, StackOptions};
use odp_pipeline::detect::Detector;
use sqlx::PgPool;
use uuid::Uuid;

struct Schedule {
    id: Uuid,
    runs: i64,
}

impl Schedule {
    async fn create(pool: &PgPool) -> Schedule {
        let id = Uuid::new_v4();
        sqlx::query(
            "insert into schedules (id, name, service, host, target, duration_secs,
                                    frequency_hz, cron, created_by)
             values ($1, $1::text, 'checkout', 'h-1', $2, 60, 99, '0 2 * * *', 'test')",
        )
        .bind(id)
        .bind(serde_json::json!({"by": "process_name", "value": "checkout"}))
        .execute(pool)
        .await
        .unwrap();
        Schedule { id, runs: 0 }
    }

    /// A run whose profile spends `parse_pct`% in `parse` and, when
    /// `string_buffer`, 3% in `java.lang.StringBuffer.append`; `status` as
    /// given.
    async fn run(
        &mut self,
        pool: &PgPool,
        parse_pct: u64,
        string_buffer: bool,
        status: &str,
    ) -> Uuid {
        self.runs += 1;
        let profile_id = Uuid::new_v4();
        sqlx::query(
            "insert into profiles (id, host, service, target, duration_ms, frequency_hz, status,
                                   requested_by, labels)
             values ($1, 'h-1', 'checkout', $2, 60000, 99, $3, 'scheduler', '{\"schedule\": \"nightly\"}')",
        )
        .bind(profile_id)
        .bind(serde_json::json!({"by": "process_name", "value": "checkout"}))
        .bind(status)
        .execute(pool)
        .await
        .unwrap();
        sqlx::query(
            "insert into schedule_runs (schedule_id, scheduled_for, outcome, profile_id)
             values ($1, now() - make_interval(days => 100 - $2::int), 'started', $3)",
        )
        .bind(self.id)
        .bind(self.runs as i32)
        .bind(profile_id)
        .execute(pool)
        .await
        .unwrap();
        let buffer_pct = if string_buffer { 3 } else { 0 };
        let mut stacks: Vec<(&[&str], u64)> = vec![
            (&["main", "handle", "parse"], parse_pct * 10),
            (&["main", "handle"], (100 - parse_pct - buffer_pct) * 10),
        ];
        if string_buffer {
            stacks.push((&["main", "handle", "java.lang.StringBuffer.append"], 30));
        }
        let snapshot = support::snapshot(profile_id, 0, &stacks);
        odp_store::store_snapshots(pool, &[&snapshot])
            .await
            .unwrap();
        profile_id
    }
}

async fn regression(pool: &PgPool, profile_id: Uuid) -> Option<(f64, serde_json::Value)> {
    sqlx::query_as(
        "select share, detail from detections
         where profile_id = $1 and rule_id = 'schedule-regression'",
    )
    .bind(profile_id)
    .fetch_optional(pool)
    .await
    .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn scheduled_runs_are_compared_with_their_previous_runs() {
    let stack = Stack::start(StackOptions::ephemeral()).await.unwrap();
    let pool = stack.connect().await.unwrap();
    let db = odp_store::Database::from(&pool);
    let detector = Detector::start(&db).await.unwrap();
    support::add_catch_all_channel(&pool).await;
    let mut schedule = Schedule::create(&pool).await;

    // Steady runs at 10% and 14% parse (a 12% mean): the first has no
    // history, the second grew only 4 points over the first.
    for pct in [10, 14] {
        let id = schedule.run(&pool, pct, false, "finished").await;
        detector.evaluate_profile(&db, id).await.unwrap();
        assert_eq!(regression(&pool, id).await, None);
    }
    // A failed run is not a baseline.
    schedule.run(&pool, 90, false, "failed").await;

    // Still running at 30%: nothing until it ends.
    let grown = schedule.run(&pool, 30, false, "running").await;
    detector.evaluate_profile(&db, grown).await.unwrap();
    assert_eq!(regression(&pool, grown).await, None);
    sqlx::query("update profiles set status = 'finished' where id = $1")
        .bind(grown)
        .execute(&pool)
        .await
        .unwrap();
    detector.evaluate_profile(&db, grown).await.unwrap();
    let (share, detail) = regression(&pool, grown).await.expect("a regression");
    assert_eq!(share, 18.0, "30% against a 12% mean");
    assert_eq!(detail["runs_compared"], 2);
    assert_eq!(detail["functions"][0]["function"], "parse");
    assert_eq!(detail["functions"][0]["baseline_pct"], 12.0);
    // Evaluating again (a redelivered window) alerts once only.
    detector.evaluate_profile(&db, grown).await.unwrap();
    let alerts: i64 = sqlx::query_scalar(
        "select count(*) from alert_deliveries where rule_id = 'schedule-regression'",
    )
    .fetch_one(&pool)
    .await
    .unwrap();
    assert_eq!(alerts, 1);

    // Back to 12% parse, but StringBuffer appears for the first time (3
    // points, under the growth threshold): the stack-share rule fires and,
    // being new to this schedule, so does the regression rule; the next run
    // with it again is no regression.
    let buffered = schedule.run(&pool, 12, true, "stopped").await;
    detector.evaluate_profile(&db, buffered).await.unwrap();
    let (_, detail) = regression(&pool, buffered).await.expect("a new rule hit");
    assert_eq!(detail["new_rules"], serde_json::json!(["jvm-stringbuffer"]));
    let again = schedule.run(&pool, 12, true, "finished").await;
    detector.evaluate_profile(&db, again).await.unwrap();
    assert_eq!(regression(&pool, again).await, None);

    // A profile of no schedule is never compared.
    let mut unscheduled = Schedule::create(&pool).await;
    let lone = unscheduled.run(&pool, 90, true, "finished").await;
    sqlx::query("delete from schedule_runs where profile_id = $1")
        .bind(lone)
        .execute(&pool)
        .await
        .unwrap();
    detector.evaluate_profile(&db, lone).await.unwrap();
    assert_eq!(regression(&pool, lone).await, None);

    pool.close().await;
    stack.stop().unwrap();
}
