//! Alert channels and the outbox, one behaviour suite run on a real
//! Postgres and a real MariaDB: a due delivery is claimed by exactly one of
//! concurrent senders and leased, attempts are logged once each and move
//! the delivery on (backoff, delivered, failed), channels are created,
//! changed and deleted with conflicts reported as the store's errors, and
//! a channel's deliveries are listed by status, in pages.

use std::collections::BTreeSet;
use std::time::Duration;

use chrono::Utc;
use odp_core::domain::{ChannelKind, DeliveryStatus};
use odp_rules::StackHit;
use odp_store::{
    AlertSubject, AttemptOutcome, ChannelPatch, Database, DeliveryFilter, DeliveryRow, NewChannel,
    StoreError,
};
use uuid::Uuid;

mod detect_fixtures;
mod support;
use detect_fixtures::{detection, profile, seed, store_stack, webhook};
use support::on_both_backends;

const RULES: [&str; 5] = [
    "jvm-stringbuffer",
    "jvm-hashtable",
    "jvm-regex-pattern",
    "jvm-uuid-random",
    "jvm-log4j1-category",
];

/// A profile of `checkout` flagged by the first `rules` rules, each
/// queuing one delivery to a new channel; returns the profile and the
/// channel's id.
async fn flagged(db: &Database, rules: usize) -> (Uuid, Uuid) {
    seed(db).await;
    let channel = odp_store::create_channel(db, &webhook("ops", "check*", true))
        .await
        .unwrap();
    let id = profile(db, "h1", "checkout", "java").await;
    let stack = store_stack(db, &[("main", "app"), ("work", "app")]).await;
    let found: Vec<_> = RULES[..rules]
        .iter()
        .enumerate()
        .map(|(n, rule)| detection(rule, 100 + n as u64, vec![StackHit::new(stack, 50)]))
        .collect();
    let subject = AlertSubject {
        service: "checkout",
        host: "h1",
        except_rules: &[],
    };
    odp_store::save_detections(db, id, Some(subject), &found)
        .await
        .unwrap();
    (id, channel.id)
}

async fn listed(
    db: &Database,
    channel_id: Uuid,
    status: Option<DeliveryStatus>,
) -> Vec<DeliveryRow> {
    let filter = DeliveryFilter {
        channel_id,
        status,
        before: None,
        limit: 100,
    };
    odp_store::channel_deliveries(db, &filter)
        .await
        .unwrap()
        .unwrap()
}

fn failed(code: u16, retry_in: Option<Duration>) -> AttemptOutcome {
    AttemptOutcome {
        status_code: Some(code),
        error: Some(format!("HTTP {code}")),
        success: false,
        retry_in,
    }
}

async fn a_due_delivery_is_claimed_by_exactly_one_sender(db: Database) {
    let (profile_id, channel_id) = flagged(&db, 5).await;
    let lease = Duration::from_secs(60);
    let (a, b) = tokio::join!(
        odp_store::claim_due_deliveries(&db, 10, lease),
        odp_store::claim_due_deliveries(&db, 10, lease),
    );
    let (a, b) = (a.unwrap(), b.unwrap());
    let ids_a: BTreeSet<Uuid> = a.iter().map(|d| d.id).collect();
    let ids_b: BTreeSet<Uuid> = b.iter().map(|d| d.id).collect();
    assert!(ids_a.is_disjoint(&ids_b), "{ids_a:?} {ids_b:?}");
    assert_eq!(ids_a.len() + ids_b.len(), 5);
    // Leased: nobody claims them again until the lease runs out.
    assert!(odp_store::claim_due_deliveries(&db, 10, lease)
        .await
        .unwrap()
        .is_empty());

    let claimed: Vec<_> = a.into_iter().chain(b).collect();
    let rules: BTreeSet<&str> = claimed.iter().map(|d| d.rule_id.as_str()).collect();
    assert_eq!(rules, RULES.into_iter().collect());
    let one = claimed
        .iter()
        .find(|d| d.rule_id == "jvm-stringbuffer")
        .unwrap();
    assert_eq!(one.attempt, 1);
    assert_eq!((one.channel_id, one.kind.as_str()), (channel_id, "webhook"));
    assert_eq!(
        (one.url.as_str(), one.secret.as_str()),
        ("http://127.0.0.1:9/ops", "ops-secret")
    );
    assert_eq!(
        (one.email_from.clone(), one.email_to.clone()),
        (None, vec![])
    );
    assert_eq!(one.profile_id, profile_id);
    assert_eq!(
        (one.service.as_str(), one.host.as_str()),
        ("checkout", "h1")
    );
    assert_eq!(one.rule.title, "java.lang.StringBuffer");
    assert_eq!((one.share, one.threshold_pct), (10.0, 1.0));
    assert_eq!(one.stacks.len(), 1);
    assert_eq!(one.stacks[0].count, 50);
    assert_eq!(one.stacks[0].frames, ["main", "work"]);
}

/// A delivery another sender holds (its row locked in an open transaction)
/// is skipped, not waited for.
async fn a_held_delivery_is_skipped_not_waited_for(db: Database) {
    let (_, channel_id) = flagged(&db, 3).await;
    let held = listed(&db, channel_id, None).await[0].id;
    let claim = || odp_store::claim_due_deliveries(&db, 10, Duration::from_secs(60));
    let within = Duration::from_secs(10);
    let claimed = match &db {
        Database::Postgres(pool) => {
            let mut tx = pool.begin().await.unwrap();
            sqlx::query("select id from alert_deliveries where id = $1 for update")
                .bind(held)
                .fetch_one(&mut *tx)
                .await
                .unwrap();
            let claimed = tokio::time::timeout(within, claim()).await;
            tx.rollback().await.unwrap();
            claimed
        }
        Database::MySql(pool) => {
            let mut tx = pool.begin().await.unwrap();
            sqlx::query("select id from alert_deliveries where id = ? for update")
                .bind(held)
                .fetch_one(&mut *tx)
                .await
                .unwrap();
            let claimed = tokio::time::timeout(within, claim()).await;
            tx.rollback().await.unwrap();
            claimed
        }
    };
    let claimed: BTreeSet<Uuid> = claimed
        .expect("the claim waited for the held row")
        .unwrap()
        .into_iter()
        .map(|d| d.id)
        .collect();
    assert_eq!(claimed.len(), 2);
    assert!(!claimed.contains(&held));
    // Once let go, it is claimed.
    let rest = claim().await.unwrap();
    assert_eq!(rest.iter().map(|d| d.id).collect::<Vec<_>>(), [held]);
}

async fn attempts_are_logged_and_move_the_delivery_on(db: Database) {
    let (_, channel_id) = flagged(&db, 2).await;
    // A zero lease leaves the claimed deliveries due at once.
    let first = odp_store::claim_due_deliveries(&db, 1, Duration::ZERO)
        .await
        .unwrap();
    assert_eq!(first.len(), 1);
    let both = odp_store::claim_due_deliveries(&db, 10, Duration::ZERO)
        .await
        .unwrap();
    assert_eq!(both.len(), 2);
    let (retried, given_up) = (
        &first[0],
        both.iter().find(|d| d.id != first[0].id).unwrap(),
    );

    // A failure with backoff: pending, due again an hour on.
    let before = Utc::now();
    odp_store::record_attempt(
        &db,
        retried.id,
        1,
        &failed(500, Some(Duration::from_secs(3600))),
    )
    .await
    .unwrap();
    let after = Utc::now();
    // Logged once: a repeated report of one attempt changes nothing.
    odp_store::record_attempt(
        &db,
        retried.id,
        1,
        &failed(502, Some(Duration::from_secs(3600))),
    )
    .await
    .unwrap();
    let row = listed(&db, channel_id, None)
        .await
        .into_iter()
        .find(|d| d.id == retried.id)
        .unwrap();
    assert_eq!((row.status, row.attempts), (DeliveryStatus::Pending, 1));
    let next = row.next_attempt_at.unwrap();
    assert!(
        next >= before + chrono::Duration::seconds(3600) - chrono::Duration::milliseconds(1)
            && next <= after + chrono::Duration::seconds(3601),
        "{before} {next} {after}"
    );
    assert_eq!(row.finished_at, None);
    assert_eq!(row.attempt_log.len(), 1);
    let logged = &row.attempt_log[0];
    assert_eq!(
        (
            logged.attempt,
            logged.status_code,
            logged.error.as_deref(),
            logged.success
        ),
        (1, Some(500), Some("HTTP 500"), false)
    );

    // The other fails for good.
    odp_store::record_attempt(&db, given_up.id, 1, &failed(400, None))
        .await
        .unwrap();
    // Only the retried one's backoff keeps it: nothing is due now.
    assert!(odp_store::claim_due_deliveries(&db, 10, Duration::ZERO)
        .await
        .unwrap()
        .is_empty());

    let failed_rows = listed(&db, channel_id, Some(DeliveryStatus::Failed)).await;
    assert_eq!(failed_rows.len(), 1);
    assert_eq!(failed_rows[0].id, given_up.id);
    assert_eq!(
        (failed_rows[0].attempts, failed_rows[0].next_attempt_at),
        (1, None)
    );
    assert!(failed_rows[0].finished_at.is_some());
    // A finished delivery takes no more attempts.
    odp_store::record_attempt(&db, given_up.id, 2, &failed(500, Some(Duration::ZERO)))
        .await
        .unwrap();
    let still = listed(&db, channel_id, Some(DeliveryStatus::Failed)).await;
    assert_eq!(
        (still[0].status, still[0].attempts),
        (DeliveryStatus::Failed, 1)
    );

    // A retry due at once is claimed as attempt 2, then delivered.
    odp_store::record_attempt(&db, retried.id, 2, &failed(503, Some(Duration::ZERO)))
        .await
        .unwrap();
    let again = odp_store::claim_due_deliveries(&db, 10, Duration::from_secs(60))
        .await
        .unwrap();
    assert_eq!(again.len(), 1);
    assert_eq!((again[0].id, again[0].attempt), (retried.id, 3));
    let ok = AttemptOutcome {
        status_code: Some(204),
        error: None,
        success: true,
        retry_in: None,
    };
    odp_store::record_attempt(&db, retried.id, 3, &ok)
        .await
        .unwrap();
    let delivered = listed(&db, channel_id, Some(DeliveryStatus::Delivered)).await;
    assert_eq!(delivered.len(), 1);
    let row = &delivered[0];
    assert_eq!(
        (row.id, row.attempts, row.next_attempt_at),
        (retried.id, 3, None)
    );
    assert!(row.finished_at.is_some());
    let log: Vec<_> = row
        .attempt_log
        .iter()
        .map(|a| (a.attempt, a.status_code, a.success))
        .collect();
    assert_eq!(
        log,
        [
            (1, Some(500), false),
            (2, Some(503), false),
            (3, Some(204), true)
        ]
    );
    assert!(listed(&db, channel_id, Some(DeliveryStatus::Pending))
        .await
        .is_empty());
}

async fn channels_are_created_changed_and_deleted(db: Database) {
    let hook = odp_store::create_channel(&db, &webhook("ops", "*", true))
        .await
        .unwrap();
    assert_eq!(
        (
            hook.name.as_str(),
            hook.kind.as_str(),
            hook.url.as_str(),
            hook.secret.as_str()
        ),
        ("ops", "webhook", "http://127.0.0.1:9/ops", "ops-secret")
    );
    assert_eq!((hook.service_pattern.as_str(), hook.enabled), ("*", true));
    let taken = odp_store::create_channel(&db, &webhook("ops", "checkout", false)).await;
    assert!(matches!(taken, Err(StoreError::Conflict(_))), "{taken:?}");

    let mail = NewChannel {
        name: "mail".into(),
        kind: ChannelKind::Email,
        url: "smtp://relay:2525".into(),
        secret: None,
        email_from: Some("odp@example.com".into()),
        email_to: vec!["a@example.com".into(), "b@example.com".into()],
        service_pattern: "pay*".into(),
        enabled: true,
    };
    let mail = odp_store::create_channel(&db, &mail).await.unwrap();
    assert_eq!(mail.secret, "");
    assert_eq!(mail.email_from.as_deref(), Some("odp@example.com"));
    assert_eq!(mail.email_to, ["a@example.com", "b@example.com"]);
    assert_eq!(
        (mail.kind, mail.url.as_str()),
        (ChannelKind::Email, "smtp://relay:2525")
    );

    let names: Vec<_> = odp_store::list_channels(&db)
        .await
        .unwrap()
        .into_iter()
        .map(|c| c.name)
        .collect();
    assert_eq!(names, ["mail", "ops"]);
    let read = odp_store::get_channel(&db, mail.id).await.unwrap().unwrap();
    assert_eq!(
        (read.id, read.email_to.clone()),
        (mail.id, mail.email_to.clone())
    );
    assert_eq!(read.created_at, mail.created_at);

    let patch = ChannelPatch {
        enabled: Some(false),
        email_to: Some(vec!["c@example.com".into()]),
        ..ChannelPatch::default()
    };
    let changed = odp_store::update_channel(&db, mail.id, &patch)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(
        (changed.enabled, changed.email_to.clone()),
        (false, vec!["c@example.com".to_string()])
    );
    assert_eq!(
        (
            changed.url.as_str(),
            changed.service_pattern.as_str(),
            changed.email_from.as_deref()
        ),
        ("smtp://relay:2525", "pay*", Some("odp@example.com"))
    );
    let patch = ChannelPatch {
        url: Some("http://127.0.0.1:9/new".into()),
        secret: Some("rotated".into()),
        service_pattern: Some("checkout".into()),
        ..ChannelPatch::default()
    };
    let changed = odp_store::update_channel(&db, hook.id, &patch)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(
        (
            changed.url.as_str(),
            changed.secret.as_str(),
            changed.service_pattern.as_str(),
            changed.enabled
        ),
        ("http://127.0.0.1:9/new", "rotated", "checkout", true)
    );
    assert!(odp_store::update_channel(&db, Uuid::new_v4(), &patch)
        .await
        .unwrap()
        .is_none());

    assert!(odp_store::delete_channel(&db, mail.id).await.unwrap());
    assert!(!odp_store::delete_channel(&db, mail.id).await.unwrap());
    assert!(odp_store::get_channel(&db, mail.id)
        .await
        .unwrap()
        .is_none());
    // The name is free again.
    odp_store::create_channel(&db, &webhook("mail", "*", true))
        .await
        .unwrap();
}

async fn deleting_a_channel_drops_its_deliveries(db: Database) {
    let (_, channel_id) = flagged(&db, 2).await;
    assert_eq!(listed(&db, channel_id, None).await.len(), 2);
    assert!(odp_store::delete_channel(&db, channel_id).await.unwrap());
    assert!(listed(&db, channel_id, None).await.is_empty());
    assert!(
        odp_store::claim_due_deliveries(&db, 10, Duration::from_secs(60))
            .await
            .unwrap()
            .is_empty()
    );
}

async fn deliveries_are_listed_by_status_in_pages(db: Database) {
    let (profile_id, channel_id) = flagged(&db, 5).await;
    let all = listed(&db, channel_id, None).await;
    assert_eq!(all.len(), 5);
    assert!(all.iter().all(|d| d.profile_id == profile_id
        && d.status == DeliveryStatus::Pending
        && d.attempts == 0
        && d.next_attempt_at.is_some()
        && d.attempt_log.is_empty()));
    let hashtable = all.iter().find(|d| d.rule_id == "jvm-hashtable").unwrap();
    assert_eq!(hashtable.rule_title, "java.util.Hashtable");
    assert_eq!(
        (
            hashtable.share,
            hashtable.service.as_str(),
            hashtable.host.as_str()
        ),
        (10.1, "checkout", "h1")
    );

    // Pages of two, cut on (created_at, id), cover every delivery once.
    let mut seen = Vec::new();
    let mut before = None;
    loop {
        let filter = DeliveryFilter {
            channel_id,
            status: None,
            before,
            limit: 2,
        };
        let page = odp_store::channel_deliveries(&db, &filter)
            .await
            .unwrap()
            .unwrap();
        assert!(page.len() <= 2);
        let Some(last) = page.last() else { break };
        before = Some(last.id);
        seen.extend(page.iter().map(|d| d.id));
    }
    assert_eq!(seen, all.iter().map(|d| d.id).collect::<Vec<_>>());
    let ordered = all
        .windows(2)
        .all(|w| (w[0].created_at, w[0].id) > (w[1].created_at, w[1].id));
    assert!(ordered);

    // `before` must be one of the channel's deliveries.
    let unknown = DeliveryFilter {
        channel_id,
        status: None,
        before: Some(Uuid::new_v4()),
        limit: 2,
    };
    assert!(odp_store::channel_deliveries(&db, &unknown)
        .await
        .unwrap()
        .is_none());
    let elsewhere = DeliveryFilter {
        channel_id: Uuid::new_v4(),
        status: None,
        before: Some(all[0].id),
        limit: 2,
    };
    assert!(odp_store::channel_deliveries(&db, &elsewhere)
        .await
        .unwrap()
        .is_none());

    // By status.
    let claimed = odp_store::claim_due_deliveries(&db, 2, Duration::from_secs(60))
        .await
        .unwrap();
    let ok = AttemptOutcome {
        status_code: Some(200),
        error: None,
        success: true,
        retry_in: None,
    };
    odp_store::record_attempt(&db, claimed[0].id, 1, &ok)
        .await
        .unwrap();
    odp_store::record_attempt(&db, claimed[1].id, 1, &failed(410, None))
        .await
        .unwrap();
    let ids = |rows: Vec<DeliveryRow>| rows.into_iter().map(|d| d.id).collect::<Vec<_>>();
    assert_eq!(
        ids(listed(&db, channel_id, Some(DeliveryStatus::Delivered)).await),
        [claimed[0].id]
    );
    assert_eq!(
        ids(listed(&db, channel_id, Some(DeliveryStatus::Failed)).await),
        [claimed[1].id]
    );
    assert_eq!(
        listed(&db, channel_id, Some(DeliveryStatus::Pending))
            .await
            .len(),
        3
    );
}

on_both_backends!(
    a_due_delivery_is_claimed_by_exactly_one_sender,
    a_held_delivery_is_skipped_not_waited_for,
    attempts_are_logged_and_move_the_delivery_on,
    channels_are_created_changed_and_deleted,
    deleting_a_channel_drops_its_deliveries,
    deliveries_are_listed_by_status_in_pages,
);
