use super::*;
use odp_core::command::CommandSigner;
use odp_core::identity::{issue_certificate, AgentKey};

/// The api-server's key pair: the public half in a file, as the agent
/// reads it.
struct Api {
    path: PathBuf,
    signer: CommandSigner,
}

fn key_file() -> (Api, String) {
    let (private, public) = odp_core::command::generate_keypair().unwrap();
    let path = std::env::temp_dir().join(format!("odp-key-{}.pem", uuid::Uuid::new_v4()));
    fs::write(&path, &public).unwrap();
    let signer = CommandSigner::from_private_pem(&private).unwrap();
    (Api { path, signer }, public)
}

fn parse(args: &[&str]) -> std::result::Result<Args, clap::Error> {
    let mut args =
        Args::try_parse_from(std::iter::once("odp-profiler-service").chain(args.iter().copied()))?;
    // Whatever the test process's environment holds.
    args.agent_key = None;
    args.agent_certificate = None;
    Ok(args)
}

/// `args` with an identity for their host issued by `api`, given as
/// contents (as the api-server's local deployer passes it).
fn enrolled(api: &Api, mut args: Args) -> Args {
    let host = args.host_id.clone().unwrap_or_else(|| hostname().unwrap());
    let key = AgentKey::generate().unwrap();
    let now = odp_plumbing::signed::unix_now();
    let (_, token) =
        issue_certificate(&api.signer, &host, &key.public_key(), now - 60, now + 3600).unwrap();
    args.agent_key = Some(Secret(key.to_pem()));
    args.agent_certificate = Some(token);
    args
}

#[test]
fn defaults_fill_in_host_agent_and_topics() {
    let (api, public) = key_file();
    let path = api.path.clone();
    let args = parse(&["--command-public-key", path.to_str().unwrap()]).unwrap();
    let config = enrolled(&api, args).into_config().unwrap();
    assert_eq!(config.kafka.bootstrap(), "127.0.0.1:9092");
    assert_eq!(config.topics.commands, "odp.commands");
    assert_eq!(config.topics.dead_letter, "odp.dead-letter");
    assert_eq!(config.host_id, hostname().unwrap());
    assert!(uuid::Uuid::parse_str(&config.agent_id).is_ok());
    assert_eq!(config.window, Duration::from_secs(10));
    assert_eq!(config.heartbeat, Duration::from_secs(5));
    assert_eq!(config.command_public_key_pem, public);
    assert_eq!(config.cost, CostDefaults::default());
    assert!(config.cost_events, "cost reports are published by default");
    assert_eq!(config.spool.max_bytes, 256 << 20);
    assert!(config
        .spool
        .dir
        .ends_with(format!("odp-spool/{}", config.host_id)));
    assert!(config.labels.is_empty());
    assert!(config.state_dir.ends_with(&config.host_id));
    assert_eq!(config.identity.certificate().host, config.host_id);
    fs::remove_file(path).unwrap();
}

#[test]
fn labels_come_from_repeated_flags_or_a_comma_separated_list() {
    let (api, _) = key_file();
    let path = api.path.clone();
    let key = path.to_str().unwrap();
    let args = parse(&[
        "--command-public-key",
        key,
        "--label",
        "zone=eu-1",
        "--label",
        "version=1.2.3, team=pay,",
        "--label",
        "",
        "--state-dir",
        "/tmp/odp-state-x",
    ])
    .unwrap();
    let config = enrolled(&api, args).into_config().unwrap();
    let labels: Vec<(&str, &str)> = config
        .labels
        .iter()
        .map(|(k, v)| (k.as_str(), v.as_str()))
        .collect();
    assert_eq!(
        labels,
        [("team", "pay"), ("version", "1.2.3"), ("zone", "eu-1")]
    );
    assert_eq!(config.state_dir, PathBuf::from("/tmp/odp-state-x"));

    let err = |labels: &[&str]| {
        let mut all = vec!["--command-public-key", key];
        for label in labels {
            all.extend_from_slice(&["--label", label]);
        }
        let args = enrolled(&api, parse(&all).unwrap());
        args.into_config().unwrap_err().to_string()
    };
    for (labels, wanted) in [
        (&["zone"][..], "not KEY=VALUE"),
        (&["Zone=a"], "label key \"Zone\""),
        (&["zone="], "empty value"),
        (&["zone=a", "zone=b"], "given twice"),
        (&["kernel=5.1"], "discovered by the agent"),
        (&["cpu_model=x"], "discovered by the agent"),
    ] {
        let message = err(labels);
        assert!(
            message.starts_with("invalid configuration: --label: ") && message.contains(wanted),
            "{labels:?}: {message}"
        );
    }
    fs::remove_file(path).unwrap();
}

#[test]
fn rejects_bad_values() {
    let (api, _) = key_file();
    let path = api.path.clone();
    let key = path.to_str().unwrap();
    let err = |args: &[&str]| {
        let mut all = vec!["--command-public-key", key];
        all.extend_from_slice(args);
        let args = enrolled(&api, parse(&all).unwrap());
        args.into_config().unwrap_err().to_string()
    };
    assert!(err(&["--window-secs", "0"]).contains("--window-secs"));
    assert!(err(&["--window-secs", "7200"]).contains("--window-secs"));
    assert!(err(&["--heartbeat-secs", "0"]).contains("--heartbeat-secs"));
    assert!(err(&["--host-id", "a b"]).contains("whitespace"));
    assert!(err(&["--topic-stacks", ""]).contains("--topic-stacks"));
    assert!(err(&["--fsp-share", "1.5"]).contains("fsp_share"));
    assert!(err(&["--fda", "--fda-lambda", "1"]).contains("lambda"));
    assert!(err(&["--overhead-budget", "2"]).contains("overhead_budget"));
    assert!(err(&["--duty-on-secs", "5", "--duty-period-secs", "2"]).contains("duty"));
    assert!(parse(&[]).is_err(), "the public key is required");
    assert!(parse(&["--command-public-key", key, "--window-secs", "-1"]).is_err());

    let missing = parse(&["--command-public-key", "/nonexistent/key.pem"]).unwrap();
    assert!(missing
        .into_config()
        .unwrap_err()
        .to_string()
        .contains("/nonexistent/key.pem"));
    fs::write(&path, "not a key").unwrap();
    let garbage = parse(&["--command-public-key", key]).unwrap();
    assert!(garbage
        .into_config()
        .unwrap_err()
        .to_string()
        .contains("public key"));
    fs::remove_file(path).unwrap();
}

#[test]
fn start_up_stops_without_a_usable_identity_and_says_how_to_get_one() {
    let (api, _) = key_file();
    let key = api.path.to_str().unwrap().to_owned();
    let state = tempfile::tempdir().unwrap();
    let state_dir = state.path().to_str().unwrap();
    let hint = "enroll it with `odpctl agents enroll web-1 --out";
    let base = ["--command-public-key", &key, "--host-id", "web-1"];

    // None anywhere: the default directory, in the state directory, is
    // named.
    let args = parse(&[&base[..], &["--state-dir", state_dir]].concat()).unwrap();
    let message = args.into_config().unwrap_err().to_string();
    let default_dir = state.path().join("identity");
    assert!(
        message.starts_with(
            "invalid configuration: no usable identity for this agent of host web-1: "
        ) && message.contains(&format!("{} does not exist", default_dir.display()))
            && message.contains(&format!("{hint} {}` (admin)", default_dir.display()))
            && message.contains("or let the api-server deploy it"),
        "{message}"
    );

    // An identity of another host in --identity-dir.
    let dir = state.path().join("elsewhere");
    let agent = AgentKey::generate().unwrap();
    let now = odp_plumbing::signed::unix_now();
    let (_, token) = issue_certificate(
        &api.signer,
        "web-2",
        &agent.public_key(),
        now - 60,
        now + 3600,
    )
    .unwrap();
    AgentIdentity::save(&agent, &token, &dir).unwrap();
    let dir_arg = dir.to_str().unwrap();
    let args = parse(&[&base[..], &["--identity-dir", dir_arg]].concat()).unwrap();
    let message = args.into_config().unwrap_err().to_string();
    assert!(
        message.contains("is for host \"web-2\", not \"web-1\"")
            && message.contains(&format!("{hint} {dir_arg}` (admin)")),
        "{message}"
    );

    // Issued for web-1: it starts, from the directory.
    let (_, token) = issue_certificate(
        &api.signer,
        "web-1",
        &agent.public_key(),
        now - 60,
        now + 3600,
    )
    .unwrap();
    AgentIdentity::save(&agent, &token, &dir).unwrap();
    let args = parse(&[&base[..], &["--identity-dir", dir_arg]].concat()).unwrap();
    let config = args.into_config().unwrap();
    assert_eq!(config.identity.certificate().public_key, agent.public_key());
    fs::remove_file(&api.path).unwrap();
}

#[test]
fn an_enrollment_token_needs_the_apis_url_and_is_not_used_over_an_identity() {
    let (api, _) = key_file();
    let key = api.path.to_str().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let identity_dir = dir.path().join("identity");
    let flags = [
        "--command-public-key",
        key,
        "--host-id",
        "web-1",
        "--identity-dir",
        identity_dir.to_str().unwrap(),
        "--enrollment-token",
        "odp-enroll-x",
    ];
    let mut args = parse(&flags).unwrap();
    args.api_url = None;
    let error = args.into_config().unwrap_err().to_string();
    assert!(
        error.contains("--enrollment-token needs --api-url"),
        "{error}"
    );
    // With an identity (here from the environment) nothing is asked of
    // the API, which is nowhere.
    let mut args = parse(&flags).unwrap();
    args.api_url = Some("http://127.0.0.1:9".into());
    let config = enrolled(&api, args).into_config().unwrap();
    assert_eq!(config.identity.certificate().host, "web-1");
    assert!(!identity_dir.exists());
    // The token stays out of Debug output.
    let args = parse(&flags).unwrap();
    assert!(!format!("{args:?}").contains("odp-enroll-x"));
    fs::remove_file(&api.path).unwrap();
}
