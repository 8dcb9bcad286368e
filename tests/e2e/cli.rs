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
