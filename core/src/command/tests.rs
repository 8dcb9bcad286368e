use super::*;

mod wire;

const NOW: i64 = 1_800_000_000;

#[test]
fn undeploy_modes_parse_the_names_they_travel_as() {
    for mode in [UndeployMode::Now, UndeployMode::Drain] {
        let json = serde_json::to_value(mode).unwrap();
        assert_eq!(json, mode.as_str());
        assert_eq!(mode.as_str().parse::<UndeployMode>().unwrap(), mode);
    }
    assert!("later".parse::<UndeployMode>().is_err());
}

fn start_command(host: &str) -> Command {
    Command {
        id: Uuid::new_v4(),
        host: host.into(),
        issued_at: NOW,
        expires_at: NOW + 60,
        action: CommandAction::Start(StartProfile {
            profile_id: Uuid::new_v4(),
            target: Target::ProcessName("demo".into()),
            duration_ms: 10_000,
            frequency_hz: 99,
            window_ms: None,
            options: StartOptions::default(),
        }),
    }
}

fn pair() -> (CommandSigner, String) {
    let (private, public) = generate_keypair().unwrap();
    (CommandSigner::from_private_pem(&private).unwrap(), public)
}

#[test]
fn signed_command_verifies_once() {
    let (signer, public) = pair();
    let command = start_command("host-a");
    let token = signer.sign(&command).unwrap();
    let mut verifier = CommandVerifier::from_public_pem(&public, "host-a").unwrap();
    assert_eq!(verifier.verify(&token, NOW + 1).unwrap(), command);
    assert!(
        matches!(verifier.verify(&token, NOW + 2), Err(CommandError::Replayed(id)) if id == command.id)
    );
    assert_eq!(CommandVerifier::unverified_id(&token), Some(command.id));
}

#[test]
fn rejects_other_hosts_expired_and_forged_commands() {
    let (signer, public) = pair();
    let mut verifier = CommandVerifier::from_public_pem(&public, "host-a").unwrap();
    let token = signer.sign(&start_command("host-b")).unwrap();
    assert!(matches!(
        verifier.verify(&token, NOW),
        Err(CommandError::WrongHost { .. })
    ));
    let token = signer.sign(&start_command("host-a")).unwrap();
    assert!(matches!(
        verifier.verify(&token, NOW + 3600),
        Err(CommandError::Expired { .. })
    ));

    let (forger, _) = pair();
    let forged = forger.sign(&start_command("host-a")).unwrap();
    assert!(matches!(
        verifier.verify(&forged, NOW),
        Err(CommandError::Invalid(_))
    ));
    assert!(matches!(
        verifier.verify("garbage", NOW),
        Err(CommandError::Invalid(_))
    ));
    assert_eq!(CommandVerifier::unverified_id("garbage"), None);
}

#[test]
fn tampered_payload_fails_signature() {
    let (signer, public) = pair();
    let token = signer.sign(&start_command("host-a")).unwrap();
    let parts: Vec<&str> = token.split('.').collect();
    let engine = base64::engine::general_purpose::URL_SAFE_NO_PAD;
    let payload = String::from_utf8(engine.decode(parts[1]).unwrap()).unwrap();
    let tampered = engine.encode(payload.replace("\"demo\"", "\"sshd\""));
    let token = format!("{}.{}.{}", parts[0], tampered, parts[2]);
    let mut verifier = CommandVerifier::from_public_pem(&public, "host-a").unwrap();
    assert!(matches!(
        verifier.verify(&token, NOW),
        Err(CommandError::Invalid(_))
    ));
}

fn sync_command(host: &str) -> Command {
    use crate::service::ServiceDefinition;
    Command {
        id: Uuid::new_v4(),
        host: host.into(),
        issued_at: NOW,
        expires_at: NOW + 60,
        action: CommandAction::SyncServices(SyncServices::new(vec![
            ServiceDefinition {
                name: "checkout".into(),
                target: Target::ProcessName("checkout".into()),
            },
            ServiceDefinition {
                name: "cart".into(),
                target: Target::Cgroup("/system.slice/cart.service".into()),
            },
        ])),
    }
}

#[test]
fn sync_services_round_trips_and_is_checked_like_any_command() {
    let (signer, public) = pair();
    let command = sync_command("host-a");
    let token = signer.sign(&command).unwrap();

    // The action as it travels in the `cmd` claim.
    let engine = base64::engine::general_purpose::URL_SAFE_NO_PAD;
    let payload = engine.decode(token.split('.').nth(1).unwrap()).unwrap();
    let claims: serde_json::Value = serde_json::from_slice(&payload).unwrap();
    let CommandAction::SyncServices(sync) = &command.action else {
        unreachable!()
    };
    assert_eq!(
        claims["cmd"],
        serde_json::json!({
            "kind": "sync_services",
            "services": [
                {"name": "cart", "target": {"by": "cgroup", "value": "/system.slice/cart.service"}},
                {"name": "checkout", "target": {"by": "process_name", "value": "checkout"}},
            ],
            "digest": sync.digest,
        })
    );

    let mut verifier = CommandVerifier::from_public_pem(&public, "host-a").unwrap();
    let verified = verifier.verify(&token, NOW + 1).unwrap();
    assert_eq!(verified, command);
    let CommandAction::SyncServices(got) = verified.action else {
        panic!("expected a sync")
    };
    got.check().unwrap();
    assert!(matches!(
        verifier.verify(&token, NOW + 2),
        Err(CommandError::Replayed(_))
    ));

    // Expired, forged, another host's: refused before the action.
    let late = signer.sign(&sync_command("host-a")).unwrap();
    assert!(matches!(
        verifier.verify(&late, NOW + 3600),
        Err(CommandError::Expired { .. })
    ));
    let (forger, _) = pair();
    let forged = forger.sign(&sync_command("host-a")).unwrap();
    assert!(matches!(
        verifier.verify(&forged, NOW),
        Err(CommandError::Invalid(_))
    ));
    let other = signer.sign(&sync_command("host-b")).unwrap();
    assert!(matches!(
        verifier.verify(&other, NOW),
        Err(CommandError::WrongHost { .. })
    ));
    // A definition swapped in transit breaks the signature.
    let parts: Vec<&str> = token.split('.').collect();
    let text = String::from_utf8(engine.decode(parts[1]).unwrap()).unwrap();
    let tampered = engine.encode(text.replace("\"checkout\"}", "\"sshd\"}"));
    assert_ne!(tampered, parts[1]);
    let tampered = format!("{}.{}.{}", parts[0], tampered, parts[2]);
    let mut fresh = CommandVerifier::from_public_pem(&public, "host-a").unwrap();
    assert!(matches!(
        fresh.verify(&tampered, NOW),
        Err(CommandError::Invalid(_))
    ));
}

#[test]
fn an_expiry_further_than_the_bound_is_refused() {
    let (signer, public) = pair();
    let mut verifier = CommandVerifier::from_public_pem(&public, "host-a").unwrap();
    let with = |issued_at: i64, expires_at: i64| Command {
        issued_at,
        expires_at,
        ..start_command("host-a")
    };
    // The longest the api-server issues (--command-ttl-secs 3600), even
    // for a start of the longest profile: the expiry is for delivery.
    let mut longest = with(NOW, NOW + MAX_COMMAND_LIFETIME_SECS);
    if let CommandAction::Start(start) = &mut longest.action {
        start.duration_ms = 7 * 24 * 3600 * 1000;
    }
    let token = signer.sign(&longest).unwrap();
    assert_eq!(verifier.verify(&token, NOW).unwrap(), longest);

    let too_far = [
        // A second past the bound after its issue time.
        with(NOW, NOW + MAX_COMMAND_LIFETIME_SECS + 1),
        // Ten years out.
        with(NOW, NOW + 10 * 365 * 24 * 3600),
        // Issued "in the future" to stretch its life past our clock.
        with(NOW + 7200, NOW + 7200 + 60),
    ];
    for command in too_far {
        let token = signer.sign(&command).unwrap();
        let err = verifier.verify(&token, NOW).unwrap_err();
        assert!(
            matches!(err, CommandError::ExpiryTooFar { expires_at, .. } if expires_at == command.expires_at),
            "{err:?}"
        );
        assert!(err.to_string().contains("3600 s"), "{err}");
    }
    // A clock a few minutes behind the api-server's is tolerated.
    let ahead = with(NOW + 120, NOW + 120 + MAX_COMMAND_LIFETIME_SECS);
    let token = signer.sign(&ahead).unwrap();
    assert_eq!(verifier.verify(&token, NOW).unwrap(), ahead);
}

#[test]
fn seen_ids_carry_over_to_a_new_verifier_until_they_expire() {
    let (signer, public) = pair();
    let mut first = CommandVerifier::from_public_pem(&public, "host-a").unwrap();
    let command = start_command("host-a");
    let token = signer.sign(&command).unwrap();
    first.verify(&token, NOW).unwrap();
    let kept = first.seen(NOW + 1);
    assert_eq!(
        kept.commands,
        [SeenCommand {
            id: command.id,
            expires_at: command.expires_at
        }]
    );
    // Through JSON, as on disk.
    let kept: SeenCommands = serde_json::from_str(&serde_json::to_string(&kept).unwrap()).unwrap();

    let mut second = CommandVerifier::from_public_pem(&public, "host-a").unwrap();
    second.remember(&kept, NOW + 2);
    assert!(matches!(
        second.verify(&token, NOW + 2),
        Err(CommandError::Replayed(id)) if id == command.id
    ));
    // Once expired, an id is no longer kept (the command is refused as
    // expired anyway).
    assert!(second.seen(command.expires_at + 60).commands.is_empty());
    let mut third = CommandVerifier::from_public_pem(&public, "host-a").unwrap();
    third.remember(&kept, command.expires_at + 60);
    assert!(third.seen(NOW).commands.is_empty());
}

#[test]
fn the_memory_is_capped_and_what_it_forgot_is_refused() {
    let (signer, public) = pair();
    let mut verifier = CommandVerifier::from_public_pem(&public, "host-a").unwrap();
    let extra = 10;
    let many = SeenCommands {
        forgotten_until: 0,
        commands: (0..MAX_REMEMBERED_COMMANDS + extra)
            .map(|i| SeenCommand {
                id: Uuid::new_v4(),
                expires_at: NOW + 100 + i as i64,
            })
            .collect(),
    };
    verifier.remember(&many, NOW);
    let kept = verifier.seen(NOW);
    assert_eq!(kept.commands.len(), MAX_REMEMBERED_COMMANDS);
    assert_eq!(kept.forgotten_until, NOW + 100 + extra as i64 - 1);
    assert_eq!(kept.commands[0].expires_at, NOW + 100 + extra as i64);

    // A command expiring no later than a forgotten one might be one.
    let early = Command {
        expires_at: NOW + 100,
        ..start_command("host-a")
    };
    let err = verifier
        .verify(&signer.sign(&early).unwrap(), NOW)
        .unwrap_err();
    assert!(matches!(err, CommandError::Forgotten { .. }), "{err:?}");
    assert!(err.to_string().contains("possible replay"), "{err}");
    // Later ones are taken, each pushing out the soonest.
    let late = Command {
        expires_at: NOW + 3000,
        ..start_command("host-a")
    };
    verifier.verify(&signer.sign(&late).unwrap(), NOW).unwrap();
    let kept = verifier.seen(NOW);
    assert_eq!(kept.commands.len(), MAX_REMEMBERED_COMMANDS);
    assert_eq!(kept.forgotten_until, NOW + 100 + extra as i64);
    // Once the forgotten ones have expired, the floor goes too.
    assert_eq!(verifier.seen(NOW + 3000).forgotten_until, 0);
}

#[test]
fn without_memory_commands_issued_before_the_start_are_refused() {
    let (signer, public) = pair();
    let mut verifier = CommandVerifier::from_public_pem(&public, "host-a").unwrap();
    verifier.refuse_issued_before(NOW + 10);
    let before = start_command("host-a");
    let err = verifier
        .verify(&signer.sign(&before).unwrap(), NOW + 11)
        .unwrap_err();
    assert!(
        matches!(err, CommandError::IssuedBeforeStart { id, started_at, .. }
            if id == before.id && started_at == NOW + 10),
        "{err:?}"
    );
    let after = Command {
        issued_at: NOW + 10,
        expires_at: NOW + 70,
        ..start_command("host-a")
    };
    let token = signer.sign(&after).unwrap();
    assert_eq!(verifier.verify(&token, NOW + 11).unwrap(), after);
    assert!(matches!(
        verifier.verify(&token, NOW + 12),
        Err(CommandError::Replayed(_))
    ));
}

#[test]
fn bad_keys_are_errors() {
    assert!(CommandSigner::from_private_pem("nope").is_err());
    assert!(CommandVerifier::from_public_pem("nope", "h").is_err());
}
