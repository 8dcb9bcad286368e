//! Only agents are believed, and only about their own host: each attack of
//! a producer on Kafka, against the real broker, Postgres and worker. An
//! unsigned message, one signed under a certificate the api-server never
//! issued, one naming another host than its signer's, one for another
//! host's profile or for no profile, and one of a revoked identity all go
//! to the dead-letter topic with the reason, and change nothing; what the
//! right agent signs is stored, exactly once, its bytes as they came.

mod support;

use odp_core::event::{AgentEvent, AgentEventKind, FinishReason};
use odp_core::identity::Channel;
use odp_core::Snapshot;
use odp_store::{Identities, ProfileStatus, Profiles};
use support::harness::{eventually, eventually_at_least, DeadLetter, Harness};
use support::signing::{insert_profile, record_identity, Issuer, Signing};
use uuid::Uuid;

/// The host whose agent sends, and another one.
const HOST: &str = "h-1";
const OTHER: &str = "h-2";

/// Window `sequence` of a profile on `host`: 42 samples. Its names
/// repeat, so LZ4 compresses it.
fn window(profile_id: Uuid, sequence: u64, host: &str) -> Vec<u8> {
    let mut s: Snapshot = support::snapshot(
        profile_id,
        sequence,
        &[(&["main", "work::work::work::work"], 30), (&["main"], 12)],
    );
    s.host = host.into();
    s.encode()
}

/// `agent_id` on `host` reports the profile finished.
fn finished(profile_id: Uuid, host: &str, agent_id: &str) -> Vec<u8> {
    AgentEvent {
        host: host.into(),
        agent_id: agent_id.into(),
        at_ms: 1_700_000_100_000,
        kind: AgentEventKind::ProfileFinished {
            profile_id,
            reason: FinishReason::DurationElapsed,
            snapshots: 2,
            samples: 84,
            spooled_snapshots: 0,
            spooled_samples: 0,
        },
    }
    .to_json()
}

/// The profile's status and owner.
async fn state(h: &Harness, id: Uuid) -> (ProfileStatus, Option<String>) {
    let row = Profiles::new(&h.db).get(id).await.unwrap().unwrap();
    (row.status, row.agent_id)
}

/// (windows, samples, events) stored for the profile.
async fn stored(h: &Harness, id: Uuid) -> (i64, i64, i64) {
    let (windows, samples): (i64, i64) = sqlx::query_as(
        "select count(*), coalesce(sum(samples), 0)::bigint from snapshots where profile_id = $1",
    )
    .bind(id)
    .fetch_one(&h.pool)
    .await
    .unwrap();
    let events: i64 =
        sqlx::query_scalar("select count(*) from profile_events where profile_id = $1")
            .bind(id)
            .fetch_one(&h.pool)
            .await
            .unwrap();
    (windows, samples, events)
}

/// The dead letters of one snapshot and one event (in either order, as
/// they come from two topics): (snapshot's, event's).
async fn one_of_each(h: &Harness, letters: Vec<DeadLetter>) -> (DeadLetter, DeadLetter) {
    let [a, b]: [DeadLetter; 2] = letters.try_into().unwrap();
    let (snapshot, event) = if a.source_topic == h.topics.stacks {
        (a, b)
    } else {
        (b, a)
    };
    assert_eq!(snapshot.source_topic, h.topics.stacks);
    assert_eq!(event.source_topic, h.topics.events);
    (snapshot, event)
}

/// A forged window and `profile_finished` for a dispatched profile of
/// [`HOST`], sent as `signing` says by an intruder naming the host: both
/// are dead-lettered with reasons starting `reason` and change nothing.
async fn forgery_changes_nothing(h: &Harness, signing: Signing<'_>, reason: &str) {
    let id = insert_profile(&h.db, HOST, ProfileStatus::Dispatched).await;
    let snapshot = window(id, 0, HOST);
    h.send(Channel::Stacks, &id.to_string(), signing, &snapshot)
        .await;
    let event = finished(id, HOST, "intruder");
    h.send(Channel::Events, HOST, signing, &event).await;

    let (of_snapshot, of_event) = one_of_each(h, h.dead_letters.take(2).await).await;
    for letter in [&of_snapshot, &of_event] {
        assert!(letter.reason.starts_with(reason), "{}", letter.reason);
    }
    // Kept as sent, to be inspected or replayed.
    assert_eq!(of_snapshot.payload, snapshot);
    assert_eq!(of_snapshot.key.as_deref(), Some(id.to_string().as_bytes()));
    assert_eq!(of_event.payload, event);
    assert_eq!(stored(h, id).await, (0, 0, 0));
    assert_eq!(state(h, id).await, (ProfileStatus::Dispatched, None));
    assert_eq!(h.metric("odp_pipeline_unauthenticated_messages").await, 2.0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unsigned_data_for_a_dispatched_profile_is_dead_lettered() {
    let h = Harness::start("unsigned", |_| {}).await;
    forgery_changes_nothing(
        &h,
        Signing::Unsigned,
        "unauthenticated: unsigned: the message has no odp-agent-certificate header",
    )
    .await;
    h.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn data_under_a_certificate_of_another_command_key_is_dead_lettered() {
    let h = Harness::start("self-made", |_| {}).await;
    // A well-formed certificate of HOST, issued with a key of its own.
    let self_made = Issuer::new().identity(HOST);
    forgery_changes_nothing(
        &h,
        Signing::By(&self_made),
        "unauthenticated: invalid certificate: ",
    )
    .await;
    h.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn data_naming_another_host_than_its_signers_is_dead_lettered() {
    let h = Harness::start("wrong-host", |_| {}).await;
    let agent = h.issuer.identity(HOST);
    let id = insert_profile(&h.db, OTHER, ProfileStatus::Dispatched).await;
    let key = id.to_string();
    h.send(
        Channel::Stacks,
        &key,
        Signing::By(&agent),
        &window(id, 0, OTHER),
    )
    .await;
    let event = finished(id, OTHER, "intruder");
    h.send(Channel::Events, OTHER, Signing::By(&agent), &event)
        .await;

    let (of_snapshot, of_event) = one_of_each(&h, h.dead_letters.take(2).await).await;
    let reason = "unauthenticated: signed by an agent of host \"h-1\", \
                  but the message speaks for host \"h-2\"";
    assert_eq!(of_snapshot.reason, reason);
    assert_eq!(of_event.reason, reason);
    assert!(of_snapshot.signed && of_event.signed);
    assert_eq!(stored(&h, id).await, (0, 0, 0));
    assert_eq!(state(&h, id).await, (ProfileStatus::Dispatched, None));
    h.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn data_for_a_profile_of_another_host_is_dead_lettered() {
    let h = Harness::start("other-profile", |_| {}).await;
    let agent = h.issuer.identity(HOST);
    let id = insert_profile(&h.db, OTHER, ProfileStatus::Running).await;
    // Honest about its own host, but the profile runs on the other one.
    let key = id.to_string();
    h.send(
        Channel::Stacks,
        &key,
        Signing::By(&agent),
        &window(id, 0, HOST),
    )
    .await;
    let event = finished(id, HOST, "agent");
    h.send(Channel::Events, HOST, Signing::By(&agent), &event)
        .await;

    let (of_snapshot, of_event) = one_of_each(&h, h.dead_letters.take(2).await).await;
    let reason = format!("profile {id} runs on host h-2, not h-1");
    assert_eq!(of_snapshot.reason, reason);
    assert_eq!(of_event.reason, reason);
    assert_eq!(stored(&h, id).await, (0, 0, 0));
    assert_eq!(state(&h, id).await, (ProfileStatus::Running, None));
    assert_eq!(h.metric("odp_pipeline_foreign_profile_messages").await, 2.0);
    h.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn data_for_an_unknown_profile_is_dead_lettered() {
    let h = Harness::start("unknown", |_| {}).await;
    let agent = h.issuer.identity(HOST);
    let id = Uuid::new_v4();
    let key = id.to_string();
    h.send(
        Channel::Stacks,
        &key,
        Signing::By(&agent),
        &window(id, 0, HOST),
    )
    .await;
    let event = finished(id, HOST, "agent");
    h.send(Channel::Events, HOST, Signing::By(&agent), &event)
        .await;

    let (of_snapshot, of_event) = one_of_each(&h, h.dead_letters.take(2).await).await;
    assert_eq!(of_snapshot.reason, format!("no profile {id}"));
    assert_eq!(of_event.reason, format!("no profile {id}"));
    assert_eq!(stored(&h, id).await, (0, 0, 0));
    h.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_revoked_identity_is_refused_once_the_revocations_are_reloaded() {
    let h = Harness::start("revoked", |config| config.revocation_refresh_secs = 1).await;
    let revoked = h.issuer.identity(HOST);
    record_identity(&h.db, &revoked).await;
    let id = insert_profile(&h.db, HOST, ProfileStatus::Running).await;
    let key = id.to_string();
    h.send(
        Channel::Stacks,
        &key,
        Signing::By(&revoked),
        &window(id, 0, HOST),
    )
    .await;
    eventually(
        &h.pool,
        "select count(*) from snapshots where profile_id = $1",
        id,
    )
    .await;

    let revoked_id = revoked.certificate().id;
    Identities::new(&h.db)
        .revoke(revoked_id, "admin")
        .await
        .unwrap();
    // Reloaded at the next refresh (a second here, 30 s by default).
    h.wait_for_metric("odp_pipeline_revoked_identities", 1.0)
        .await;
    h.send(
        Channel::Stacks,
        &key,
        Signing::By(&revoked),
        &window(id, 1, HOST),
    )
    .await;
    let letter = h.dead_letters.next().await;
    assert_eq!(
        letter.reason,
        format!("unauthenticated: identity {revoked_id} of host h-1 was revoked")
    );
    assert_eq!(letter.payload, window(id, 1, HOST));

    // The host's new identity is believed.
    let renewed = h.issuer.identity(HOST);
    h.send(
        Channel::Stacks,
        &key,
        Signing::By(&renewed),
        &window(id, 2, HOST),
    )
    .await;
    let windows = "select count(*) from snapshots where profile_id = $1";
    eventually_at_least(&h.pool, windows, id, 2).await;
    let (windows, samples, _) = stored(&h, id).await;
    assert_eq!((windows, samples), (2, 84));
    h.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn what_the_hosts_own_agent_signs_is_stored_exactly_once() {
    let h = Harness::start("honest", |_| {}).await;
    let agent = h.issuer.identity(HOST);
    let id = insert_profile(&h.db, HOST, ProfileStatus::Dispatched).await;
    let key = id.to_string();
    // The second as another LZ4 compressor would write it: stored as sent.
    let second = Snapshot::decode(&window(id, 1, HOST)).unwrap();
    let sent = [
        window(id, 0, HOST),
        odp_devstack::fixtures::literal_lz4(&second),
    ];
    for snapshot in &sent {
        h.send(Channel::Stacks, &key, Signing::By(&agent), snapshot)
            .await;
    }
    let event = finished(id, HOST, "agent");
    h.send(Channel::Events, HOST, Signing::By(&agent), &event)
        .await;
    eventually(
        &h.pool,
        "select count(*) from profiles where id = $1 and status = 'finished'",
        id,
    )
    .await;
    let windows = "select count(*) from snapshots where profile_id = $1";
    eventually_at_least(&h.pool, windows, id, 2).await;

    assert_eq!(stored(&h, id).await, (2, 84, 1));
    let blocks: Vec<Vec<u8>> =
        sqlx::query_scalar("select block from snapshots where profile_id = $1 order by sequence")
            .bind(id)
            .fetch_all(&h.pool)
            .await
            .unwrap();
    assert_eq!(blocks, sent, "the blocks are the bytes the agent signed");
    let blocks = odp_store::profile_stacks(&h.pool, id).await.unwrap();
    assert_eq!(blocks.samples, 84);
    assert_eq!(
        state(&h, id).await,
        (ProfileStatus::Finished, Some("agent".to_owned()))
    );
    // Nothing of it was dead-lettered: the first dead letter is a marker
    // sent after it all was stored.
    h.send(Channel::Stacks, "marker", Signing::Unsigned, b"marker")
        .await;
    let letter = h.dead_letters.next().await;
    assert_eq!(letter.payload, b"marker");
    assert!(letter.reason.starts_with("unauthenticated: unsigned"));
    assert_eq!(h.metric("odp_pipeline_snapshots_stored").await, 2.0);
    assert_eq!(h.metric("odp_pipeline_events_stored").await, 1.0);
    assert_eq!(h.metric("odp_pipeline_dead_letters").await, 1.0);
    h.stop().await;
}
