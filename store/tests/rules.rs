//! Rules and their re-analysis jobs, one behaviour suite run on a real
//! Postgres and a real MariaDB: installing the seed pack is idempotent and
//! counts what it wrote, admins' rules are created, replaced and read with
//! one re-analysis queued per change, and a job is claimed under a lease,
//! walks the profiles in order, survives its worker and ends.

use std::time::Duration;

use odp_rules::seed::seed_rules;
use odp_store::{Database, ReanalysisStatus};

mod detect_fixtures;
mod support;
use detect_fixtures::{profile, seed};
use support::on_both_backends;

async fn installing_the_seed_pack_is_idempotent_and_counts(db: Database) {
    let pack = seed_rules().unwrap();
    assert_eq!(
        odp_store::install_seed_rules(&db, &pack).await.unwrap(),
        pack.len() as u64
    );
    assert_eq!(odp_store::install_seed_rules(&db, &pack).await.unwrap(), 0);
    let stored = odp_store::list_rules(&db).await.unwrap();
    let mut ids: Vec<_> = pack.iter().map(|r| r.id.clone()).collect();
    ids.sort();
    assert_eq!(
        stored.iter().map(|r| r.rule.id.clone()).collect::<Vec<_>>(),
        ids
    );
    for row in &stored {
        assert_eq!(row.source, "seed");
        let shipped = pack.iter().find(|r| r.id == row.rule.id).unwrap();
        assert_eq!(&row.rule, shipped);
    }

    // A new pack version changes one rule and adds one; an admin owns a
    // third, which the pack never overwrites.
    let mut next = pack.clone();
    next[0].title = "Changed by the pack".into();
    next[1].threshold_pct = 7.5;
    let mut added = pack[2].clone();
    added.id = "zz-added-by-the-pack".into();
    next.push(added.clone());
    let mut owned = pack[3].clone();
    owned.service_thresholds.insert("checkout".into(), 5.0);
    odp_store::save_user_rule(&db, &owned).await.unwrap();
    next[3].explanation = "The pack's new text".into();
    let before = odp_store::get_rule(&db, &pack[0].id)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(odp_store::install_seed_rules(&db, &next).await.unwrap(), 3);
    assert_eq!(odp_store::install_seed_rules(&db, &next).await.unwrap(), 0);

    let changed = odp_store::get_rule(&db, &pack[0].id)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(changed.rule.title, "Changed by the pack");
    assert_eq!(changed.created_at, before.created_at);
    assert!(changed.updated_at > before.updated_at);
    let changed = odp_store::get_rule(&db, &pack[1].id)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(changed.rule.threshold_pct, 7.5);
    let new = odp_store::get_rule(&db, &added.id).await.unwrap().unwrap();
    assert_eq!((new.rule, new.source.as_str()), (added, "seed"));
    let kept = odp_store::get_rule(&db, &pack[3].id)
        .await
        .unwrap()
        .unwrap();
    assert_eq!((kept.rule, kept.source.as_str()), (owned, "user"));
    assert_eq!(
        odp_store::list_rules(&db).await.unwrap().len(),
        pack.len() + 1
    );
    assert!(odp_store::get_rule(&db, "no-such-rule")
        .await
        .unwrap()
        .is_none());
    assert_eq!(odp_store::install_seed_rules(&db, &[]).await.unwrap(), 0);
}

async fn admins_rules_queue_one_reanalysis_per_change(db: Database) {
    let pack = seed(&db).await;
    let mut rule = pack
        .iter()
        .find(|r| r.id == "jvm-stringbuffer")
        .unwrap()
        .clone();
    rule.id = "team-stringbuffer".into();
    rule.title = "Our StringBuffer rule".into();
    rule.spec = serde_json::json!({"frames": ["java.lang.StringBuffer.*"], "leaf_only": false});
    rule.service_thresholds.insert("checkout".into(), 2.5);

    let (row, job) = odp_store::create_user_rule(&db, &rule, "alice")
        .await
        .unwrap()
        .unwrap();
    assert_eq!((&row.rule, row.source.as_str()), (&rule, "user"));
    assert_eq!(row.created_at, row.updated_at);
    assert_eq!(
        (job.rule_id.as_str(), job.requested_by.as_str(), job.status),
        ("team-stringbuffer", "alice", ReanalysisStatus::Pending)
    );
    assert_eq!(
        (
            job.profiles_total,
            job.profiles_done,
            job.started_at,
            job.finished_at
        ),
        (None, 0, None, None)
    );
    assert_eq!(
        (job.cursor_id, job.cursor_created_at, job.error),
        (None, None, None)
    );
    // The id is taken: nothing written, nothing queued.
    let mut twin = rule.clone();
    twin.title = "Another".into();
    assert!(odp_store::create_user_rule(&db, &twin, "bob")
        .await
        .unwrap()
        .is_none());
    let read = odp_store::get_rule(&db, &rule.id).await.unwrap().unwrap();
    assert_eq!(read.rule.title, "Our StringBuffer rule");
    let latest = odp_store::latest_reanalysis(&db, &rule.id)
        .await
        .unwrap()
        .unwrap();
    assert_eq!((latest.id, latest.requested_by.as_str()), (job.id, "alice"));

    // Editing a seed rule makes it the admin's and queues its own job.
    let mut edited = pack
        .iter()
        .find(|r| r.id == "jvm-hashtable")
        .unwrap()
        .clone();
    edited.enabled = false;
    edited.threshold_pct = 9.0;
    let (row, edit_job) = odp_store::update_user_rule(&db, &edited, "bob")
        .await
        .unwrap()
        .unwrap();
    assert_eq!((&row.rule, row.source.as_str()), (&edited, "user"));
    assert_eq!(edit_job.rule_id, "jvm-hashtable");
    assert_ne!(edit_job.id, job.id);
    // Saving the same again is still a change an admin asked for.
    let (_, again) = odp_store::update_user_rule(&db, &edited, "bob")
        .await
        .unwrap()
        .unwrap();
    let latest = odp_store::latest_reanalysis(&db, "jvm-hashtable")
        .await
        .unwrap()
        .unwrap();
    assert_eq!(latest.id, again.id);
    let got = odp_store::get_reanalysis(&db, edit_job.id)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(
        (got.rule_id.as_str(), got.status),
        ("jvm-hashtable", ReanalysisStatus::Pending)
    );

    // No such rule: nothing written, nothing queued.
    let mut missing = edited.clone();
    missing.id = "no-such-rule".into();
    assert!(odp_store::update_user_rule(&db, &missing, "bob")
        .await
        .unwrap()
        .is_none());
    assert!(odp_store::get_rule(&db, "no-such-rule")
        .await
        .unwrap()
        .is_none());
    assert!(odp_store::latest_reanalysis(&db, "no-such-rule")
        .await
        .unwrap()
        .is_none());

    // save_user_rule creates or replaces without queuing anything.
    let mut saved = rule.clone();
    saved.id = "team-saved".into();
    let row = odp_store::save_user_rule(&db, &saved).await.unwrap();
    assert_eq!((&row.rule, row.source.as_str()), (&saved, "user"));
    saved.fix = "Use StringBuilder".into();
    let row = odp_store::save_user_rule(&db, &saved).await.unwrap();
    assert_eq!(row.rule.fix, "Use StringBuilder");
    assert!(row.updated_at >= row.created_at);
    assert!(odp_store::latest_reanalysis(&db, "team-saved")
        .await
        .unwrap()
        .is_none());
    assert!(odp_store::get_reanalysis(&db, uuid::Uuid::new_v4())
        .await
        .unwrap()
        .is_none());
}

async fn a_reanalysis_is_leased_walks_the_profiles_and_ends(db: Database) {
    let pack = seed(&db).await;
    let mut profiles = Vec::new();
    for n in 0..3 {
        profiles.push(profile(&db, "h1", "checkout", &format!("p{n}")).await);
    }
    tokio::time::sleep(Duration::from_millis(5)).await;
    let (_, job) = odp_store::update_user_rule(&db, &pack[0], "alice")
        .await
        .unwrap()
        .unwrap();
    // Profiles stored after the change are evaluated as they come.
    tokio::time::sleep(Duration::from_millis(5)).await;
    profile(&db, "h1", "checkout", "later").await;

    let mut claimed = odp_store::claim_reanalysis(&db, 60).await.unwrap().unwrap();
    assert_eq!(
        (claimed.id, claimed.status),
        (job.id, ReanalysisStatus::Running)
    );
    assert_eq!(
        (claimed.profiles_total, claimed.profiles_done),
        (Some(3), 0)
    );
    let started = claimed.started_at.unwrap();
    // Leased: nobody else takes it.
    assert!(odp_store::claim_reanalysis(&db, 60)
        .await
        .unwrap()
        .is_none());

    let batch = odp_store::reanalysis_batch(&db, &claimed, 2).await.unwrap();
    let ids: Vec<_> = batch.iter().map(|(id, _)| *id).collect();
    assert_eq!(ids, profiles[..2]);
    let stale = claimed.clone();
    assert!(
        odp_store::record_reanalysis_progress(&db, &mut claimed, batch[1], 2, 60)
            .await
            .unwrap()
    );
    assert_eq!(
        (
            claimed.cursor_id,
            claimed.cursor_created_at,
            claimed.profiles_done
        ),
        (Some(batch[1].0), Some(batch[1].1), 2)
    );
    // A worker whose cursor is behind lost the job.
    let mut behind = stale.clone();
    assert!(
        !odp_store::record_reanalysis_progress(&db, &mut behind, batch[0], 1, 60)
            .await
            .unwrap()
    );
    assert_eq!(behind.profiles_done, 0);
    let rest = odp_store::reanalysis_batch(&db, &claimed, 2).await.unwrap();
    assert_eq!(
        rest.iter().map(|(id, _)| *id).collect::<Vec<_>>(),
        profiles[2..]
    );

    // Released by a stopping worker: the next claim resumes at the cursor.
    odp_store::release_reanalysis(&db, &stale).await.unwrap();
    assert!(odp_store::claim_reanalysis(&db, 60)
        .await
        .unwrap()
        .is_none());
    odp_store::release_reanalysis(&db, &claimed).await.unwrap();
    let resumed = odp_store::claim_reanalysis(&db, 60).await.unwrap().unwrap();
    assert_eq!(resumed.id, job.id);
    assert_eq!(
        (
            resumed.profiles_total,
            resumed.profiles_done,
            resumed.cursor_id
        ),
        (Some(3), 2, Some(batch[1].0))
    );
    assert_eq!(resumed.started_at, Some(started));

    // A lease that runs out lets another worker take the job.
    odp_store::release_reanalysis(&db, &resumed).await.unwrap();
    let short = odp_store::claim_reanalysis(&db, 0).await.unwrap().unwrap();
    tokio::time::sleep(Duration::from_millis(5)).await;
    let taken = odp_store::claim_reanalysis(&db, 60).await.unwrap().unwrap();
    assert_eq!((short.id, taken.id), (job.id, job.id));

    odp_store::finish_reanalysis(&db, job.id, None)
        .await
        .unwrap();
    let done = odp_store::get_reanalysis(&db, job.id)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(
        (done.status, done.error),
        (ReanalysisStatus::Finished, None)
    );
    assert!(done.finished_at.is_some());
    assert!(odp_store::claim_reanalysis(&db, 60)
        .await
        .unwrap()
        .is_none());

    let (_, broken) = odp_store::update_user_rule(&db, &pack[1], "alice")
        .await
        .unwrap()
        .unwrap();
    let claimed = odp_store::claim_reanalysis(&db, 60).await.unwrap().unwrap();
    assert_eq!((claimed.id, claimed.profiles_total), (broken.id, Some(4)));
    odp_store::finish_reanalysis(&db, broken.id, Some("rule kind unknown"))
        .await
        .unwrap();
    let failed = odp_store::get_reanalysis(&db, broken.id)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(
        (failed.status, failed.error.as_deref()),
        (ReanalysisStatus::Failed, Some("rule kind unknown"))
    );
    assert!(odp_store::claim_reanalysis(&db, 60)
        .await
        .unwrap()
        .is_none());
}

on_both_backends!(
    installing_the_seed_pack_is_idempotent_and_counts,
    admins_rules_queue_one_reanalysis_per_change,
    a_reanalysis_is_leased_walks_the_profiles_and_ends,
);
