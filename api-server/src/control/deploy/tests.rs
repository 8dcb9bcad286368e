//! The deployers, with stand-in agents and commands.

use odp_core::command::{generate_keypair, CommandSigner};
use odp_core::identity::{issue_certificate, AgentKey, MessageVerifier};

use super::*;

/// Issues real certificates with a key of its own, and remembers for whom
/// and by whom instead of recording them in a store.
struct StandInIssuer {
    signer: CommandSigner,
    public_pem: String,
    issued: std::sync::Mutex<Vec<(String, String)>>,
    withdrawn: std::sync::Mutex<Vec<(uuid::Uuid, String)>>,
}

impl StandInIssuer {
    fn new() -> Arc<StandInIssuer> {
        let (private, public_pem) = generate_keypair().unwrap();
        Arc::new(StandInIssuer {
            signer: CommandSigner::from_private_pem(&private).unwrap(),
            public_pem,
            issued: Default::default(),
            withdrawn: Default::default(),
        })
    }
}

impl IssueIdentity for StandInIssuer {
    fn issue_new<'a>(&'a self, host: &'a str, issued_by: &'a str) -> IssueFuture<'a> {
        Box::pin(async move {
            let key = AgentKey::generate().map_err(|e| e.to_string())?;
            let now = chrono::Utc::now().timestamp();
            let (id, certificate) =
                issue_certificate(&self.signer, host, &key.public_key(), now, now + 86_400)
                    .map_err(|e| e.to_string())?;
            let issued = (host.to_owned(), issued_by.to_owned());
            self.issued.lock().unwrap().push(issued);
            Ok(AgentCredentials {
                id,
                key_pem: key.to_pem(),
                certificate,
            })
        })
    }

    fn withdraw<'a>(&'a self, id: uuid::Uuid, why: &'a str) -> WithdrawFuture<'a> {
        self.withdrawn.lock().unwrap().push((id, why.to_owned()));
        Box::pin(async {})
    }
}

fn issuer() -> Arc<dyn IssueIdentity> {
    StandInIssuer::new()
}

/// The certificate in `dir/cert` and the key in `dir/key`, as a stand-in
/// agent or command wrote them from its environment: checks the
/// certificate verifies, names `host` and certifies the key.
fn check_credentials(dir: &std::path::Path, issuer: &StandInIssuer, host: &str) {
    let read = |name: &str| std::fs::read_to_string(dir.join(name)).unwrap();
    let verifier = MessageVerifier::from_public_pem(&issuer.public_pem).unwrap();
    let now = chrono::Utc::now().timestamp();
    let certificate = verifier.certificate(&read("cert"), now).unwrap();
    assert_eq!(certificate.host, host);
    let key = AgentKey::from_pem(&read("key")).unwrap();
    assert_eq!(certificate.public_key, key.public_key());
}

/// A shell line writing the identity a deployer passes into `dir`.
fn write_credentials(dir: &std::path::Path) -> String {
    let dir = dir.display();
    format!(
        "printf '%s' \"$ODP_AGENT_CERTIFICATE\" > {dir}/cert; \
         printf '%s\\n' \"$ODP_AGENT_KEY\" > {dir}/key"
    )
}

fn options(deployer: DeployerKind) -> DeployOptions {
    DeployOptions {
        deployer,
        ..DeployOptions::defaults()
    }
}

#[test]
fn ssh_needs_a_command_with_a_host_placeholder() {
    let mut ssh = options(DeployerKind::Ssh);
    assert!(matches!(
        ssh.build(issuer()),
        Err(DeployConfigError::NoCommand)
    ));
    ssh.deploy_command = Some("ssh somewhere start".into());
    assert!(matches!(
        ssh.build(issuer()),
        Err(DeployConfigError::NoHostInCommand)
    ));
    assert!(DeployConfigError::NoHostInCommand
        .to_string()
        .contains("{host}"));
    ssh.deploy_command = Some("ssh {host} start".into());
    assert_eq!(ssh.build(issuer()).unwrap().unwrap().name(), "ssh");
    assert!(options(DeployerKind::None)
        .build(issuer())
        .unwrap()
        .is_none());
}

#[test]
fn host_names_cannot_change_the_command() {
    let deployer = CommandDeployer {
        template: "ssh {host} start".into(),
        identities: issuer(),
    };
    assert_eq!(
        deployer.command_for("web-1.eu").unwrap(),
        "ssh web-1.eu start"
    );
    for bad in ["", "a;rm -rf /", "$(id)", "a b", "`x`"] {
        assert!(deployer.command_for(bad).is_err(), "{bad}");
    }
}

#[tokio::test]
async fn the_command_deployer_reports_failures_with_stderr() {
    let ok = CommandDeployer {
        template: "test {host} = web-1".into(),
        identities: issuer(),
    };
    assert!(ok.deploy("web-1").await.is_ok());
    let failing = CommandDeployer {
        template: "echo cannot reach {host} >&2; exit 3".into(),
        identities: issuer(),
    };
    let error = failing.deploy("web-2").await.unwrap_err();
    let DeployError::CommandFailed { status, stderr } = &error else {
        panic!("{error}")
    };
    assert!(stderr.contains("cannot reach web-2"), "{error}");
    assert!(status.contains("exit status: 3"), "{error}");
}

#[tokio::test]
async fn a_local_agent_that_exits_at_once_is_a_failed_deploy() {
    let dir = std::env::temp_dir().join(format!("odp-deploy-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let deployer = LocalDeployer {
        binary: "/bin/sh".into(),
        args: vec!["-c".into(), "echo bad flag; exit 2".into()],
        log_dir: dir.clone(),
        running: Arc::default(),
        identities: issuer(),
    };
    // `sh --host-id h -c …` fails on the unknown option.
    let error = deployer.deploy("h").await.unwrap_err();
    assert!(matches!(&error, DeployError::AgentExited { .. }), "{error}");
    let _ = std::fs::remove_dir_all(dir);
}

/// A stand-in agent: an executable script, run as `SCRIPT --host-id HOST`.
fn script_deployer(dir: &std::path::Path, script: &str) -> LocalDeployer {
    use std::os::unix::fs::PermissionsExt as _;
    let path = dir.join("agent.sh");
    std::fs::write(&path, script).unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    LocalDeployer {
        binary: path,
        args: Vec::new(),
        log_dir: dir.to_owned(),
        running: Arc::default(),
        identities: issuer(),
    }
}

#[tokio::test]
async fn an_agent_refused_for_a_served_host_is_a_successful_deploy() {
    let dir = tempfile::tempdir().unwrap();
    let issuer = StandInIssuer::new();
    let deployer = LocalDeployer {
        identities: issuer.clone(),
        ..script_deployer(dir.path(), "#!/bin/sh\necho host taken >&2\nexit 3\n")
    };
    assert!(deployer.deploy("h").await.is_ok());
    assert!(deployer.running.lock().await.is_empty());
    // The identity it was given died with it: withdrawn, not left valid.
    let withdrawn = issuer.withdrawn.lock().unwrap().clone();
    assert_eq!(withdrawn.len(), 1, "{withdrawn:?}");
    assert!(withdrawn[0].1.contains("exited at once"), "{withdrawn:?}");
}

#[tokio::test]
async fn racing_deploys_of_one_host_start_one_agent() {
    let dir = tempfile::tempdir().unwrap();
    let starts = dir.path().join("starts");
    let script = format!(
        "#!/bin/sh\necho started >> {}\nexec sleep 30\n",
        starts.display()
    );
    let deployer = script_deployer(dir.path(), &script);
    let (a, b) = tokio::join!(deployer.deploy("h"), deployer.deploy("h"));
    assert!(a.is_ok() && b.is_ok(), "{a:?} {b:?}");
    assert!(deployer.deploy("h").await.is_ok());
    let lines = std::fs::read_to_string(&starts).unwrap();
    assert_eq!(lines.lines().count(), 1, "{lines}");
    let pid = *deployer.running.lock().await.get("h").unwrap();
    let _ = std::process::Command::new("kill")
        .arg(pid.to_string())
        .status();
}

#[tokio::test]
async fn the_local_deployer_gives_the_agent_an_identity_for_its_host() {
    let dir = tempfile::tempdir().unwrap();
    let issuer = StandInIssuer::new();
    // The stand-in agent writes what it was given, then exits as an agent
    // that finds its host served does (a successful deploy).
    let script = format!("#!/bin/sh\n{}\nexit 3\n", write_credentials(dir.path()));
    let deployer = LocalDeployer {
        identities: issuer.clone(),
        ..script_deployer(dir.path(), &script)
    };
    deployer.deploy("web-7").await.unwrap();
    check_credentials(dir.path(), &issuer, "web-7");
    let issued = issuer.issued.lock().unwrap().clone();
    assert_eq!(issued, [("web-7".to_owned(), "deployer:local".to_owned())]);
}

#[tokio::test]
async fn the_command_deployer_runs_its_command_with_the_agents_identity() {
    let dir = tempfile::tempdir().unwrap();
    let issuer = StandInIssuer::new();
    let deployer = CommandDeployer {
        template: format!("test {{host}} = web-8 && {}", write_credentials(dir.path())),
        identities: issuer.clone(),
    };
    deployer.deploy("web-8").await.unwrap();
    check_credentials(dir.path(), &issuer, "web-8");
    let issued = issuer.issued.lock().unwrap().clone();
    assert_eq!(issued, [("web-8".to_owned(), "deployer:ssh".to_owned())]);
}

#[tokio::test]
async fn a_deploy_without_an_identity_starts_no_agent() {
    struct Refusing;
    impl IssueIdentity for Refusing {
        fn issue_new<'a>(&'a self, _: &'a str, _: &'a str) -> IssueFuture<'a> {
            Box::pin(async { Err("database unavailable, retry later".to_owned()) })
        }

        fn withdraw<'a>(&'a self, _: uuid::Uuid, _: &'a str) -> WithdrawFuture<'a> {
            unreachable!("nothing was issued")
        }
    }
    let dir = tempfile::tempdir().unwrap();
    let started = dir.path().join("started");
    let script = format!("#!/bin/sh\ntouch {}\nexit 3\n", started.display());
    let deployer = LocalDeployer {
        identities: Arc::new(Refusing),
        ..script_deployer(dir.path(), &script)
    };
    let error = deployer.deploy("h").await.unwrap_err();
    assert!(matches!(&error, DeployError::Identity(_)), "{error}");
    assert!(!started.exists());
}
