use super::*;
use crate::command::{generate_keypair, Command, CommandAction};

const NOW: i64 = 1_800_000_000;

struct Api {
    signer: CommandSigner,
    verifier: MessageVerifier,
}

fn api() -> Api {
    let (private, public) = generate_keypair().unwrap();
    Api {
        signer: CommandSigner::from_private_pem(&private).unwrap(),
        verifier: MessageVerifier::from_public_pem(&public).unwrap(),
    }
}

fn enrolled(api: &Api, host: &str) -> AgentIdentity {
    let key = AgentKey::generate().unwrap();
    let (_, token) =
        issue_certificate(&api.signer, host, &key.public_key(), NOW - 10, NOW + 3600).unwrap();
    AgentIdentity::new(key, &token, &api.verifier, host, NOW).unwrap()
}

fn verify(
    api: &Api,
    channel: Channel,
    payload: &[u8],
    signed: &MessageSignature<'_>,
) -> Result<Certificate, IdentityError> {
    api.verifier.verify(
        channel,
        payload,
        Some(signed.certificate.as_bytes()),
        Some(signed.signature.as_bytes()),
        NOW,
    )
}

#[test]
fn a_signed_message_verifies_and_names_its_host() {
    let api = api();
    let agent = enrolled(&api, "web-1");
    let signed = agent.sign(Channel::Events, b"{\"host\":\"web-1\"}");
    let certificate = verify(&api, Channel::Events, b"{\"host\":\"web-1\"}", &signed).unwrap();
    assert_eq!(certificate.host, "web-1");
    assert_eq!(certificate, *agent.certificate());
    certificate.check_host("web-1").unwrap();
    assert!(matches!(
        certificate.check_host("web-2"),
        Err(IdentityError::WrongHost { .. })
    ));
    // Verified twice (the second from the cache), the same answer.
    assert_eq!(
        verify(&api, Channel::Events, b"{\"host\":\"web-1\"}", &signed).unwrap(),
        certificate
    );
}

#[test]
fn changed_bytes_another_channel_or_another_key_do_not_verify() {
    let api = api();
    let agent = enrolled(&api, "web-1");
    let signed = agent.sign(Channel::Stacks, b"window");
    assert_eq!(
        verify(&api, Channel::Stacks, b"windoW", &signed),
        Err(IdentityError::BadSignature)
    );
    assert_eq!(
        verify(&api, Channel::Events, b"window", &signed),
        Err(IdentityError::BadSignature)
    );
    // A valid certificate beside another agent's signature.
    let other = enrolled(&api, "web-1");
    let forged = MessageSignature {
        certificate: signed.certificate,
        signature: other.sign(Channel::Stacks, b"window").signature,
    };
    assert_eq!(
        verify(&api, Channel::Stacks, b"window", &forged),
        Err(IdentityError::BadSignature)
    );
    let garbage = MessageSignature {
        certificate: signed.certificate,
        signature: "not base64!".into(),
    };
    assert_eq!(
        verify(&api, Channel::Stacks, b"window", &garbage),
        Err(IdentityError::BadSignature)
    );
}

#[test]
fn unsigned_messages_are_refused_by_name() {
    let api = api();
    assert_eq!(
        api.verifier
            .verify(Channel::Stacks, b"x", None, Some(b"sig"), NOW),
        Err(IdentityError::Unsigned(CERTIFICATE_HEADER))
    );
    assert_eq!(
        api.verifier
            .verify(Channel::Stacks, b"x", Some(b"cert"), None, NOW),
        Err(IdentityError::Unsigned(SIGNATURE_HEADER))
    );
}

#[test]
fn certificates_of_another_issuer_or_made_up_are_refused() {
    let api = api();
    let rogue = self::api();
    // Self-certified: signed with a key that is not the api-server's.
    let agent = enrolled(&rogue, "web-1");
    let signed = agent.sign(Channel::Events, b"beat");
    assert!(matches!(
        verify(&api, Channel::Events, b"beat", &signed),
        Err(IdentityError::Certificate(_))
    ));
    // A command signed by the real key is not a certificate (its audience).
    let command = Command {
        id: Uuid::new_v4(),
        host: "web-1".into(),
        issued_at: NOW,
        expires_at: NOW + 60,
        action: CommandAction::Stop {
            profile_id: Uuid::nil(),
        },
    };
    let token = api.signer.sign(&command).unwrap();
    assert!(matches!(
        api.verifier.certificate(&token, NOW),
        Err(IdentityError::Certificate(_))
    ));
}

#[test]
fn certificates_hold_only_within_their_times() {
    let api = api();
    let key = AgentKey::generate().unwrap();
    let (id, token) =
        issue_certificate(&api.signer, "web-1", &key.public_key(), NOW, NOW + 60).unwrap();
    assert!(api.verifier.certificate(&token, NOW + 60).is_ok());
    assert_eq!(
        api.verifier.certificate(&token, NOW + 60 + LEEWAY_SECS + 1),
        Err(IdentityError::CertificateExpired {
            id,
            expires_at: NOW + 60
        })
    );
    assert_eq!(
        api.verifier.certificate(&token, NOW - LEEWAY_SECS - 1),
        Err(IdentityError::CertificateNotYetValid { id, issued_at: NOW })
    );
}

#[test]
fn an_identity_needs_its_own_key_and_host() {
    let api = api();
    let key = AgentKey::generate().unwrap();
    let other = AgentKey::generate().unwrap();
    let (_, token) =
        issue_certificate(&api.signer, "web-1", &key.public_key(), NOW, NOW + 60).unwrap();
    assert!(matches!(
        AgentIdentity::new(other, &token, &api.verifier, "web-1", NOW),
        Err(IdentityError::Certificate(_))
    ));
    assert!(matches!(
        AgentIdentity::new(key, &token, &api.verifier, "web-2", NOW),
        Err(IdentityError::WrongHost { .. })
    ));
}

#[test]
fn an_identity_survives_its_files() {
    let api = api();
    let dir = std::env::temp_dir().join(format!("odp-identity-{}", Uuid::new_v4()));
    let key = AgentKey::generate().unwrap();
    let public = key.public_key();
    let (_, token) = issue_certificate(&api.signer, "web-1", &public, NOW, NOW + 60).unwrap();
    AgentIdentity::save(&key, &token, &dir).unwrap();
    let mode = std::fs::metadata(dir.join(KEY_FILE)).unwrap();
    use std::os::unix::fs::PermissionsExt as _;
    assert_eq!(mode.permissions().mode() & 0o777, 0o600);
    let loaded = AgentIdentity::load(&dir, &api.verifier, "web-1", NOW).unwrap();
    assert_eq!(loaded.certificate().public_key, public);
    let signed = loaded.sign(Channel::Stacks, b"w");
    assert!(verify(&api, Channel::Stacks, b"w", &signed).is_ok());
    std::fs::remove_dir_all(&dir).unwrap();
    assert!(matches!(
        AgentIdentity::load(&dir, &api.verifier, "web-1", NOW),
        Err(IdentityError::Io { .. })
    ));
}

#[test]
fn public_keys_read_as_raw_base64_or_spki_pem() {
    let key = AgentKey::generate().unwrap();
    let raw = key.public_key();
    assert_eq!(parse_public_key(&URL_SAFE_NO_PAD.encode(raw)).unwrap(), raw);
    assert_eq!(
        parse_public_key(&base64::engine::general_purpose::STANDARD.encode(raw)).unwrap(),
        raw
    );
    let mut spki = crate::command::ED25519_SPKI_PREFIX.to_vec();
    spki.extend_from_slice(&raw);
    let pem = crate::command::pem("PUBLIC KEY", &spki);
    assert_eq!(parse_public_key(&pem).unwrap(), raw);
    assert!(parse_public_key("abcd").is_err());
    assert_eq!(AgentKey::from_pem(&key.to_pem()).unwrap().public_key(), raw);
}

#[test]
fn the_public_key_of_a_signing_key_verifies_its_certificates() {
    let (private, public) = generate_keypair().unwrap();
    assert_eq!(crate::command::public_pem_of(&private).unwrap(), public);
}
