use std::time::Duration;

use odp_devstack::{
    build_demo, DatabaseKind, Platform, PlatformOptions, ServiceProcess, Stack, StackEndpoints,
    StackOptions,
};
use odp_plumbing::Topics;

/// A stack with topics of its own and the three services started.
pub(crate) struct Harness {
    pub(crate) stack: Stack,
    pub(crate) platform: Platform,
}

pub(crate) async fn start(name: &str, window_secs: u64) -> Harness {
    start_configured(name, |options| options.window_secs = window_secs).await
}

/// [`start`] on the `database` server.
pub(crate) async fn start_on(database: DatabaseKind, name: &str, window_secs: u64) -> Harness {
    start_configured_on(database, name, |options| options.window_secs = window_secs).await
}

/// The stack with api-server and pipeline only, for tests of the API.
pub(crate) async fn start_without_agent(name: &str) -> Harness {
    start_configured(name, |options| options.with_agent = false).await
}

/// Without an agent, and starts expire after `ack_timeout_secs`.
pub(crate) async fn start_without_agent_expiring(name: &str, ack_timeout_secs: u64) -> Harness {
    start_configured(name, |options| {
        options.with_agent = false;
        options.start_ack_timeout_secs = Some(ack_timeout_secs);
    })
    .await
}

/// The stack and services, with `configure` adjusting the services'
/// options (agent, window, api-server environment) before they start.
pub(crate) async fn start_configured(
    name: &str,
    configure: impl FnOnce(&mut PlatformOptions),
) -> Harness {
    start_configured_on(DatabaseKind::Postgres, name, configure).await
}

/// [`start_configured`] on the `database` server.
pub(crate) async fn start_configured_on(
    database: DatabaseKind,
    name: &str,
    configure: impl FnOnce(&mut PlatformOptions),
) -> Harness {
    let _ = tracing_subscriber::fmt()
        .with_test_writer()
        .with_env_filter("info")
        .try_init();
    let prefix = format!(
        "{name}-{}-",
        &uuid::Uuid::new_v4().simple().to_string()[..8]
    );
    let options = StackOptions::ephemeral()
        .topics(Topics::with_prefix(&prefix))
        .database_kind(database);
    let stack = Stack::start(options)
        .await
        .expect("start the stack (is tansu installed? see README)");
    let endpoints = StackEndpoints {
        kafka_bootstrap: stack.kafka_bootstrap().to_owned(),
        database_url: stack.database_url().to_owned(),
        topics: stack.topics().clone(),
    };
    let mut options = PlatformOptions::new(stack.state_dir(), format!("{prefix}host"));
    configure(&mut options);
    let platform = Platform::start(&endpoints, options)
        .await
        .expect("start the services");
    Harness { stack, platform }
}

impl Harness {
    /// Builds and starts the demo workload (demo/cpu-split.c) for two
    /// minutes; it is stopped when the returned handle drops.
    pub(crate) fn spawn_demo(&self) -> ServiceProcess {
        self.spawn_demo_for(120)
    }

    /// The demo workload for `seconds`.
    pub(crate) fn spawn_demo_for(&self, seconds: u64) -> ServiceProcess {
        let binary = build_demo(&self.stack.state_dir().join("demo")).expect("build the demo");
        ServiceProcess::builder("demo", &binary)
            .args(["--seconds", &seconds.to_string()])
            .log_dir(self.stack.log_dir())
            .spawn()
            .expect("start the demo")
    }

    /// The demo program copied under `name`, so that a process-name target
    /// finds only what this test starts, and not the `cpu-split` demos of
    /// the tests running beside it on the same machine.
    pub(crate) fn renamed_demo(&self, name: &str) -> std::path::PathBuf {
        let dir = self.stack.state_dir().join(name);
        let demo = build_demo(&dir).expect("build the demo");
        let renamed = dir.join(name);
        std::fs::copy(&demo, &renamed).expect("copy the demo");
        renamed
    }

    /// The prefix simulated hosts are named with, so they are this
    /// harness's: the harness names its own host `{prefix}host`.
    pub(crate) fn sim_prefix(&self) -> String {
        self.platform
            .host_id
            .strip_suffix("host")
            .expect("the harness names its host {prefix}host")
            .to_owned()
    }

    /// Fleet simulator options for `hosts` on this stack, certified with
    /// its command key.
    pub(crate) fn fleet_options(
        &self,
        hosts: Vec<odp_devstack::fleet::SimHost>,
    ) -> odp_devstack::fleet::FleetOptions {
        let pem =
            std::fs::read_to_string(&self.platform.signing_key).expect("the command signing key");
        odp_devstack::fleet::FleetOptions::new(
            self.stack.kafka_bootstrap(),
            self.stack.topics(),
            &pem,
            hosts,
        )
        .expect("the fleet fixtures")
    }

    /// The store on the stack's database, Postgres or MySQL.
    pub(crate) async fn store(&self) -> odp_store::Database {
        self.stack.store().await.expect("connect to the database")
    }

    pub(crate) async fn pool(&self) -> sqlx::PgPool {
        sqlx::PgPool::connect(self.stack.database_url())
            .await
            .expect("connect to postgres")
    }

    /// Polls `query` (a count, `bind` its one parameter) until it reaches
    /// `want`, or panics with the services' logs.
    pub(crate) async fn wait_count<B>(
        &self,
        pool: &sqlx::PgPool,
        query: &str,
        bind: B,
        want: i64,
        timeout: Duration,
    ) where
        B: for<'q> sqlx::Encode<'q, sqlx::Postgres>
            + sqlx::Type<sqlx::Postgres>
            + std::fmt::Display
            + Copy,
    {
        let deadline = tokio::time::Instant::now() + timeout;
        loop {
            let (n,): (i64,) = sqlx::query_as(query)
                .bind(bind)
                .fetch_one(pool)
                .await
                .expect("count query");
            if n >= want {
                return;
            }
            if tokio::time::Instant::now() > deadline {
                panic!(
                    "timed out waiting for {query} ({bind}) to reach {want}, at {n}\n{}",
                    self.platform.logs()
                );
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    }
}

pub(crate) fn producer(bootstrap: &str) -> rdkafka::producer::FutureProducer {
    rdkafka::ClientConfig::new()
        .set("bootstrap.servers", bootstrap)
        .set("partitioner", "murmur2_random")
        .create()
        .expect("create producer")
}

pub(crate) async fn send(
    producer: &rdkafka::producer::FutureProducer,
    topic: &str,
    key: &str,
    payload: &[u8],
) {
    producer
        .send(
            rdkafka::producer::FutureRecord::to(topic)
                .key(key)
                .payload(payload),
            Duration::from_secs(15),
        )
        .await
        .map_err(|(e, _)| e)
        .expect("produce");
}

/// A new identity for an agent of `host`, certified with the harness's
/// command key as the api-server certifies the agents it deploys.
pub(crate) fn agent_identity(h: &Harness, host: &str) -> odp_core::identity::AgentIdentity {
    odp_devstack::agent_identity::issue_identity(&h.platform.signing_key, host, "e2e")
        .expect("issue an agent identity")
        .identity
}

/// Sends `payload` as `identity`'s agent would: signed for `topic`'s
/// channel (the harness's stacks or events topic).
pub(crate) async fn send_signed(
    h: &Harness,
    producer: &rdkafka::producer::FutureProducer,
    identity: &odp_core::identity::AgentIdentity,
    topic: &str,
    key: &str,
    payload: &[u8],
) {
    let channel = if topic == h.stack.topics().events {
        odp_core::identity::Channel::Events
    } else {
        assert_eq!(
            topic,
            h.stack.topics().stacks,
            "agents send only stacks and events"
        );
        odp_core::identity::Channel::Stacks
    };
    let signature = identity.sign(channel, payload);
    producer
        .send(
            rdkafka::producer::FutureRecord::to(topic)
                .key(key)
                .payload(payload)
                .headers(odp_plumbing::signed::headers(&signature)),
            Duration::from_secs(15),
        )
        .await
        .map_err(|(e, _)| e)
        .expect("produce");
}

/// A message of the dead-letter topic: its bytes and the reason given.
pub(crate) struct DeadLetter {
    pub(crate) payload: Vec<u8>,
    pub(crate) reason: String,
}

/// The first `count` dead letters keyed `key`, in order, waiting up to a
/// minute for each.
pub(crate) async fn dead_letters(h: &Harness, key: &str, count: usize) -> Vec<DeadLetter> {
    use rdkafka::consumer::{Consumer, StreamConsumer};
    use rdkafka::message::{Headers, Message};
    let consumer: StreamConsumer = rdkafka::ClientConfig::new()
        .set("bootstrap.servers", h.stack.kafka_bootstrap())
        .set("group.id", format!("test-{}", uuid::Uuid::new_v4()))
        .set("auto.offset.reset", "earliest")
        .create()
        .unwrap();
    consumer
        .subscribe(&[&h.stack.topics().dead_letter])
        .unwrap();
    let mut letters = Vec::new();
    while letters.len() < count {
        let message = tokio::time::timeout(Duration::from_secs(60), consumer.recv())
            .await
            .unwrap_or_else(|_| {
                let reasons: Vec<&str> = letters
                    .iter()
                    .map(|l: &DeadLetter| l.reason.as_str())
                    .collect();
                panic!(
                    "{} of {count} dead letters for {key}: {reasons:?}\n{}",
                    letters.len(),
                    h.platform.logs()
                )
            })
            .unwrap();
        if message.key() != Some(key.as_bytes()) {
            continue;
        }
        let reason = message
            .headers()
            .and_then(|hs| hs.iter().find(|x| x.key == "odp-reason"))
            .and_then(|x| x.value)
            .map(|v| String::from_utf8_lossy(v).into_owned())
            .expect("a dead letter gives its reason");
        letters.push(DeadLetter {
            payload: message.payload().unwrap_or_default().to_vec(),
            reason,
        });
    }
    letters
}

/// Records a profile of `service` on `host` as the API does when it is
/// asked for one, so agent data for it is taken: the pipeline refuses
/// windows of profiles that do not exist or run on another host.
pub(crate) async fn record_profile(h: &Harness, id: uuid::Uuid, host: &str, service: &str) {
    odp_store::Profiles::new(h.store().await)
        .insert(&odp_store::NewProfile {
            id,
            host: host.into(),
            service: service.into(),
            idempotency_key: None,
            target: odp_core::Target::ProcessName(service.into()),
            duration_ms: 60_000,
            frequency_hz: 99,
            requested_by: "e2e".into(),
            labels: odp_store::Labels::new(),
            mode: odp_store::ProfileMode::of(None),
            options: odp_core::cost::StartOptions::default(),
            run_id: None,
        })
        .await
        .expect("record the profile");
}

/// Runs the built `odpctl` against the harness's api-server with `token`.
pub(crate) fn odpctl(h: &Harness, token: &str, args: &[&str]) -> std::process::Output {
    std::process::Command::new(odp_devstack::workspace_binary("odpctl").expect("odpctl is built"))
        .args(["--api-url", &h.platform.api_url, "--token", token])
        .arg("--cacert")
        .arg(&h.platform.ca_path)
        .args(args)
        .output()
        .expect("run odpctl")
}

/// Polls `GET path` until `done` holds of its body, for at most `within`;
/// the last body either way.
pub(crate) async fn wait_for_body(
    client: &odp_devstack::ApiClient,
    path: &str,
    within: std::time::Duration,
    done: impl Fn(&serde_json::Value) -> bool,
) -> serde_json::Value {
    let start = std::time::Instant::now();
    loop {
        let body = client
            .call(reqwest::Method::GET, path, None, 200)
            .await
            .unwrap_or_else(|e| panic!("GET {path}: {e}"));
        if done(&body) || start.elapsed() > within {
            return body;
        }
        tokio::time::sleep(std::time::Duration::from_millis(500)).await;
    }
}

/// Defines the service `demo` (the demo program, `cpu-split`) and waits
/// until the platform's agent reports running it; the hosts found.
pub(crate) async fn define_demo_service(h: &Harness) -> serde_json::Value {
    let admin = h.platform.client();
    admin
        .call(
            reqwest::Method::POST,
            "/api/v1/services",
            Some(&serde_json::json!({"name": "demo", "process_name": "cpu-split"})),
            201,
        )
        .await
        .expect("define the service");
    let found = wait_for_body(
        &admin,
        "/api/v1/services/demo/hosts",
        Duration::from_secs(60),
        |b| b["hosts"].as_array().is_some_and(|hosts| !hosts.is_empty()),
    )
    .await;
    assert_eq!(
        found["hosts"].as_array().map(Vec::len),
        Some(1),
        "{found}\n{}",
        h.platform.logs()
    );
    found
}

/// A log without its terminal colours.
pub(crate) fn plain_log(log: &str) -> String {
    let mut out = String::with_capacity(log.len());
    let mut chars = log.chars();
    while let Some(c) = chars.next() {
        if c == '\u{1b}' {
            // `ESC [ … m`: skip to the final letter.
            for c in chars.by_ref() {
                if c.is_ascii_alphabetic() {
                    break;
                }
            }
        } else {
            out.push(c);
        }
    }
    out
}
