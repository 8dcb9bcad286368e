//! The docs work as written: every ```sh / ```bash block of docs/api.md
//! and docs/clients.md runs, in order, in one `bash -euo pipefail` session
//! per document (so variables carry from block to block), against a real
//! stack set up as `scripts/quickstart.sh` leaves it: the three services,
//! the local deployer, the demo workload, and a directory laid out like
//! the repository root after the quick start (`.odp/services.json`,
//! `.odp/keys/`), with the built `odpctl` and `odp-api-server` first on
//! PATH. Every block must exit 0; a failure prints the block with its
//! output.
//!
//! A block that must not run (a real SMTP server, a browser, a production
//! setup) is preceded by `<!-- docs-test: skip (the reason) -->`.

use std::os::unix::process::CommandExt as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use odp_devstack::{mint_scoped_token, repo_root, workspace_binary, ServicesRecord};

use crate::common;

/// The documents, in the order they run against the one stack. clients.md
/// deploys a second agent on this machine, which counts as live for a
/// while after it is taken off again; api.md's runs would choose it.
const DOCUMENTS: &[&str] = &["docs/api.md", "docs/clients.md"];

/// How long one document may take.
const DOCUMENT_TIMEOUT: Duration = Duration::from_secs(300);

/// How a block may be marked.
const MARKER: &str = "<!-- docs-test:";

/// A fenced shell block of a document.
#[derive(Debug, Clone, PartialEq)]
struct Block {
    /// The line of its opening fence (1-based).
    line: usize,
    text: String,
    /// Why it is not run, when marked so.
    skip: Option<String>,
}

/// The ```sh and ```bash blocks of `markdown`, with their skip markers. A
/// marker must be the last non-blank line before a shell block and give a
/// reason; anything else about markers is an error, so none is silently
/// ignored.
fn shell_blocks(markdown: &str) -> Result<Vec<Block>, String> {
    let mut blocks = Vec::new();
    // The pending marker: its line and reason.
    let mut marker: Option<(usize, String)> = None;
    // The open fence: its line, language and lines so far.
    let mut open: Option<(usize, String, Vec<&str>)> = None;
    for (index, line) in markdown.lines().enumerate() {
        let number = index + 1;
        let trimmed = line.trim();
        if let Some((start, language, body)) = &mut open {
            if trimmed.starts_with("```") && trimmed.trim_start_matches('`').is_empty() {
                let shell = matches!(language.as_str(), "sh" | "bash");
                let skip = marker.take();
                if shell {
                    blocks.push(Block {
                        line: *start,
                        text: body.join("\n") + "\n",
                        skip: skip.map(|(_, reason)| reason),
                    });
                } else if let Some((at, _)) = skip {
                    return Err(format!(
                        "line {at}: a docs-test marker before a ```{language} block (line {start}), \
                         which is never run"
                    ));
                }
                open = None;
            } else {
                body.push(line);
            }
            continue;
        }
        if let Some(info) = trimmed.strip_prefix("```") {
            let language = info.split_whitespace().next().unwrap_or_default();
            open = Some((number, language.to_owned(), Vec::new()));
            continue;
        }
        if let Some(rest) = trimmed.strip_prefix(MARKER) {
            let reason = rest
                .trim()
                .strip_prefix("skip")
                .and_then(|r| r.trim().strip_suffix("-->"))
                .map(str::trim)
                .and_then(|r| r.strip_prefix('('))
                .and_then(|r| r.strip_suffix(')'))
                .map(str::trim)
                .filter(|r| !r.is_empty())
                .ok_or_else(|| {
                    format!("line {number}: write `<!-- docs-test: skip (the reason) -->`")
                })?;
            if let Some((at, _)) = marker {
                return Err(format!("line {at}: a docs-test marker without its block"));
            }
            marker = Some((number, reason.to_owned()));
            continue;
        }
        if !trimmed.is_empty() {
            if let Some((at, _)) = marker.take() {
                return Err(format!(
                    "line {at}: a docs-test marker must come right before a ```sh block"
                ));
            }
        }
    }
    if let Some((start, _, _)) = open {
        return Err(format!("line {start}: a fence that is never closed"));
    }
    if let Some((at, _)) = marker {
        return Err(format!("line {at}: a docs-test marker without its block"));
    }
    Ok(blocks)
}

/// How one document's session went.
struct Session {
    /// Each block that ran, with how long it took.
    ran: Vec<(usize, Duration)>,
    /// The block running when it ended, and why it failed; `None` when
    /// every block exited 0.
    failure: Option<(usize, String)>,
}

/// The files of block `index` of the document `stem`.
fn block_file(dir: &Path, stem: &str, index: usize, suffix: &str) -> PathBuf {
    dir.join(format!("{stem}-{index:02}.{suffix}"))
}

/// Runs `blocks` (the ones not skipped) in one `bash -euo pipefail`
/// session in `work`, each sourced with its output in files of its own.
fn run_session(
    stem: &str,
    blocks: &[(usize, &Block)],
    work: &Path,
    path: &str,
    timeout: Duration,
) -> Session {
    let dir = work.join(".docs-test");
    std::fs::create_dir_all(&dir).expect("create the session's directory");
    let progress = dir.join(format!("{stem}.progress"));
    let quote = |path: &Path| format!("'{}'", path.display().to_string().replace('\'', r"'\''"));
    let mut driver = String::new();
    for &(index, block) in blocks {
        let script = block_file(&dir, stem, index, "sh");
        std::fs::write(&script, &block.text).expect("write a block");
        driver.push_str(&format!(
            "printf '%s %s\\n' {index} \"$EPOCHREALTIME\" >> {progress}\n\
             source {script} > {out} 2> {err}\n",
            progress = quote(&progress),
            script = quote(&script),
            out = quote(&block_file(&dir, stem, index, "out")),
            err = quote(&block_file(&dir, stem, index, "err")),
        ));
    }
    driver.push_str(&format!(
        "printf 'end %s\\n' \"$EPOCHREALTIME\" >> {}\n",
        quote(&progress)
    ));
    let driver_path = dir.join(format!("{stem}.driver.sh"));
    std::fs::write(&driver_path, driver).expect("write the driver");

    let mut command = Command::new("bash");
    command
        .args(["-euo", "pipefail"])
        .arg(&driver_path)
        .current_dir(work)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .process_group(0)
        .env("PATH", path);
    // A new user's shell: nothing of ODP's or curl's from the test's.
    for (key, _) in std::env::vars_os() {
        let key = key.to_string_lossy();
        if key.starts_with("ODP_") || key.starts_with("CURL_") {
            command.env_remove(key.as_ref());
        }
    }
    let mut child = command.spawn().expect("run bash");
    let started = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().expect("wait for bash") {
            break Some(status);
        }
        if started.elapsed() > timeout {
            // The session and whatever its blocks started.
            let _ = Command::new("kill")
                .args(["-KILL", "--", &format!("-{}", child.id())])
                .status();
            let _ = child.wait();
            break None;
        }
        std::thread::sleep(Duration::from_millis(200));
    };

    let marks: Vec<(String, f64)> = std::fs::read_to_string(&progress)
        .unwrap_or_default()
        .lines()
        .filter_map(|line| {
            let (what, at) = line.split_once(' ')?;
            Some((what.to_owned(), at.parse().ok()?))
        })
        .collect();
    let ran = marks
        .windows(2)
        .filter_map(|pair| {
            let index = pair[0].0.parse().ok()?;
            Some((
                index,
                Duration::from_secs_f64((pair[1].1 - pair[0].1).max(0.0)),
            ))
        })
        .collect();
    let last = marks.last().map(|(what, _)| what.as_str());
    let failure = match (status, last) {
        (Some(status), Some("end")) if status.success() => None,
        (status, last) => {
            let index = last.and_then(|l| l.parse().ok()).unwrap_or(0);
            let why = match status {
                Some(status) => format!("exited with {status}"),
                None => format!("did not end within {} s", timeout.as_secs()),
            };
            Some((index, why))
        }
    };
    Session { ran, failure }
}

/// The end of a file, at most `max` bytes of it.
fn tail(path: &Path, max: usize) -> String {
    let bytes = std::fs::read(path).unwrap_or_default();
    let start = bytes.len().saturating_sub(max);
    let text = String::from_utf8_lossy(&bytes[start..]).into_owned();
    if start > 0 {
        format!("[... {start} bytes before]\n{text}")
    } else {
        text
    }
}

#[test]
fn shell_blocks_are_found_with_their_markers() {
    let markdown = "intro\n\n```sh\necho one\n```\n\n<!-- docs-test: skip (needs SMTP) -->\n\
                    ```bash\necho two\n```\n\n```rust\nlet x = 1;\n```\n```\nplain\n```\n";
    let blocks = shell_blocks(markdown).unwrap();
    assert_eq!(
        blocks,
        vec![
            Block {
                line: 3,
                text: "echo one\n".into(),
                skip: None
            },
            Block {
                line: 8,
                text: "echo two\n".into(),
                skip: Some("needs SMTP".into())
            },
        ]
    );
    for (bad, why) in [
        (
            "<!-- docs-test: skip -->\n```sh\nx\n```\n",
            "a marker without a reason",
        ),
        (
            "<!-- docs-test: skip (r) -->\ntext\n```sh\nx\n```\n",
            "a marker away from its block",
        ),
        (
            "<!-- docs-test: skip (r) -->\n```rust\nx\n```\n",
            "a marker before a block that never runs",
        ),
        ("<!-- docs-test: skip (r) -->\n", "a marker at the end"),
        ("```sh\nx\n", "an open fence"),
    ] {
        assert!(shell_blocks(bad).is_err(), "{why} is accepted");
    }
}

#[test]
fn a_session_carries_variables_and_stops_at_the_failing_block() {
    let work = tempfile::tempdir().unwrap();
    let block = |line, text: &str| Block {
        line,
        text: text.into(),
        skip: None,
    };
    let blocks = [
        block(1, "X=carried\necho one\n"),
        block(5, "echo \"$X\"\necho oops >&2\nfalse\necho never\n"),
        block(9, "echo never\n"),
    ];
    let runnable: Vec<(usize, &Block)> = blocks.iter().enumerate().collect();
    let path = std::env::var("PATH").unwrap_or_default();
    let session = run_session("t", &runnable, work.path(), &path, Duration::from_secs(60));
    assert_eq!(session.ran.len(), 1);
    let (index, why) = session.failure.expect("the second block fails");
    assert_eq!(index, 1);
    assert!(why.contains("exited"), "{why}");
    let dir = work.path().join(".docs-test");
    assert_eq!(tail(&block_file(&dir, "t", 1, "out"), 100), "carried\n");
    assert_eq!(tail(&block_file(&dir, "t", 1, "err"), 100), "oops\n");
    assert!(!block_file(&dir, "t", 2, "out").exists());

    let slow = [block(1, "sleep 30\n")];
    let runnable: Vec<(usize, &Block)> = slow.iter().enumerate().collect();
    let session = run_session(
        "slow",
        &runnable,
        work.path(),
        &path,
        Duration::from_secs(1),
    );
    let (index, why) = session.failure.expect("the block times out");
    assert_eq!(index, 0);
    assert!(why.contains("did not end"), "{why}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn docs_command_blocks_run_as_written() {
    // As scripts/quickstart.sh starts it: its deployer starts agents on
    // this machine, for `odpctl deploy` and starts on other hosts.
    let h = common::start_configured("docs", |options| options.local_deployer = true).await;
    let demo = h.spawn_demo_for(900);
    let host = h.platform.host_id.clone();
    let found = common::wait_for_body(
        &h.platform.client(),
        "/api/v1/hosts",
        Duration::from_secs(60),
        |body| {
            body["agents"].as_array().is_some_and(|agents| {
                agents
                    .iter()
                    .any(|a| a["host"] == host.as_str() && a["live"] == true)
            })
        },
    )
    .await;
    assert!(
        found["agents"]
            .as_array()
            .is_some_and(|a| a.iter().any(|a| a["host"] == host.as_str())),
        "the agent never heartbeat: {found}\n{}",
        h.platform.logs()
    );

    // The repository root as the quick start leaves it: `.odp/` with the
    // keys and services.json (api-server, pipeline, agent, demo pids).
    let work = tempfile::tempdir().expect("a working directory");
    let state_dir = h.stack.state_dir().to_owned();
    std::os::unix::fs::symlink(&state_dir, work.path().join(".odp")).expect("link .odp");
    let agent = h.platform.agent.as_ref().expect("the stack has an agent");
    let record = ServicesRecord {
        api_url: h.platform.api_url.clone(),
        ca_path: h.platform.ca_path.clone(),
        token: h.platform.token.clone(),
        viewer_token: mint_scoped_token(&h.platform.jwt_secret, "docs-viewer", "viewer", &[])
            .expect("mint a viewer token"),
        host_id: host.clone(),
        pids: vec![
            h.platform.api.pid(),
            h.platform.pipeline.pid(),
            agent.pid(),
            demo.pid(),
        ],
    };
    std::fs::write(
        state_dir.join("services.json"),
        serde_json::to_string_pretty(&record).expect("the record serializes"),
    )
    .expect("write services.json");

    // The binaries these tests run (target/debug) first: the docs put
    // target/release, the quick start's, on PATH, which the working
    // directory does not have.
    let odpctl = workspace_binary("odpctl").expect("odpctl is built");
    let bin_dir = odpctl.parent().expect("odpctl's directory");
    assert!(
        bin_dir.join("odp-api-server").is_file(),
        "odp-api-server next to {}",
        odpctl.display()
    );
    let path = format!(
        "{}:{}",
        bin_dir.display(),
        std::env::var("PATH").unwrap_or_default()
    );

    let mut report = String::new();
    for document in DOCUMENTS {
        let text = std::fs::read_to_string(repo_root().join(document))
            .unwrap_or_else(|e| panic!("read {document}: {e}"));
        let blocks = shell_blocks(&text).unwrap_or_else(|e| panic!("{document}: {e}"));
        let runnable: Vec<(usize, &Block)> = blocks
            .iter()
            .enumerate()
            .filter(|(_, b)| b.skip.is_none())
            .collect();
        assert!(!runnable.is_empty(), "{document}: no shell block to run");
        for block in blocks.iter().filter(|b| b.skip.is_some()) {
            report.push_str(&format!(
                "{document}:{} skipped: {}\n",
                block.line,
                block.skip.as_deref().unwrap_or_default()
            ));
        }
        let stem = Path::new(document)
            .file_stem()
            .and_then(|s| s.to_str())
            .unwrap_or("doc")
            .to_owned();
        let session = tokio::task::block_in_place(|| {
            run_session(&stem, &runnable, work.path(), &path, DOCUMENT_TIMEOUT)
        });
        for (index, took) in &session.ran {
            report.push_str(&format!(
                "{document}:{} ran in {:.1} s\n",
                blocks[*index].line,
                took.as_secs_f64()
            ));
        }
        if let Some((index, why)) = session.failure {
            let dir = work.path().join(".docs-test");
            let block = &blocks[index];
            let message = format!(
                "{document}: the block at line {} {why}\n\
                 ----- block -----\n{}\
                 ----- stdout -----\n{}\n\
                 ----- stderr -----\n{}\n\
                 ----- services -----\n{}",
                block.line,
                block.text,
                tail(&block_file(&dir, &stem, index, "out"), 16 << 10),
                tail(&block_file(&dir, &stem, index, "err"), 16 << 10),
                h.platform.logs()
            );
            let kept = work.keep();
            panic!(
                "{message}\n(every block's output is in {})",
                kept.join(".docs-test").display()
            );
        }
    }
    println!("{report}");
    // ODP_DOCS_TEST_KEEP=1 keeps the session's files (each block's
    // script, output and errors) to read.
    if std::env::var_os("ODP_DOCS_TEST_KEEP").is_some() {
        println!("kept: {}", work.keep().join(".docs-test").display());
    }
    drop(demo);
}
