use std::collections::HashSet;

use odp_core::command::{generate_keypair, CommandSigner};

use super::*;

const HOST: &str = "host-a";
const NOW: i64 = 1_800_000_000;

struct State {
    running: HashSet<Uuid>,
    draining: bool,
}

impl AgentState for State {
    fn is_running(&self, profile_id: &Uuid) -> bool {
        self.running.contains(profile_id)
    }
    fn running_count(&self) -> usize {
        self.running.len()
    }
    fn draining(&self) -> bool {
        self.draining
    }
}

fn idle() -> State {
    State {
        running: HashSet::new(),
        draining: false,
    }
}

fn start() -> StartProfile {
    StartProfile {
        profile_id: Uuid::new_v4(),
        target: Target::ProcessName("burn".into()),
        duration_ms: 10_000,
        frequency_hz: 99,
        window_ms: None,
        options: Default::default(),
    }
}

fn command(host: &str, action: CommandAction) -> Command {
    Command {
        id: Uuid::new_v4(),
        host: host.into(),
        issued_at: NOW,
        expires_at: NOW + 60,
        action,
    }
}

fn keys() -> (CommandSigner, CommandVerifier) {
    let (private, public) = generate_keypair().unwrap();
    (
        CommandSigner::from_private_pem(&private).unwrap(),
        CommandVerifier::from_public_pem(&public, HOST).unwrap(),
    )
}

fn rejection(verdict: Verdict) -> Rejection {
    match verdict {
        Verdict::Rejected(r) => r,
        other => panic!("expected a rejection, got {other:?}"),
    }
}

#[test]
fn accepts_a_signed_command_for_this_host_once() {
    let (signer, mut verifier) = keys();
    let cmd = command(HOST, CommandAction::Start(start()));
    let token = signer.sign(&cmd).unwrap();
    let key = Some(HOST.as_bytes());
    assert_eq!(
        check(&mut verifier, HOST, key, Some(token.as_bytes()), NOW),
        Verdict::Accepted(Box::new(cmd.clone()))
    );
    let replay = rejection(check(&mut verifier, HOST, key, Some(token.as_bytes()), NOW));
    assert_eq!(replay.command_id, Some(cmd.id));
    assert!(replay.reason.contains("replay"), "{}", replay.reason);
    assert!(!replay.dead_letter);
}

#[test]
fn ignores_other_hosts_keys_without_judging() {
    let (signer, mut verifier) = keys();
    let token = signer
        .sign(&command("host-b", CommandAction::Start(start())))
        .unwrap();
    for key in [Some(&b"host-b"[..]), None, Some(&b"host-a2"[..])] {
        assert_eq!(
            check(&mut verifier, HOST, key, Some(token.as_bytes()), NOW),
            Verdict::NotOurs
        );
    }
}

#[test]
fn rejects_wrong_host_expired_forged_and_garbage() {
    let (signer, mut verifier) = keys();
    let key = Some(HOST.as_bytes());

    // Keyed to us but addressed to another host inside the signed claims.
    let token = signer
        .sign(&command("host-b", CommandAction::Start(start())))
        .unwrap();
    let r = rejection(check(&mut verifier, HOST, key, Some(token.as_bytes()), NOW));
    assert!(r.reason.contains("host-b") && !r.dead_letter, "{r:?}");

    let cmd = command(HOST, CommandAction::Start(start()));
    let token = signer.sign(&cmd).unwrap();
    let r = rejection(check(
        &mut verifier,
        HOST,
        key,
        Some(token.as_bytes()),
        NOW + 3600,
    ));
    assert!(r.reason.contains("expired") && !r.dead_letter, "{r:?}");
    assert_eq!(r.command_id, Some(cmd.id));

    let (forger, _) = keys();
    let forged = forger
        .sign(&command(HOST, CommandAction::Start(start())))
        .unwrap();
    let r = rejection(check(
        &mut verifier,
        HOST,
        key,
        Some(forged.as_bytes()),
        NOW,
    ));
    assert!(
        r.dead_letter,
        "a forged command goes to the dead-letter topic"
    );

    let r = rejection(check(&mut verifier, HOST, key, Some(b"\xff\xfe"), NOW));
    assert!(r.dead_letter && r.command_id.is_none());
    let r = rejection(check(&mut verifier, HOST, key, None, NOW));
    assert!(r.dead_letter);
    let r = rejection(check(&mut verifier, HOST, key, Some(b"not.a.jws"), NOW));
    assert!(r.dead_letter);
}

#[test]
fn a_command_valid_for_years_is_refused_and_dead_lettered() {
    let (signer, mut verifier) = keys();
    let key = Some(HOST.as_bytes());
    let mut cmd = command(HOST, CommandAction::Start(start()));
    cmd.expires_at = NOW + 10 * 365 * 24 * 3600;
    let token = signer.sign(&cmd).unwrap();
    let r = rejection(check(&mut verifier, HOST, key, Some(token.as_bytes()), NOW));
    assert_eq!(r.command_id, Some(cmd.id));
    assert!(r.reason.contains("more than the 3600 s"), "{}", r.reason);
    assert!(
        r.dead_letter,
        "a command no api-server issues is dead-lettered"
    );
    // The longest the api-server issues is taken.
    cmd.id = Uuid::new_v4();
    cmd.expires_at = NOW + odp_core::command::MAX_COMMAND_LIFETIME_SECS;
    let token = signer.sign(&cmd).unwrap();
    assert!(matches!(
        check(&mut verifier, HOST, key, Some(token.as_bytes()), NOW),
        Verdict::Accepted(..)
    ));
}

#[test]
fn decides_starts_stops_and_undeploys() {
    let s = start();
    let id = s.profile_id;
    assert_eq!(
        decide(command(HOST, CommandAction::Start(s.clone())), &idle()),
        Decision::Start(s.clone())
    );

    let mut state = idle();
    state.running.insert(id);
    let Decision::Reject(r) = decide(command(HOST, CommandAction::Start(s.clone())), &state) else {
        panic!("a duplicate start must be rejected");
    };
    assert_eq!(r.profile_id, Some(id));
    assert!(r.reason.contains("already running"));

    assert_eq!(
        decide(
            command(HOST, CommandAction::Stop { profile_id: id }),
            &state
        ),
        Decision::Stop(id)
    );
    let other = Uuid::new_v4();
    assert!(matches!(
        decide(command(HOST, CommandAction::Stop { profile_id: other }), &state),
        Decision::Reject(Rejection { profile_id: Some(p), .. }) if p == other
    ));
    for mode in [UndeployMode::Now, UndeployMode::Drain] {
        assert_eq!(
            decide(command(HOST, CommandAction::Undeploy { mode }), &state),
            Decision::Undeploy(mode)
        );
    }
}

#[test]
fn draining_or_full_agents_refuse_new_profiles_but_still_stop() {
    let mut state = idle();
    state.draining = true;
    let running = Uuid::new_v4();
    state.running.insert(running);
    assert!(matches!(
        decide(command(HOST, CommandAction::Start(start())), &state),
        Decision::Reject(r) if r.reason.contains("draining")
    ));
    assert_eq!(
        decide(
            command(
                HOST,
                CommandAction::Stop {
                    profile_id: running
                }
            ),
            &state
        ),
        Decision::Stop(running)
    );

    let mut full = idle();
    full.running = (0..MAX_PROFILES).map(|_| Uuid::new_v4()).collect();
    assert!(matches!(
        decide(command(HOST, CommandAction::Start(start())), &full),
        Decision::Reject(r) if r.reason.contains("already running on this host")
    ));
}

#[test]
fn validates_start_parameters() {
    assert!(validate_start(&start()).is_ok());
    let with = |f: &dyn Fn(&mut StartProfile)| {
        let mut s = start();
        f(&mut s);
        validate_start(&s)
    };
    assert!(with(&|s| s.frequency_hz = 0).is_err());
    assert!(with(&|s| s.frequency_hz = MAX_FREQUENCY_HZ + 1).is_err());
    assert!(with(&|s| s.frequency_hz = MAX_FREQUENCY_HZ).is_ok());
    assert!(with(&|s| s.duration_ms = 0).is_err());
    assert!(with(&|s| s.duration_ms = u64::MAX).is_err());
    assert!(with(&|s| s.window_ms = Some(10)).is_err());
    assert!(with(&|s| s.window_ms = Some(500)).is_ok());
    assert!(with(&|s| s.window_ms = Some(u64::MAX)).is_err());
    assert!(with(&|s| s.target = Target::Pid(0)).is_err());
    assert!(with(&|s| s.target = Target::ProcessName(String::new())).is_err());
    assert!(with(&|s| s.target = Target::Pid(1)).is_ok());
    assert!(with(&|s| s.target = Target::Imported("pprof".into())).is_err());
    assert!(with(&|s| s.target = Target::CommandLine("java .*Main".into())).is_ok());
    assert!(with(&|s| s.target = Target::CommandLine("(".into())).is_err());
    assert!(with(&|s| s.target = Target::Cgroup("/system.slice".into())).is_ok());
    assert!(with(&|s| s.target = Target::Cgroup("system.slice".into())).is_err());
}

fn services() -> SyncServices {
    SyncServices::new(vec![odp_core::service::ServiceDefinition {
        name: "sleeper".into(),
        target: Target::ProcessName("sleep".into()),
    }])
}

#[test]
fn a_signed_sync_is_verified_then_decided() {
    let (signer, mut verifier) = keys();
    let key = Some(HOST.as_bytes());
    let sync = services();
    let token = signer
        .sign(&command(HOST, CommandAction::SyncServices(sync.clone())))
        .unwrap();
    let Verdict::Accepted(cmd) = check(&mut verifier, HOST, key, Some(token.as_bytes()), NOW)
    else {
        panic!("a signed sync for this host is accepted")
    };
    assert_eq!(decide(*cmd, &idle()), Decision::SyncServices(sync.clone()));
    // Replayed, expired, forged: refused by the same checks as a start.
    let r = rejection(check(&mut verifier, HOST, key, Some(token.as_bytes()), NOW));
    assert!(
        r.reason.contains("replay") && !r.dead_letter,
        "{}",
        r.reason
    );
    let late = signer
        .sign(&command(HOST, CommandAction::SyncServices(sync.clone())))
        .unwrap();
    let r = rejection(check(
        &mut verifier,
        HOST,
        key,
        Some(late.as_bytes()),
        NOW + 3600,
    ));
    assert!(r.reason.contains("expired"), "{}", r.reason);
    let (forger, _) = keys();
    let forged = forger
        .sign(&command(HOST, CommandAction::SyncServices(sync.clone())))
        .unwrap();
    let r = rejection(check(
        &mut verifier,
        HOST,
        key,
        Some(forged.as_bytes()),
        NOW,
    ));
    assert!(r.dead_letter, "a forged command is dead-lettered");

    // Draining agents still take definitions.
    let draining = State {
        running: HashSet::new(),
        draining: true,
    };
    assert_eq!(
        decide(
            command(HOST, CommandAction::SyncServices(sync.clone())),
            &draining
        ),
        Decision::SyncServices(sync.clone())
    );
}

#[test]
fn a_sync_whose_digest_or_definitions_are_wrong_is_rejected() {
    let mut stale = services();
    stale.digest = odp_core::service::services_digest(&[]);
    let id = Uuid::new_v4();
    let mut cmd = command(HOST, CommandAction::SyncServices(stale));
    cmd.id = id;
    let Decision::Reject(r) = decide(cmd, &idle()) else {
        panic!("a wrong digest is rejected")
    };
    assert_eq!(r.command_id, Some(id));
    assert!(
        r.reason.starts_with("sync_services refused: digest"),
        "{}",
        r.reason
    );
    assert!(!r.dead_letter);

    let by_pid = SyncServices::new(vec![odp_core::service::ServiceDefinition {
        name: "one".into(),
        target: Target::Pid(1),
    }]);
    assert!(matches!(
        decide(command(HOST, CommandAction::SyncServices(by_pid)), &idle()),
        Decision::Reject(r) if r.reason.contains("designates no service")
    ));
}
