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
        stderr.contains(&format!("run {id}: 1 of 1 live host chosen (count 1)")),
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
            .contains("samples of 1 host;"),
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

/// Standard output and error of `output`, as text.
fn streams(output: &Output) -> (String, String) {
    (
        String::from_utf8_lossy(&output.stdout).into_owned(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn odpctl_reads_as_summaries_and_answers_bad_ids_and_empty_ranges_alike() {
    let h = common::start("cli-read", 1).await;
    let demo = h.spawn_demo();
    let pid = demo.pid().to_string();
    let host = h.platform.host_id.clone();
    let token = h.platform.token.clone();
    let ctl = |args: &[&str]| tokio::task::block_in_place(|| odpctl(&h, &token, args));
    let ok = |args: &[&str]| {
        let output = ctl(args);
        assert_eq!(output.status.code(), Some(0), "{args:?}: {}", text(&output));
        streams(&output)
    };

    // Not a terminal: plain progress lines on standard error, with the
    // time left and the samples so far (a line when the status changes
    // and every 5 s: 10 s of profiling has one in the middle), then the
    // top functions by self time without the callers' empty rows.
    let (stdout, stderr) = ok(&[
        "start",
        "--host",
        &host,
        "--pid",
        &pid,
        "--service",
        "cli-demo",
        "--duration-secs",
        "10",
        "--frequency-hz",
        "199",
        "--wait",
    ]);
    let id = stdout.lines().next().unwrap().trim().to_owned();
    assert!(
        stderr.contains(&format!("{id}: running, ")) && stderr.contains(" left"),
        "{stderr}"
    );
    assert!(stderr.contains("samples so far"), "{stderr}");
    assert!(stderr.contains("finished after "), "{stderr}");
    assert!(
        !stderr.contains('\r'),
        "no redrawing off a terminal: {stderr:?}"
    );
    assert!(
        stdout
            .lines()
            .nth(3)
            .unwrap_or_default()
            .starts_with("demo_hot"),
        "{stdout}"
    );
    assert!(!stdout.contains("0.0% ± 0.0"), "{stdout}");

    // `status` is a summary; `--json` the API's body.
    let (summary, _) = ok(&["status", &id]);
    let field = |name: &str| {
        summary
            .lines()
            .find(|l| l.starts_with(&format!("{name} ")))
            .map(|l| l[name.len()..].trim().to_owned())
            .unwrap_or_else(|| panic!("no {name} in\n{summary}"))
    };
    assert_eq!(field("id"), id);
    assert_eq!(field("service"), "cli-demo");
    assert!(field("state").starts_with("finished"), "{summary}");
    assert!(field("runtime").starts_with("native"), "{summary}");
    assert!(field("samples").contains("hottest demo_hot"), "{summary}");
    assert!(summary.lines().count() < 25, "{summary}");
    let (json, _) = ok(&["status", &id, "--json"]);
    let body: serde_json::Value = serde_json::from_str(&json).unwrap();
    assert_eq!(body["id"], id.as_str());

    // Kernel frames of a loaded machine fill the default 15 rows.
    let (all, _) = ok(&["top", &id, "--include-callers", "--limit", "200"]);
    assert!(
        all.lines().any(|l| l.starts_with("main ")),
        "callers on asking: {all}"
    );

    // A malformed id is bad usage (2) whichever command takes it.
    let bad_ids: [&[&str]; 9] = [
        &["status", "nope"],
        &["top", "nope"],
        &["stop", "nope"],
        &["flamegraph", "nope"],
        &["diff", "nope", &id],
        &["run", "show", "nope"],
        &["run", "wait", "nope"],
        &["schedules", "show", "nope"],
        &["channels", "show", "nope"],
    ];
    for args in bad_ids {
        let output = ctl(args);
        assert_eq!(output.status.code(), Some(2), "{args:?}: {}", text(&output));
        assert!(
            text(&output).contains("\"nope\" is not a"),
            "{}",
            text(&output)
        );
    }

    // The last hour, by a span; a range without profiles is the same
    // error (4) in every format, and nothing on standard output.
    let (table, _) = ok(&["aggregate", "--service", "cli-demo", "--since", "1h"]);
    assert!(table.contains("of 1 profile on 1 host"), "{table}");
    assert!(
        table
            .lines()
            .nth(2)
            .unwrap_or_default()
            .starts_with("demo_hot"),
        "{table}"
    );
    for format in ["table", "json", "folded", "svg", "pprof", "speedscope"] {
        let mut args = vec![
            "aggregate",
            "--service",
            "cli-demo",
            "--since",
            "2d",
            "--until",
            "1d",
        ];
        if format != "table" {
            args.extend(["--format", format]);
        }
        let output = ctl(&args);
        assert_eq!(output.status.code(), Some(4), "{format}: {}", text(&output));
        let (stdout, stderr) = streams(&output);
        assert!(stdout.is_empty(), "{format}: {}", text(&output));
        assert!(
            stderr.starts_with("odpctl: no profiles of cli-demo between "),
            "{format}: {stderr}"
        );
    }

    // Two profiles of different events are refused, by odpctl without
    // --force and by the API with it; one profile against itself changed
    // nowhere.
    let (stdout, _) = ok(&[
        "start",
        "--host",
        &host,
        "--pid",
        &pid,
        "--service",
        "cli-demo",
        "--duration-secs",
        "2",
        "--event",
        "wall",
        "--wait",
    ]);
    let wall = stdout.lines().next().unwrap().trim().to_owned();
    let refused = ctl(&["diff", &id, &wall]);
    assert_eq!(refused.status.code(), Some(2), "{}", text(&refused));
    assert!(
        text(&refused).contains("different events") && text(&refused).contains("--force"),
        "{}",
        text(&refused)
    );
    let forced = ctl(&["diff", &id, &wall, "--force"]);
    assert_eq!(forced.status.code(), Some(2), "{}", text(&forced));
    let (same, _) = ok(&["diff", &id, &id]);
    let header = same
        .lines()
        .find(|l| l.starts_with("function "))
        .unwrap_or_else(|| panic!("no header: {same}"));
    assert_eq!(
        header.split_whitespace().collect::<Vec<_>>(),
        ["function", "baseline", "target", "change"]
    );
    assert!(
        same.lines()
            .filter(|l| l.contains(" ± "))
            .all(|l| !l.ends_with('*')),
        "nothing changes against itself: {same}"
    );

    // import tells the format from the file.
    let folded = h.stack.state_dir().join("stacks.txt");
    std::fs::write(&folded, "main;demo_hot 90\nmain;demo_warm 10\n").unwrap();
    let (stdout, stderr) = ok(&[
        "import",
        "--service",
        "cli-imported",
        folded.to_str().unwrap(),
    ]);
    assert!(stderr.contains("as folded"), "{stderr}");
    let imported = stdout.trim().to_owned();
    let pprof = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../core/tests/fixtures/go-cpu.pb.gz"
    );
    let (_, stderr) = ok(&["import", "--service", "cli-imported", pprof]);
    assert!(stderr.contains("as pprof"), "{stderr}");
    let unknown = h.stack.state_dir().join("notes.txt");
    std::fs::write(&unknown, "not a profile\n").unwrap();
    let refused = ctl(&["import", "--service", "x", unknown.to_str().unwrap()]);
    assert_eq!(refused.status.code(), Some(2), "{}", text(&refused));
    // An imported profile has no runtime to hold against a comparison.
    ok(&["diff", &id, &imported]);
}

/// A Python process, ended when dropped.
struct Python(std::process::Child);

impl Drop for Python {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn odpctl_compares_profiles_of_different_runtimes_only_when_forced() {
    let h = common::start("cli-runtimes", 1).await;
    let demo = h.spawn_demo();
    let python = Python(
        std::process::Command::new("python3")
            .args([
                "-c",
                "import time\nend = time.time() + 120\nwhile time.time() < end: sum(i * i for i in range(1000))",
            ])
            .spawn()
            .expect("run python3"),
    );
    let host = h.platform.host_id.clone();
    let token = h.platform.token.clone();
    let ctl = |args: &[&str]| tokio::task::block_in_place(|| odpctl(&h, &token, args));
    let profile = |pid: u32, service: &str| {
        let pid = pid.to_string();
        let output = ctl(&[
            "start",
            "--host",
            &host,
            "--pid",
            &pid,
            "--service",
            service,
            "--duration-secs",
            "3",
            "--wait",
        ]);
        assert_eq!(output.status.code(), Some(0), "{}", text(&output));
        streams(&output).0.lines().next().unwrap().trim().to_owned()
    };
    let native = profile(demo.pid(), "cli-native");
    let python_id = profile(python.0.id(), "cli-python");

    let status = ctl(&["status", &python_id]);
    let (summary, _) = streams(&status);
    assert!(
        summary
            .lines()
            .any(|l| l.starts_with("runtime ") && l.contains("python 3.") && l.contains("package")),
        "{summary}"
    );

    let refused = ctl(&["diff", &native, &python_id]);
    assert_eq!(refused.status.code(), Some(2), "{}", text(&refused));
    assert!(
        text(&refused).contains("different runtimes"),
        "{}",
        text(&refused)
    );
    let forced = ctl(&["diff", &native, &python_id, "--force"]);
    assert_eq!(forced.status.code(), Some(0), "{}", text(&forced));
    let (stdout, stderr) = streams(&forced);
    assert!(stderr.contains("comparing anyway"), "{stderr}");
    assert!(
        stdout
            .lines()
            .any(|l| l.starts_with("runtime ") && l.contains("native") && l.contains("→ python")),
        "{stdout}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn odpctl_waits_through_an_api_restart_and_deploys_say_their_result_once() {
    let mut h = common::start_configured("cli-retry", |options| {
        options.window_secs = 1;
        options.local_deployer = true;
    })
    .await;
    let demo = h.spawn_demo();
    let host = h.platform.host_id.clone();
    let token = h.platform.token.clone();

    let waiting = std::process::Command::new(workspace_binary("odpctl").unwrap())
        .args(["--api-url", &h.platform.api_url, "--token", &token])
        .arg("--cacert")
        .arg(&h.platform.ca_path)
        .args(["start", "--host", &host, "--pid", &demo.pid().to_string()])
        .args(["--duration-secs", "8", "--wait"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("run odpctl");
    tokio::time::sleep(std::time::Duration::from_secs(3)).await;
    h.platform.api.kill().unwrap();
    tokio::time::sleep(std::time::Duration::from_secs(4)).await;
    h.platform.api.respawn().unwrap();
    let output = tokio::task::block_in_place(|| waiting.wait_with_output()).unwrap();
    assert_eq!(
        output.status.code(),
        Some(0),
        "{}\n{}",
        text(&output),
        h.platform.logs()
    );
    let (stdout, stderr) = streams(&output);
    assert!(
        stderr.contains("API unreachable, retrying (attempt 2)…"),
        "{stderr}"
    );
    assert!(
        stdout
            .lines()
            .nth(3)
            .unwrap_or_default()
            .starts_with("demo_hot"),
        "{stdout}"
    );

    let other = format!("{host}-2");
    let deployed =
        tokio::task::block_in_place(|| odpctl(&h, &token, &["deploy", &other, "--wait"]));
    assert_eq!(deployed.status.code(), Some(0), "{}", text(&deployed));
    let (_, stderr) = streams(&deployed);
    let said: Vec<&str> = stderr
        .lines()
        .filter(|l| l.starts_with("deploy to "))
        .collect();
    assert_eq!(said.len(), 1, "{stderr}");
    assert!(said[0].contains("finished"), "{stderr}");
}
