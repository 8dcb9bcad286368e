//! Issue detection against a real Postgres: crafted snapshots stored with
//! `odp_store::store_snapshots`, evaluated, and their detections read back
//! as the API serves them.

mod support;

use odp_devstack::{Stack, StackOptions};
use odp_pipeline::detect::Detector;
use odp_rules::seed::seed_rules;
use sqlx::PgPool;
use support::snapshot;
use uuid::Uuid;

async fn insert_profile(pool: &PgPool, id: Uuid, process: &str) {
    sqlx::query(
        "insert into profiles (id, host, target, duration_ms, frequency_hz, status, requested_by)
         values ($1, 'h-1', $2, 60000, 99, 'running', 'test')",
    )
    .bind(id)
    .bind(serde_json::json!({"by": "process_name", "value": process}))
    .execute(pool)
    .await
    .unwrap();
}

async fn detection_rows(pool: &PgPool, id: Uuid) -> i64 {
    sqlx::query_scalar("select count(*) from detections where profile_id = $1")
        .bind(id)
        .fetch_one(pool)
        .await
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn detections_follow_the_stored_samples_idempotently() {
    let stack = Stack::start(StackOptions::ephemeral()).await.unwrap();
    let pool = stack.connect().await.unwrap();
    let db = odp_store::Database::from(&pool);
    let seed = seed_rules().unwrap();

    // Seeding: every rule once; a second start-up writes nothing.
    let detector = Detector::start(&db).await.unwrap();
    let rules = odp_store::list_rules(&pool).await.unwrap();
    assert_eq!(rules.len(), seed.len());
    assert!(rules.iter().all(|r| r.source == "seed"));
    assert_eq!(
        odp_store::install_seed_rules(&pool, &seed).await.unwrap(),
        0
    );

    let id = Uuid::new_v4();
    insert_profile(&pool, id, "checkout").await;
    // 30% StringBuffer; memcpy in 10% of stacks but never as the leaf, so
    // the leaf-only memcpy rule stays quiet.
    let first = snapshot(
        id,
        0,
        &[
            (&["main", "work", "java.lang.StringBuffer.append"], 300),
            (&["main", "__memmove_avx_unaligned_erms", "page_fault"], 100),
            (&["main", "work"], 600),
        ],
    );
    odp_store::store_snapshots(&pool, &[&first]).await.unwrap();
    assert_eq!(detector.evaluate_profile(&db, id).await.unwrap(), 1);

    let issues = odp_store::profile_issues(&pool, id).await.unwrap();
    assert_eq!(issues.len(), 1, "{issues:?}");
    let issue = &issues[0];
    assert_eq!(issue.rule_id, "jvm-stringbuffer");
    assert_eq!(issue.rule.title, "java.lang.StringBuffer");
    assert!(issue.rule.link.starts_with("https://docs.oracle.com/"));
    assert_eq!((issue.share, issue.threshold_pct), (30.0, 1.0));
    assert_eq!((issue.samples_matched, issue.samples_total), (300, 1000));
    assert_eq!(issue.stacks.len(), 1);
    assert_eq!(issue.stacks[0].count, 300);
    assert_eq!(
        issue.stacks[0].frames,
        ["main", "work", "java.lang.StringBuffer.append"]
    );

    // Re-evaluation and redelivery change nothing but the last evaluation.
    detector.evaluate_profile(&db, id).await.unwrap();
    let redelivered = odp_store::store_snapshots(&pool, &[&first]).await.unwrap();
    assert_eq!(redelivered.duplicates, 1);
    detector.evaluate_all(&db, &[id, id]).await;
    let again = odp_store::profile_issues(&pool, id).await.unwrap();
    assert_eq!(again.len(), 1);
    assert_eq!(detection_rows(&pool, id).await, 1);
    assert_eq!(again[0].share, 30.0);
    assert_eq!(again[0].first_evaluated_at, issue.first_evaluated_at);
    assert!(again[0].last_evaluated_at >= issue.last_evaluated_at);

    // A later window dilutes the share: the same row is updated.
    let second = snapshot(id, 1, &[(&["main", "work"], 9000)]);
    odp_store::store_snapshots(&pool, &[&second]).await.unwrap();
    detector.evaluate_profile(&db, id).await.unwrap();
    let diluted = odp_store::profile_issues(&pool, id).await.unwrap();
    assert_eq!(diluted.len(), 1);
    assert_eq!(
        (diluted[0].samples_matched, diluted[0].samples_total),
        (300, 10_000)
    );
    assert!((diluted[0].share - 3.0).abs() < 1e-9);
    assert_eq!(diluted[0].first_evaluated_at, issue.first_evaluated_at);

    // An admin raises the threshold for this service (its process name):
    // 3% no longer qualifies and the detection goes away.
    let mut edited = seed
        .iter()
        .find(|r| r.id == "jvm-stringbuffer")
        .unwrap()
        .clone();
    edited.service_thresholds.insert("checkout".into(), 5.0);
    let saved = odp_store::save_user_rule(&pool, &edited).await.unwrap();
    assert_eq!(saved.source, "user");
    detector.reload(&db).await.unwrap();
    assert_eq!(detector.evaluate_profile(&db, id).await.unwrap(), 0);
    assert_eq!(detection_rows(&pool, id).await, 0);

    // Re-seeding leaves the admin's rule alone.
    odp_store::install_seed_rules(&pool, &seed).await.unwrap();
    let kept = odp_store::list_rules(&pool)
        .await
        .unwrap()
        .into_iter()
        .find(|r| r.rule.id == "jvm-stringbuffer")
        .unwrap();
    assert_eq!(kept.source, "user");
    assert_eq!(kept.rule.service_thresholds.get("checkout"), Some(&5.0));

    // A profile with no samples (or unknown) evaluates to nothing, cleanly.
    detector.evaluate_all(&db, &[Uuid::new_v4()]).await;
    assert_eq!(detector.failures(), 0);

    pool.close().await;
    stack.stop().unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn profiles_by_pid_use_their_host_as_service() {
    let stack = Stack::start(StackOptions::ephemeral()).await.unwrap();
    let pool = stack.connect().await.unwrap();
    let db = odp_store::Database::from(&pool);
    let detector = Detector::start(&db).await.unwrap();
    let mut rule = seed_rules()
        .unwrap()
        .into_iter()
        .find(|r| r.id == "native-lock-contention")
        .unwrap();
    rule.service_thresholds.insert("h-1".into(), 50.0);
    odp_store::save_user_rule(&pool, &rule).await.unwrap();
    detector.reload(&db).await.unwrap();

    // No profile row at all: the host comes from the snapshots.
    let id = Uuid::new_v4();
    let s = snapshot(
        id,
        0,
        &[
            (&["main", "pthread_mutex_lock", "__lll_lock_wait"], 20),
            (&["main"], 80),
        ],
    );
    odp_store::store_snapshots(&pool, &[&s]).await.unwrap();
    assert_eq!(detector.evaluate_profile(&db, id).await.unwrap(), 0);

    // The same samples in another host's profile use the rule's 5%.
    let other = Uuid::new_v4();
    let mut s = snapshot(
        other,
        0,
        &[
            (&["main", "pthread_mutex_lock", "__lll_lock_wait"], 20),
            (&["main"], 80),
        ],
    );
    s.host = "h-2".into();
    odp_store::store_snapshots(&pool, &[&s]).await.unwrap();
    assert_eq!(detector.evaluate_profile(&db, other).await.unwrap(), 1);
    let issues = odp_store::profile_issues(&pool, other).await.unwrap();
    assert_eq!(issues[0].rule_id, "native-lock-contention");
    assert_eq!(issues[0].threshold_pct, 5.0);

    pool.close().await;
    stack.stop().unwrap();
}

/// A running profile evaluated batch after batch reads each window once:
/// its first window's samples are still counted after its row is gone
/// (read from the sum kept since), and once it finished it is read whole.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_running_profile_is_evaluated_on_the_windows_stored_since() {
    let stack = Stack::start(StackOptions::ephemeral()).await.unwrap();
    let pool = stack.connect().await.unwrap();
    let db = odp_store::Database::from(&pool);
    let detector = Detector::start(&db).await.unwrap();
    let id = Uuid::new_v4();
    insert_profile(&pool, id, "checkout").await;
    let share = || async {
        let issues = odp_store::profile_issues(&pool, id).await.unwrap();
        issues
            .iter()
            .find(|i| i.rule_id == "jvm-stringbuffer")
            .map(|i| (i.samples_matched, i.samples_total))
    };

    let first = snapshot(
        id,
        0,
        &[
            (&["main", "work", "java.lang.StringBuffer.append"], 300),
            (&["main", "work"], 700),
        ],
    );
    odp_store::store_snapshots(&pool, &[&first]).await.unwrap();
    detector.evaluate_batch(&db, &[id], &[]).await;
    assert_eq!(share().await, Some((300, 1000)));

    // The first window's row goes; a read of the whole profile would no
    // longer count it, the sum kept since does.
    sqlx::query("delete from snapshots where profile_id = $1")
        .bind(id)
        .execute(&pool)
        .await
        .unwrap();
    let second = snapshot(
        id,
        1,
        &[
            (&["main", "work", "java.lang.StringBuffer.append"], 100),
            (&["main", "work"], 900),
        ],
    );
    odp_store::store_snapshots(&pool, &[&second]).await.unwrap();
    detector.evaluate_batch(&db, &[id], &[]).await;
    assert_eq!(share().await, Some((400, 2000)));
    // Nothing new: the same sum.
    detector.evaluate_batch(&db, &[id], &[]).await;
    assert_eq!(share().await, Some((400, 2000)));

    // Finished: read whole, which now holds the second window only.
    sqlx::query("update profiles set status = 'finished', finished_at = now() where id = $1")
        .bind(id)
        .execute(&pool)
        .await
        .unwrap();
    detector.evaluate_batch(&db, &[], &[id]).await;
    assert_eq!(share().await, Some((100, 1000)));
    assert_eq!(detector.failures(), 0);

    pool.close().await;
    stack.stop().unwrap();
}
