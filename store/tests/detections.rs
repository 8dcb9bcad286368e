//! Detections, one behaviour suite run on a real Postgres and a real
//! MariaDB: saving is idempotent and keeps when a rule first flagged a
//! profile, issues read back exactly with their stacks' frame names, each
//! newly flagged rule queues one alert per matching enabled channel, and
//! the reads the rule kinds need (identity, earlier scheduled runs, rules
//! hit).

use std::collections::BTreeSet;

use odp_core::domain::DeliveryStatus;
use odp_core::Target;
use odp_rules::StackHit;
use odp_store::{AlertSubject, Database, DeliveryFilter};
use uuid::Uuid;

mod detect_fixtures;
mod support;
use detect_fixtures::{detection, profile, seed, store_stack, uuid_sql, webhook};
use support::{execute, on_both_backends};

const CHECKOUT: AlertSubject<'static> = AlertSubject {
    service: "checkout",
    host: "h1",
    except_rules: &[],
};

async fn deliveries(db: &Database, channel_id: Uuid) -> Vec<(Uuid, String)> {
    let filter = DeliveryFilter {
        channel_id,
        status: None,
        before: None,
        limit: 100,
    };
    odp_store::channel_deliveries(db, &filter)
        .await
        .unwrap()
        .unwrap()
        .into_iter()
        .map(|d| {
            assert_eq!(d.status, DeliveryStatus::Pending);
            (d.profile_id, d.rule_id)
        })
        .collect()
}

async fn saving_is_idempotent_and_issues_read_back_exactly(db: Database) {
    let pack = seed(&db).await;
    let id = profile(&db, "h1", "checkout", "java").await;
    // A stack stored by ingest (named by lookup) and one whose names the
    // detection carries.
    let stored = store_stack(
        &db,
        &[
            ("main", "app"),
            ("", "/usr/lib/libjvm.so"),
            ("java.lang.StringBuffer.append", "rt.jar"),
        ],
    )
    .await;
    let carried = Uuid::new_v4();
    let mut buffer = detection("jvm-stringbuffer", 300, vec![StackHit::new(stored, 300)]);
    buffer.detail = serde_json::json!({"grown": [{"function": "append", "by": 2.5}]});
    let hashtable = detection(
        "jvm-hashtable",
        125,
        vec![StackHit {
            stack_id: carried,
            count: 125,
            frames: vec!["main".into(), "java.util.Hashtable.get".into()],
        }],
    );
    let found = [hashtable.clone(), buffer.clone()];

    let new = odp_store::save_detections(&db, id, None, &found)
        .await
        .unwrap();
    assert_eq!(new, ["jvm-hashtable", "jvm-stringbuffer"]);
    let issues = odp_store::profile_issues(&db, id).await.unwrap();
    let title = |rule: &str| pack.iter().find(|r| r.id == rule).unwrap().title.clone();
    let shown: Vec<_> = issues
        .iter()
        .map(|i| {
            (
                i.rule_id.as_str(),
                i.kind.as_str(),
                i.rule.title.clone(),
                i.share,
                i.threshold_pct,
                i.samples_matched,
                i.samples_total,
            )
        })
        .collect();
    assert_eq!(
        shown,
        [
            (
                "jvm-stringbuffer",
                "stack_share",
                title("jvm-stringbuffer"),
                30.0,
                1.0,
                300,
                1000
            ),
            (
                "jvm-hashtable",
                "stack_share",
                title("jvm-hashtable"),
                12.5,
                1.0,
                125,
                1000
            ),
        ]
    );
    assert_eq!(issues[0].stacks.len(), 1);
    assert_eq!(
        (issues[0].stacks[0].stack_id, issues[0].stacks[0].count),
        (stored, 300)
    );
    assert_eq!(
        issues[0].stacks[0].frames,
        ["main", "[libjvm.so]", "java.lang.StringBuffer.append"]
    );
    assert_eq!(issues[0].detail, buffer.detail);
    assert_eq!(
        issues[1].stacks[0].frames,
        ["main", "java.util.Hashtable.get"]
    );
    assert_eq!(issues[1].detail, serde_json::Value::Null);

    // Saving the same again flags nothing new and keeps the first time.
    let again = odp_store::save_detections(&db, id, Some(CHECKOUT), &found)
        .await
        .unwrap();
    assert!(again.is_empty(), "{again:?}");
    let reread = odp_store::profile_issues(&db, id).await.unwrap();
    assert_eq!(reread.len(), 2);
    for (before, after) in issues.iter().zip(&reread) {
        assert_eq!(after.rule_id, before.rule_id);
        assert_eq!(after.first_evaluated_at, before.first_evaluated_at);
        assert!(after.last_evaluated_at >= before.last_evaluated_at);
    }

    // A rule no longer found goes; a changed one is updated in place.
    let mut diluted = buffer.clone();
    diluted.samples_total = 10_000;
    diluted.share = 3.0;
    let new = odp_store::save_detections(&db, id, None, &[diluted])
        .await
        .unwrap();
    assert!(new.is_empty());
    let left = odp_store::profile_issues(&db, id).await.unwrap();
    assert_eq!(left.len(), 1);
    assert_eq!(
        (
            left[0].rule_id.as_str(),
            left[0].share,
            left[0].samples_total
        ),
        ("jvm-stringbuffer", 3.0, 10_000)
    );
    assert_eq!(left[0].first_evaluated_at, issues[0].first_evaluated_at);

    // Flagged again after it went: new again.
    let new = odp_store::save_detections(&db, id, None, &found)
        .await
        .unwrap();
    assert_eq!(new, ["jvm-hashtable"]);

    // Nothing found clears the profile.
    assert!(odp_store::save_detections(&db, id, None, &[])
        .await
        .unwrap()
        .is_empty());
    assert!(odp_store::profile_issues(&db, id).await.unwrap().is_empty());
    assert!(odp_store::profile_issues(&db, Uuid::new_v4())
        .await
        .unwrap()
        .is_empty());
}

async fn each_new_detection_queues_one_alert_per_matching_channel(db: Database) {
    seed(&db).await;
    let all = odp_store::create_channel(&db, &webhook("all", "*", true))
        .await
        .unwrap();
    let prefixed = odp_store::create_channel(&db, &webhook("check", "check?ut*", true))
        .await
        .unwrap();
    // LIKE's own wildcards in a pattern are literal: `_` is not any one
    // character here.
    let literal = odp_store::create_channel(&db, &webhook("literal", "check_ut", true))
        .await
        .unwrap();
    let other = odp_store::create_channel(&db, &webhook("other", "payments", true))
        .await
        .unwrap();
    let disabled = odp_store::create_channel(&db, &webhook("off", "*", false))
        .await
        .unwrap();
    let id = profile(&db, "h1", "checkout", "java").await;
    let found = [
        detection("jvm-stringbuffer", 300, Vec::new()),
        detection("jvm-hashtable", 125, Vec::new()),
    ];

    odp_store::save_detections(&db, id, Some(CHECKOUT), &found)
        .await
        .unwrap();
    let expected: BTreeSet<(Uuid, String)> = [
        (id, "jvm-hashtable".to_string()),
        (id, "jvm-stringbuffer".to_string()),
    ]
    .into();
    for channel in [&all, &prefixed] {
        let queued: BTreeSet<_> = deliveries(&db, channel.id).await.into_iter().collect();
        assert_eq!(queued, expected, "{}", channel.name);
    }
    for channel in [&literal, &other, &disabled] {
        assert!(
            deliveries(&db, channel.id).await.is_empty(),
            "{}",
            channel.name
        );
    }

    // Re-evaluation, and a rule cleared then flagged again, queue nothing
    // more: one delivery per (profile, rule, channel).
    odp_store::save_detections(&db, id, Some(CHECKOUT), &found)
        .await
        .unwrap();
    odp_store::save_detections(&db, id, Some(CHECKOUT), &found[..1])
        .await
        .unwrap();
    let new = odp_store::save_detections(&db, id, Some(CHECKOUT), &found)
        .await
        .unwrap();
    assert_eq!(new, ["jvm-hashtable"]);
    assert_eq!(deliveries(&db, all.id).await.len(), 2);
    assert_eq!(deliveries(&db, prefixed.id).await.len(), 2);

    // Re-analysis (no subject) records without alerting.
    let past = profile(&db, "h2", "checkout", "java").await;
    let new = odp_store::save_detections(&db, past, None, &found)
        .await
        .unwrap();
    assert_eq!(new.len(), 2);
    assert_eq!(deliveries(&db, all.id).await.len(), 2);
}

async fn identity_and_the_reads_rule_kinds_need(db: Database) {
    seed(&db).await;
    let id = profile(&db, "h1", "checkout", "java").await;
    let identity = odp_store::profile_identity(&db, id).await.unwrap();
    assert_eq!(identity.target, Some(Target::ProcessName("java".into())));
    assert_eq!(identity.host.as_deref(), Some("h1"));
    assert_eq!(identity.service.as_deref(), Some("checkout"));
    assert!(!identity.ended);
    let unknown = odp_store::profile_identity(&db, Uuid::new_v4())
        .await
        .unwrap();
    assert_eq!(
        (unknown.target, unknown.host, unknown.service, unknown.ended),
        (None, None, None, false)
    );

    // Four runs of one schedule; the third's profile failed.
    let runs = [
        profile(&db, "h1", "checkout", "run-1").await,
        profile(&db, "h1", "checkout", "run-2").await,
        profile(&db, "h1", "checkout", "run-3").await,
        profile(&db, "h1", "checkout", "run-4").await,
    ];
    let schedule = Uuid::new_v4();
    execute(
        &db,
        &format!(
            "insert into schedules (id, name, service, host, target, duration_secs,
                                    frequency_hz, cron, created_by)
             values ({}, 'nightly', 'checkout', 'h1', '{{\"by\":\"pid\",\"value\":1}}',
                     30, 99, '0 3 * * *', 'ci')",
            uuid_sql(&db, schedule)
        ),
        &[],
    )
    .await;
    for (n, run) in runs.iter().enumerate() {
        let status = if n == 2 { "failed" } else { "finished" };
        execute(
            &db,
            &format!(
                "update profiles set status = ? where id = {}",
                uuid_sql(&db, *run)
            ),
            &[status],
        )
        .await;
        execute(
            &db,
            &format!(
                "insert into schedule_runs (schedule_id, scheduled_for, outcome, profile_id)
                 values ({}, '2026-11-0{} 03:00:00', 'started', {})",
                uuid_sql(&db, schedule),
                n + 1,
                uuid_sql(&db, *run)
            ),
            &[],
        )
        .await;
    }
    let earlier = odp_store::previous_schedule_runs(&db, runs[3], 10)
        .await
        .unwrap();
    assert_eq!(earlier, [runs[1], runs[0]]);
    let earlier = odp_store::previous_schedule_runs(&db, runs[3], 1)
        .await
        .unwrap();
    assert_eq!(earlier, [runs[1]]);
    assert!(odp_store::previous_schedule_runs(&db, runs[0], 10)
        .await
        .unwrap()
        .is_empty());
    assert!(odp_store::previous_schedule_runs(&db, id, 10)
        .await
        .unwrap()
        .is_empty());
    assert!(
        odp_store::profile_identity(&db, runs[0])
            .await
            .unwrap()
            .ended
    );

    // The rules that flagged earlier runs, except the regression kind.
    odp_store::save_detections(
        &db,
        runs[0],
        None,
        &[
            detection("jvm-stringbuffer", 300, Vec::new()),
            detection("schedule-regression", 50, Vec::new()),
        ],
    )
    .await
    .unwrap();
    odp_store::save_detections(
        &db,
        runs[1],
        None,
        &[
            detection("jvm-hashtable", 20, Vec::new()),
            detection("jvm-stringbuffer", 200, Vec::new()),
        ],
    )
    .await
    .unwrap();
    let hit = odp_store::rules_hit(&db, &[runs[0], runs[1], runs[2]], "share_regression")
        .await
        .unwrap();
    assert_eq!(
        hit,
        BTreeSet::from(["jvm-hashtable".to_string(), "jvm-stringbuffer".to_string()])
    );
    let hit = odp_store::rules_hit(&db, &[runs[0]], "stack_share")
        .await
        .unwrap();
    assert_eq!(hit, BTreeSet::from(["schedule-regression".to_string()]));
    assert!(odp_store::rules_hit(&db, &[], "stack_share")
        .await
        .unwrap()
        .is_empty());
}

on_both_backends!(
    saving_is_idempotent_and_issues_read_back_exactly,
    each_new_detection_queues_one_alert_per_matching_channel,
    identity_and_the_reads_rule_kinds_need,
);
