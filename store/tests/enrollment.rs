//! Enrollment tokens, one behaviour suite run on a real Postgres and a
//! real MariaDB: created, listed with the identities they enrolled,
//! revoked once; each use taken once however many agents race for it,
//! and every refusal recording nothing.

use chrono::{Duration, SubsecRound, Utc};
use odp_store::{
    Database, Enrollment, EnrollmentTokenRow, EnrollmentTokens, Identities, NewEnrollmentToken,
    NewIdentity, Refusal,
};
use uuid::Uuid;

mod support;
use support::on_both_backends;

/// A token to create, with the hash of its text.
struct Token {
    secret_hash: String,
    token: NewEnrollmentToken,
}

fn token(host: &str, uses: i32, expires_in: Duration) -> Token {
    let now = Utc::now().trunc_subsecs(0);
    Token {
        secret_hash: format!("{:064x}", Uuid::new_v4().as_u128()),
        token: NewEnrollmentToken {
            id: Uuid::new_v4(),
            host: host.into(),
            uses,
            created_at: now,
            created_by: "alice".into(),
            expires_at: now + expires_in,
        },
    }
}

async fn create(tokens: &EnrollmentTokens, new: &Token) -> EnrollmentTokenRow {
    tokens.create(&new.secret_hash, &new.token).await.unwrap()
}

/// An identity for `host` as the api-server has it signed, before the
/// token decides whether it is recorded.
fn identity(host: &str) -> NewIdentity {
    let now = Utc::now().trunc_subsecs(0);
    NewIdentity {
        id: Uuid::new_v4(),
        host: host.into(),
        public_key: "BxQhLjtIVWJvfImWo7C9ytfk8f4LGCUyP0xZZnOAjZo".into(),
        issued_at: now,
        expires_at: now + Duration::days(365),
        issued_by: "not kept: the token's creator is".into(),
    }
}

async fn tokens_are_listed_with_what_they_enrolled_and_revoked_once(db: Database) {
    let tokens = EnrollmentTokens::new(db.clone());
    let new = token("web-1", 2, Duration::hours(1));
    let created = create(&tokens, &new).await;
    assert_eq!((created.used, created.token.uses), (0, 2));
    assert_eq!(tokens.get(new.token.id).await.unwrap().unwrap(), created);
    let other = create(&tokens, &token("db-1", 1, Duration::hours(1))).await;

    let first = identity("web-1");
    let Enrollment::Enrolled(row) = tokens.enroll(&new.secret_hash, &first).await.unwrap() else {
        panic!("the token is live")
    };
    assert_eq!(row.enrollment_token, Some(new.token.id));
    assert_eq!(row.issued.issued_by, "alice");
    // The identity as kept says which token enrolled it.
    let kept = Identities::new(db.clone())
        .get(first.id)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(kept, row);

    let listed = tokens.list(None, 10).await.unwrap();
    assert_eq!(listed.len(), 2);
    let (web, enrolled) = listed
        .iter()
        .find(|(t, _)| t.token.id == new.token.id)
        .unwrap();
    assert_eq!((web.used, enrolled.as_slice()), (1, [first.id].as_slice()));
    assert_eq!(tokens.enrolled(new.token.id).await.unwrap(), [first.id]);
    let of_db = tokens.list(Some("db-1"), 10).await.unwrap();
    assert_eq!(of_db.len(), 1);
    assert_eq!((of_db[0].0.token.id, of_db[0].1.len()), (other.token.id, 0));
    assert_eq!(tokens.list(None, 1).await.unwrap().len(), 1);

    let revoked = tokens.revoke(new.token.id, "bob").await.unwrap().unwrap();
    assert_eq!(revoked.revocation.revoked_by.as_deref(), Some("bob"));
    let again = tokens.revoke(new.token.id, "carol").await.unwrap().unwrap();
    assert_eq!(
        (
            again.revocation.revoked_at,
            again.revocation.revoked_by.as_deref()
        ),
        (revoked.revocation.revoked_at, Some("bob"))
    );
    assert_eq!(tokens.revoke(Uuid::new_v4(), "bob").await.unwrap(), None);
    // A revoked token enrolls no more; what it enrolled stays valid.
    let refused = tokens
        .enroll(&new.secret_hash, &identity("web-1"))
        .await
        .unwrap();
    assert_eq!(refused, Enrollment::Refused(Refusal::Revoked));
    let identities = Identities::new(db);
    assert!(identities.revoked().await.unwrap().is_empty());
}

async fn refusals_say_why_and_record_nothing(db: Database) {
    let tokens = EnrollmentTokens::new(db.clone());
    let live = token("web-1", 1, Duration::hours(1));
    create(&tokens, &live).await;
    let expired = token("web-1", 1, Duration::seconds(-1));
    create(&tokens, &expired).await;
    let refused = |hash: String, host: &'static str| {
        let tokens = tokens.clone();
        async move {
            match tokens.enroll(&hash, &identity(host)).await.unwrap() {
                Enrollment::Refused(why) => why,
                other => panic!("{other:?}"),
            }
        }
    };
    assert_eq!(refused("0".repeat(64), "web-1").await, Refusal::Unknown);
    assert_eq!(
        refused(live.secret_hash.clone(), "web-2").await,
        Refusal::OtherHost
    );
    assert_eq!(
        refused(expired.secret_hash.clone(), "web-1").await,
        Refusal::Expired
    );
    // The refusals took no use: the host's own agent still enrolls, once.
    let enrolled = tokens
        .enroll(&live.secret_hash, &identity("web-1"))
        .await
        .unwrap();
    assert!(matches!(enrolled, Enrollment::Enrolled(_)), "{enrolled:?}");
    assert_eq!(
        refused(live.secret_hash.clone(), "web-1").await,
        Refusal::UsedUp
    );
    let recorded = Identities::new(db).list(None, 10).await.unwrap();
    assert_eq!(recorded.len(), 1, "{recorded:?}");
}

async fn racing_enrollments_take_each_use_once(db: Database) {
    let tokens = EnrollmentTokens::new(db.clone());
    // Single-use tokens, each raced for by two agents at once.
    for _ in 0..10 {
        let single = token("web-1", 1, Duration::hours(1));
        create(&tokens, &single).await;
        let (first, second) = (identity("web-1"), identity("web-1"));
        let (a, b) = tokio::join!(
            tokens.enroll(&single.secret_hash, &first),
            tokens.enroll(&single.secret_hash, &second),
        );
        let outcomes = [a.unwrap(), b.unwrap()];
        let won = outcomes
            .iter()
            .filter(|o| matches!(o, Enrollment::Enrolled(_)))
            .count();
        assert_eq!(won, 1, "{outcomes:?}");
        assert!(
            outcomes.contains(&Enrollment::Refused(Refusal::UsedUp)),
            "{outcomes:?}"
        );
    }
    // Eight agents for three uses.
    let three = token("web-2", 3, Duration::hours(1));
    create(&tokens, &three).await;
    let racers = (0..8).map(|_| {
        let tokens = tokens.clone();
        let hash = three.secret_hash.clone();
        tokio::spawn(async move { tokens.enroll(&hash, &identity("web-2")).await.unwrap() })
    });
    let mut won = 0;
    for racer in racers.collect::<Vec<_>>() {
        if let Enrollment::Enrolled(_) = racer.await.unwrap() {
            won += 1;
        }
    }
    assert_eq!(won, 3);
    let (row, enrolled) = tokens.list(Some("web-2"), 1).await.unwrap().remove(0);
    assert_eq!((row.used, enrolled.len()), (3, 3));
    let identities = Identities::new(db);
    assert_eq!(identities.list(Some("web-1"), 100).await.unwrap().len(), 10);
    assert_eq!(identities.list(Some("web-2"), 100).await.unwrap().len(), 3);
}

on_both_backends!(
    tokens_are_listed_with_what_they_enrolled_and_revoked_once,
    refusals_say_why_and_record_nothing,
    racing_enrollments_take_each_use_once
);
