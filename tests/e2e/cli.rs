//! `odpctl` against the real platform: the commands work and their exit
//! codes say what went wrong.

use std::process::Output;

use odp_devstack::{mint_scoped_token, workspace_binary};

use crate::common;

use common::odpctl;

fn text(output: &Output) -> String {
    format!(
        "exit {:?}\nstdout:\n{}\nstderr:\n{}",
        output.status.code(),
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn odpctl_profiles_the_demo_and_reports_errors_by_exit_code() {
    let h = common::start("cli", 1).await;
    let demo = h.spawn_demo();
    let pid = demo.pid().to_string();
    let host = h.platform.host_id.clone();
    let token = h.platform.token.clone();

    let start = [
        "start",
        "--host",
        &host,
        "--pid",
        &pid,
        "--duration-secs",
        "3",
        "--frequency-hz",
        "199",
        "--wait",
    ];
    // odpctl blocks; keep the runtime's other tasks going meanwhile.
    let output = tokio::task::block_in_place(|| odpctl(&h, &token, &start));
    assert_eq!(output.status.code(), Some(0), "{}", text(&output));
    let stdout = String::from_utf8_lossy(&output.stdout);
    let id = stdout.lines().next().unwrap().trim().to_owned();
    let first_function = stdout.lines().nth(3).unwrap_or_default();
    assert!(first_function.starts_with("demo_hot"), "{}", text(&output));

    let list = tokio::task::block_in_place(|| odpctl(&h, &token, &["list", "--host", &host]));
    assert_eq!(list.status.code(), Some(0), "{}", text(&list));
    assert!(String::from_utf8_lossy(&list.stdout).contains(&id));

    let svg = h.stack.state_dir().join("flame.svg");
    let svg_arg = svg.to_str().unwrap();
    let written =
        tokio::task::block_in_place(|| odpctl(&h, &token, &["flamegraph", &id, "-o", svg_arg]));
    assert_eq!(written.status.code(), Some(0), "{}", text(&written));
    assert!(std::fs::read_to_string(&svg).unwrap().contains("demo_hot"));

    let unknown = tokio::task::block_in_place(|| {
        odpctl(
            &h,
            &token,
            &["status", "00000000-0000-0000-0000-000000000000"],
        )
    });
    assert_eq!(unknown.status.code(), Some(4), "{}", text(&unknown));
    let viewer = mint_scoped_token(&h.platform.jwt_secret, "v", "viewer", &[]).unwrap();
    let refused = tokio::task::block_in_place(|| {
        odpctl(&h, &viewer, &["start", "--host", &host, "--pid", &pid])
    });
    assert_eq!(refused.status.code(), Some(3), "{}", text(&refused));
    let bad = tokio::task::block_in_place(|| {
        odpctl(&h, &token, &["start", "--host", "bad host", "--pid", &pid])
    });
    assert_eq!(bad.status.code(), Some(2), "{}", text(&bad));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn odpctl_mints_tokens_and_manages_hosts() {
    let h = common::start_configured("cli-admin", |options| {
        options.window_secs = 1;
        options.local_deployer = true;
    })
    .await;
    let host = h.platform.host_id.clone();
    let mint = |role: &str| {
        let output = std::process::Command::new(workspace_binary("odpctl").unwrap())
            .args([
                "token", "create", "--sub", "ci", "--role", role, "--ttl", "10m",
            ])
            .env("ODP_JWT_SECRET", &h.platform.jwt_secret)
            .output()
            .expect("run odpctl");
        assert_eq!(output.status.code(), Some(0), "{}", text(&output));
        String::from_utf8(output.stdout).unwrap().trim().to_owned()
    };
    let (viewer, admin) = (mint("viewer"), mint("admin"));

    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    loop {
        let hosts = tokio::task::block_in_place(|| odpctl(&h, &viewer, &["hosts"]));
        assert_eq!(hosts.status.code(), Some(0), "{}", text(&hosts));
        let table = String::from_utf8_lossy(&hosts.stdout);
        if table
            .lines()
            .any(|l| l.starts_with(&host) && l.contains(" yes "))
        {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "no live agent: {table}"
        );
        tokio::time::sleep(std::time::Duration::from_millis(500)).await;
    }

    let other = format!("{host}-2");
    let deployed =
        tokio::task::block_in_place(|| odpctl(&h, &admin, &["deploy", &other, "--wait"]));
    assert_eq!(deployed.status.code(), Some(0), "{}", text(&deployed));
    assert!(text(&deployed).contains("finished"), "{}", text(&deployed));
    let requests = tokio::task::block_in_place(|| {
        odpctl(
            &h,
            &viewer,
            &["requests", "--kind", "deploy", "--host", &other],
        )
    });
    assert_eq!(requests.status.code(), Some(0), "{}", text(&requests));
    assert!(
        text(&requests).contains("the agent is live"),
        "{}",
        text(&requests)
    );

    let refused =
        tokio::task::block_in_place(|| odpctl(&h, &viewer, &["undeploy", &host, "--mode", "now"]));
    assert_eq!(refused.status.code(), Some(3), "{}", text(&refused));
    let undeployed =
        tokio::task::block_in_place(|| odpctl(&h, &admin, &["undeploy", &host, "--mode", "now"]));
    assert_eq!(undeployed.status.code(), Some(0), "{}", text(&undeployed));
    let bad_role = std::process::Command::new(workspace_binary("odpctl").unwrap())
        .args(["token", "create", "--sub", "ci", "--role", "root"])
        .env("ODP_JWT_SECRET", &h.platform.jwt_secret)
        .output()
        .unwrap();
    assert_eq!(bad_role.status.code(), Some(2), "{}", text(&bad_role));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn odpctl_defines_a_service_and_runs_it_until_precise() {
    let h = common::start_configured("cli-runs", |o| {
        o.agent_env.push(("ODP_LABELS".into(), "zone=eu-1".into()));
    })
    .await;
    let _demo = h.spawn_demo_for(120);
    let host = h.platform.host_id.clone();
    let token = h.platform.token.clone();
    let ctl = |args: &[&str]| tokio::task::block_in_place(|| odpctl(&h, &token, args));

    let created = ctl(&[
        "services",
        "create",
        "demo",
        "--process-name",
        "cpu-split",
        "--owner-team",
        "perf",
    ]);
    assert_eq!(created.status.code(), Some(0), "{}", text(&created));
    assert_eq!(String::from_utf8_lossy(&created.stdout).trim(), "demo");
    let again = ctl(&["services", "create", "demo", "--cmdline", "x"]);
    assert_eq!(
        again.status.code(),
        Some(5),
        "a taken name: {}",
        text(&again)
    );
    let list = ctl(&["services", "list"]);
    assert_eq!(list.status.code(), Some(0), "{}", text(&list));
    let stdout = String::from_utf8_lossy(&list.stdout);
    assert!(
        stdout
            .lines()
            .any(|l| l.starts_with("demo ") && l.contains("perf") && l.contains("cpu-split")),
        "{}",
        text(&list)
    );

    // The agent reports the service's process in a heartbeat or two.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    loop {
        let hosts = ctl(&["services", "hosts", "demo"]);
        assert_eq!(hosts.status.code(), Some(0), "{}", text(&hosts));
        let table = String::from_utf8_lossy(&hosts.stdout).into_owned();
        let row = table.lines().find(|l| l.starts_with(&format!("{host} ")));
        if let Some(row) = row {
            let words: Vec<&str> = row.split_whitespace().collect();
            assert_eq!(words[1], "eu-1", "the zone column: {table}");
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "the host never ran the service: {table}\n{}",
            h.platform.logs()
        );
        tokio::time::sleep(std::time::Duration::from_millis(500)).await;
    }

    let run = ctl(&[
        "run",
        "start",
        "demo",
        "--count",
        "1",
        "--stop-top",
        "3",
        "--stop-stderr",
        "0.02",
        "--duration",
        "60",
        "--window",
        "2",
        "--wait",
    ]);
    assert_eq!(
        run.status.code(),
        Some(0),
        "{}\n{}",
        text(&run),
        h.platform.logs()
    );
    let stdout = String::from_utf8_lossy(&run.stdout);
    let id = stdout.lines().next().unwrap().trim().to_owned();
    let stderr = String::from_utf8_lossy(&run.stderr);
    assert!(
        stderr.contains(&format!("run {id}: 1 of 1 live host(s) chosen (count 1)")),
        "{}",
        text(&run)
    );
    assert!(
        stderr.contains(&format!("run {id} precise: stop rule met")),
        "{}",
        text(&run)
    );
    // The top shares, with their errors: demo_hot has 60% of the samples.
    assert!(
        stdout
            .lines()
            .nth(1)
            .unwrap_or_default()
            .contains("samples of 1 host(s)"),
        "{}",
        text(&run)
    );
    let hot = stdout.lines().nth(3).unwrap_or_default();
    assert!(
        hot.starts_with("demo_hot") && hot.contains("% ± "),
        "{}",
        text(&run)
    );

    let show = ctl(&["run", "show", &id]);
    assert_eq!(show.status.code(), Some(0), "{}", text(&show));
    let summary = String::from_utf8_lossy(&show.stdout);
    assert!(summary.contains("status     precise"), "{summary}");
    assert!(
        summary.contains("(target ±2.00% for the top 3)"),
        "{summary}"
    );
    assert!(
        summary
            .lines()
            .any(|l| l.starts_with(&format!("{host} ")) && l.contains("stopped")),
        "{summary}"
    );
    let listed = ctl(&["run", "list", "--service", "demo"]);
    assert_eq!(listed.status.code(), Some(0), "{}", text(&listed));
    assert!(String::from_utf8_lossy(&listed.stdout).contains(&id));
    let stopped = ctl(&["run", "stop", &id]);
    assert_eq!(
        stopped.status.code(),
        Some(5),
        "an ended run: {}",
        text(&stopped)
    );
    let unknown = ctl(&["run", "show", "00000000-0000-0000-0000-000000000000"]);
    assert_eq!(unknown.status.code(), Some(4), "{}", text(&unknown));
}
