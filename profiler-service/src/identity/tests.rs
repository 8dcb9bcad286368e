use super::*;
use odp_core::command::{generate_keypair, CommandSigner};
use odp_core::identity::issue_certificate;

const NOW: i64 = 1_800_000_000;

struct Api {
    signer: CommandSigner,
    verifier: Verifier,
}

fn api() -> Api {
    let (private, public) = generate_keypair().unwrap();
    Api {
        signer: CommandSigner::from_private_pem(&private).unwrap(),
        verifier: Verifier::from_public_pem(&public).unwrap(),
    }
}

/// A key and a certificate for it as an agent of `host`, valid from
/// `from` to `to`.
fn issued(api: &Api, host: &str, from: i64, to: i64) -> (AgentKey, String) {
    let key = AgentKey::generate().unwrap();
    let (_, token) = issue_certificate(&api.signer, host, &key.public_key(), from, to).unwrap();
    (key, token)
}

fn place(dir: &Path) -> IdentityPlace {
    IdentityPlace {
        dir: dir.to_owned(),
        key: None,
        certificate: None,
    }
}

fn load_error(api: &Api, place: &IdentityPlace, host: &str) -> String {
    place
        .load(
            &api.verifier,
            Path::new("/etc/odp/command.pub.pem"),
            host,
            NOW,
        )
        .unwrap_err()
        .to_string()
}

/// Every refusal names the problem and says how to get an identity.
fn assert_explained(message: &str, host: &str, dir: &Path, problem: &str) {
    assert!(
        message.starts_with(&format!(
            "invalid configuration: no usable identity for this agent of host {host}: "
        )),
        "{message}"
    );
    assert!(message.contains(problem), "{problem:?} not in: {message}");
    assert!(
        message.contains(&format!(
            "enroll it with `odpctl agents enroll {host} --out {}` (admin), \
             start it with a token from `odpctl agents token create {host}` \
             (--enrollment-token, with --api-url), or let the api-server deploy it",
            dir.display()
        )),
        "{message}"
    );
}

#[test]
fn an_identity_saved_in_the_directory_loads() {
    let api = api();
    let dir = tempfile::tempdir().unwrap();
    let (key, token) = issued(&api, "web-1", NOW - 60, NOW + 3600);
    let public = key.public_key();
    AgentIdentity::save(&key, &token, dir.path()).unwrap();
    let identity = place(dir.path())
        .load(&api.verifier, Path::new("k.pem"), "web-1", NOW)
        .unwrap();
    assert_eq!(identity.certificate().host, "web-1");
    assert_eq!(identity.certificate().public_key, public);
    check(&identity, &api.verifier, "web-1", NOW).unwrap();
    assert!(check(&identity, &api.verifier, "web-2", NOW).is_err());
    assert!(check(&identity, &api.verifier, "web-1", NOW + 7200).is_err());
}

#[test]
fn a_missing_identity_is_explained() {
    let api = api();
    let dir = tempfile::tempdir().unwrap();
    let absent = dir.path().join("identity");
    let message = load_error(&api, &place(&absent), "web-1");
    let problem = format!("the identity directory {} does not exist", absent.display());
    assert_explained(&message, "web-1", &absent, &problem);

    std::fs::create_dir(&absent).unwrap();
    let message = load_error(&api, &place(&absent), "web-1");
    assert_explained(&message, "web-1", &absent, "holds no identity");

    let (key, token) = issued(&api, "web-1", NOW - 60, NOW + 3600);
    AgentIdentity::save(&key, &token, &absent).unwrap();
    std::fs::remove_file(absent.join(CERTIFICATE_FILE)).unwrap();
    let message = load_error(&api, &place(&absent), "web-1");
    let problem = format!("{} is missing", absent.join(CERTIFICATE_FILE).display());
    assert_explained(&message, "web-1", &absent, &problem);
}

#[test]
fn an_identity_of_another_host_is_refused() {
    let api = api();
    let dir = tempfile::tempdir().unwrap();
    let (key, token) = issued(&api, "web-2", NOW - 60, NOW + 3600);
    AgentIdentity::save(&key, &token, dir.path()).unwrap();
    let message = load_error(&api, &place(dir.path()), "web-1");
    assert_explained(
        &message,
        "web-1",
        dir.path(),
        "is for host \"web-2\", not \"web-1\"",
    );
}

#[test]
fn expired_foreign_and_mismatched_certificates_are_refused() {
    let api = api();
    let dir = tempfile::tempdir().unwrap();

    let (key, token) = issued(&api, "web-1", NOW - 10 * 86_400, NOW - 3 * 86_400);
    AgentIdentity::save(&key, &token, dir.path()).unwrap();
    let message = load_error(&api, &place(dir.path()), "web-1");
    assert_explained(&message, "web-1", dir.path(), "expired 3 days ago");

    let (key, token) = issued(&api, "web-1", NOW + 3600, NOW + 7200);
    AgentIdentity::save(&key, &token, dir.path()).unwrap();
    let message = load_error(&api, &place(dir.path()), "web-1");
    assert_explained(&message, "web-1", dir.path(), "check this machine's clock");

    // Self-issued: signed with another command key than the api-server's.
    let rogue = self::api();
    let (key, token) = issued(&rogue, "web-1", NOW - 60, NOW + 3600);
    AgentIdentity::save(&key, &token, dir.path()).unwrap();
    let message = load_error(&api, &place(dir.path()), "web-1");
    assert_explained(
        &message,
        "web-1",
        dir.path(),
        "was not issued with this api-server's key (/etc/odp/command.pub.pem)",
    );

    // A genuine certificate next to another key than the one it names.
    let (_, token) = issued(&api, "web-1", NOW - 60, NOW + 3600);
    let other = AgentKey::generate().unwrap();
    AgentIdentity::save(&other, &token, dir.path()).unwrap();
    let message = load_error(&api, &place(dir.path()), "web-1");
    assert_explained(&message, "web-1", dir.path(), "is for another key than");

    std::fs::write(dir.path().join(KEY_FILE), "not a key").unwrap();
    let message = load_error(&api, &place(dir.path()), "web-1");
    assert_explained(&message, "web-1", dir.path(), "invalid key");
}

#[test]
fn contents_from_the_environment_win_over_the_directory() {
    let api = api();
    let dir = tempfile::tempdir().unwrap();
    // The directory holds an identity of another host: not used.
    let (key, token) = issued(&api, "web-2", NOW - 60, NOW + 3600);
    AgentIdentity::save(&key, &token, dir.path()).unwrap();
    let (key, token) = issued(&api, "web-1", NOW - 60, NOW + 3600);
    let given = IdentityPlace {
        key: Some(Secret(key.to_pem())),
        certificate: Some(format!("{token}\n")),
        ..place(dir.path())
    };
    let identity = given
        .load(&api.verifier, Path::new("k.pem"), "web-1", NOW)
        .unwrap();
    assert_eq!(identity.certificate().public_key, key.public_key());
    assert!(!format!("{given:?}").contains("PRIVATE KEY"), "{given:?}");

    // One without the other is a mistake, not a reason to use the files.
    let half = IdentityPlace {
        certificate: None,
        ..given.clone()
    };
    let message = load_error(&api, &half, "web-2");
    assert_explained(
        &message,
        "web-2",
        dir.path(),
        "ODP_AGENT_KEY is set but ODP_AGENT_CERTIFICATE is not",
    );
    let wrong_host = load_error(&api, &given, "web-3");
    assert_explained(
        &wrong_host,
        "web-3",
        dir.path(),
        "its certificate (ODP_AGENT_CERTIFICATE) is for host \"web-1\"",
    );
}
