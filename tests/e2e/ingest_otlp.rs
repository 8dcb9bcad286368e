//! OpenTelemetry profiles (OTLP `v1development`) sent to ODP: real
//! captures (py-spy and perf profiling a two-threaded Python program)
//! built into `ExportProfilesServiceRequest`s with OpenTelemetry's own
//! generated classes (`tests/e2e/data/otlp_from_capture.py`), sent over
//! HTTP in protobuf and OTLP/JSON and over gRPC with grpcio, and read
//! back: exact totals, function names, labels, the trace link, retries
//! stored once; and bad input refused clearly with the good profiles
//! beside it kept.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;

use odp_client::types::Profile;
use odp_core::EventKind;
use odp_devstack::{mint_scoped_token, ApiClient};
use opentelemetry_proto::tonic::collector::profiles::v1development::ExportProfilesServiceResponse;
use prost::Message;
use serde_json::Value;

use crate::common::{self, Harness};

const SCRIPT: &str = "tests/e2e/data/otlp_from_capture.py";
const HTTP_PATH: &str = "/v1development/profiles";
const PROTOBUF: &str = "application/x-protobuf";
const JSON: &str = "application/json";

/// What the captures hold, as the script counted them.
#[derive(Debug)]
struct Expect {
    pyspy_total: u64,
    pyspy_functions: Vec<String>,
    perf_total: u64,
    perf_linked: u64,
    perf_functions: Vec<String>,
    perf_threads: usize,
    /// Samples by the name of their thread.
    perf_by_thread_name: Vec<(String, u64)>,
    pid: u64,
    trace_id: String,
    span_id: String,
}

/// `google.rpc.Status`, OTLP/HTTP's error body.
#[derive(Clone, PartialEq, prost::Message)]
struct Status {
    #[prost(int32, tag = "1")]
    code: i32,
    #[prost(string, tag = "2")]
    message: String,
}

impl Expect {
    fn read(path: &Path) -> Expect {
        let v: Value = serde_json::from_slice(&std::fs::read(path).expect("read")).expect("json");
        let count = |key: &str| v[key].as_u64().unwrap_or_else(|| panic!("{key} in {v}"));
        let text = |key: &str| {
            v[key]
                .as_str()
                .unwrap_or_else(|| panic!("{key} in {v}"))
                .to_owned()
        };
        let texts = |key: &str| -> Vec<String> {
            let list = v[key].as_array().unwrap_or_else(|| panic!("{key} in {v}"));
            list.iter()
                .filter_map(|f| f.as_str().map(str::to_owned))
                .collect()
        };
        Expect {
            pyspy_total: count("pyspy_total"),
            pyspy_functions: texts("pyspy_functions"),
            perf_total: count("perf_total"),
            perf_linked: count("perf_linked"),
            perf_functions: texts("perf_functions"),
            perf_threads: count("perf_threads") as usize,
            perf_by_thread_name: v["perf_by_thread_name"]
                .as_object()
                .unwrap_or_else(|| panic!("perf_by_thread_name in {v}"))
                .iter()
                .map(|(name, n)| (name.clone(), n.as_u64().expect("a count")))
                .collect(),
            pid: count("pid"),
            trace_id: text("trace_id"),
            span_id: text("span_id"),
        }
    }
}

fn script(args: &[&str]) -> String {
    let output = Command::new("python3")
        .arg(odp_devstack::repo_root().join(SCRIPT))
        .args(args)
        .output()
        .expect("run python3");
    assert!(
        output.status.success(),
        "{SCRIPT} {args:?}: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8(output.stdout).expect("utf-8")
}

/// Captures once and builds the requests of `services` from it.
async fn captures(services: &[&str]) -> (tempfile::TempDir, Vec<Expect>) {
    let services: Vec<String> = services.iter().map(|s| s.to_string()).collect();
    tokio::task::spawn_blocking(move || {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().to_str().expect("utf-8 path").to_owned();
        script(&["capture", &path]);
        let expects = services
            .iter()
            .map(|service| {
                script(&["build", &path, service]);
                Expect::read(&dir.path().join(format!("{service}.expect.json")))
            })
            .collect();
        (dir, expects)
    })
    .await
    .expect("capture")
}

fn file(dir: &Path, name: &str) -> Vec<u8> {
    std::fs::read(dir.join(name)).unwrap_or_else(|e| panic!("{name}: {e}"))
}

/// An answer: its status, content type and body.
struct Answer {
    status: u16,
    content_type: String,
    body: Vec<u8>,
}

impl Answer {
    /// `partial_success`: (rejected profiles, message).
    fn partial(&self) -> (i64, String) {
        assert_eq!(self.status, 200, "{}", String::from_utf8_lossy(&self.body));
        if self.content_type == JSON {
            let body: Value = serde_json::from_slice(&self.body).expect("a JSON answer");
            let partial = &body["partialSuccess"];
            let rejected = match &partial["rejectedProfiles"] {
                Value::String(s) => s.parse().expect("int64 as a string"),
                Value::Null => 0,
                other => panic!("rejectedProfiles {other}"),
            };
            let message = partial["errorMessage"].as_str().unwrap_or("").to_owned();
            return (rejected, message);
        }
        assert_eq!(self.content_type, PROTOBUF);
        let response =
            ExportProfilesServiceResponse::decode(self.body.as_slice()).expect("a protobuf answer");
        let partial = response.partial_success.unwrap_or_default();
        (partial.rejected_profiles, partial.error_message)
    }

    /// The `google.rpc.Status` of an error.
    fn status_message(&self) -> String {
        if self.content_type == JSON {
            let body: Value = serde_json::from_slice(&self.body).expect("a JSON Status");
            assert!(body["code"].as_i64().is_some(), "{body}");
            return body["message"].as_str().expect("message").to_owned();
        }
        Status::decode(self.body.as_slice())
            .expect("a protobuf Status")
            .message
    }
}

async fn post(h: &Harness, token: &str, body: Vec<u8>, content_type: &str, gzip: bool) -> Answer {
    let mut request = odp_devstack::http_client(Some(&h.platform.ca_pem))
        .expect("client")
        .post(format!("{}{HTTP_PATH}", h.platform.api_url))
        .header("content-type", content_type);
    if !token.is_empty() {
        request = request.bearer_auth(token);
    }
    let body = if gzip {
        request = request.header("content-encoding", "gzip");
        let mut encoder = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        std::io::Write::write_all(&mut encoder, &body).expect("gzip");
        encoder.finish().expect("gzip")
    } else {
        body
    };
    let response = request.body(body).send().await.expect("send");
    let status = response.status().as_u16();
    let content_type = response
        .headers()
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
        .to_owned();
    let body = response.bytes().await.expect("body").to_vec();
    Answer {
        status,
        content_type,
        body,
    }
}

/// Sends the request in `path` over gRPC with grpcio.
async fn grpc(h: &Harness, token: &str, path: PathBuf, gzip: bool) -> Value {
    let target = h.platform.api_url.trim_start_matches("https://").to_owned();
    let ca = h.platform.ca_path.to_str().expect("utf-8").to_owned();
    let token = token.to_owned();
    tokio::task::spawn_blocking(move || {
        let path = path.to_str().expect("utf-8").to_owned();
        let mut args = vec!["grpc", &path, &target, &ca, &token];
        if gzip {
            args.push("gzip");
        }
        let out = script(&args);
        serde_json::from_str(&out).unwrap_or_else(|e| panic!("grpc answer {out:?}: {e}"))
    })
    .await
    .expect("grpc")
}

/// The status curl gets for a protobuf body of `size` bytes.
async fn curl_status(h: &Harness, token: &str, dir: &Path, size: usize) -> u16 {
    let body = dir.join("oversized.pb");
    std::fs::write(&body, vec![0u8; size]).expect("write the body");
    let output = Command::new("curl")
        .args([
            "--silent",
            "--show-error",
            "--http1.1",
            "--output",
            "/dev/null",
        ])
        .args(["--write-out", "%{http_code}", "--cacert"])
        .arg(&h.platform.ca_path)
        .args(["-H", &format!("Authorization: Bearer {token}")])
        .args(["-H", &format!("Content-Type: {PROTOBUF}")])
        .arg("--data-binary")
        .arg(format!("@{}", body.display()))
        .arg(format!("{}{HTTP_PATH}", h.platform.api_url))
        .output()
        .expect("run curl");
    let code = String::from_utf8_lossy(&output.stdout).into_owned();
    code.trim()
        .parse()
        .unwrap_or_else(|_| panic!("curl: {code} {}", String::from_utf8_lossy(&output.stderr)))
}

/// The profiles of `service` (with `filter`) and their samples.
async fn stored(
    client: &ApiClient,
    service: &str,
    filter: &str,
) -> Vec<(Profile, u64, Vec<String>)> {
    let page = client
        .list_profiles(&format!("service={service}&limit=200{filter}"))
        .await
        .expect("list profiles");
    let mut out = Vec::new();
    for profile in page.profiles {
        let top = client.top(profile.id, 1000).await.expect("top");
        let functions = top.functions.into_iter().map(|f| f.function).collect();
        out.push((profile, top.samples, functions));
    }
    out
}

fn total(profiles: &[(Profile, u64, Vec<String>)]) -> u64 {
    profiles.iter().map(|(_, samples, _)| samples).sum()
}

/// Checks what `service` holds against the capture.
async fn check_stored(client: &ApiClient, service: &str, expect: &Expect) {
    let profiles = stored(client, service, "").await;
    assert_eq!(
        profiles.len(),
        3,
        "{service}: py-spy's, perf's and perf's trace"
    );
    assert_eq!(
        total(&profiles),
        expect.pyspy_total + expect.perf_total,
        "{service}: every sample of both captures, once"
    );
    for (profile, _, _) in &profiles {
        let labels = &profile.labels;
        let label = |key: &str| labels.get(key).map(String::as_str);
        assert_eq!(label("source"), Some("otlp"), "{service}");
        assert_eq!(profile.host, "otlp-host");
        assert_eq!(profile.event, Some(EventKind::CpuClock));
        assert_eq!(label("k8s.namespace.name"), Some("shop"));
        assert_eq!(
            label("k8s.pod.name"),
            Some(format!("{service}-pod-1").as_str())
        );
        assert_eq!(label("process.pid"), Some(expect.pid.to_string().as_str()));
        assert_eq!(label("bad key/x"), None);
    }
    // py-spy's: 100 Hz, its own functions.
    let pyspy: Vec<_> = profiles
        .iter()
        .filter(|(p, ..)| p.frequency_hz == 100)
        .collect();
    assert_eq!(pyspy.len(), 1, "{service}");
    let (_, samples, functions) = pyspy[0];
    assert_eq!(*samples, expect.pyspy_total, "{service}: py-spy's samples");
    // A frame without a name is `[unknown]`, as ODP names such frames.
    let named = |f: &String| {
        if f.is_empty() {
            "[unknown]".to_owned()
        } else {
            f.clone()
        }
    };
    let want: BTreeSet<String> = expect.pyspy_functions.iter().map(named).collect();
    assert_eq!(
        functions.iter().cloned().collect::<BTreeSet<_>>(),
        want,
        "{service}"
    );
    assert!(functions.iter().any(|f| f == "hot") && functions.iter().any(|f| f == "warm"));

    // perf's at 99 Hz: the samples of the trace in a profile of their own.
    let trace = format!("&labels=trace_id:{}", expect.trace_id);
    let traced = stored(client, service, &trace).await;
    assert_eq!(traced.len(), 1, "{service}: the trace's profile");
    let (profile, samples, _) = &traced[0];
    assert_eq!(
        *samples, expect.perf_linked,
        "{service}: the trace's samples"
    );
    assert_eq!(profile.labels.get("span_id"), Some(&expect.span_id));
    let perf: Vec<_> = profiles
        .iter()
        .filter(|(p, ..)| p.frequency_hz == 99)
        .collect();
    assert_eq!(perf.len(), 2, "{service}");
    let mut functions = BTreeSet::new();
    for (_, _, names) in &perf {
        functions.extend(
            names
                .iter()
                .filter(|n| !n.starts_with('[') && !n.starts_with("0x")),
        );
    }
    // Each sample on its thread (`thread.id`, named by `thread.name`), as
    // the agent's own samples: a flame graph of one thread holds its
    // samples.
    assert!(expect.perf_threads >= 2, "the workload runs two threads");
    for (name, want) in &expect.perf_by_thread_name {
        let mut samples = 0;
        for (profile, _, _) in &perf {
            assert!(
                !profile.labels.contains_key("thread.name"),
                "a thread, no label"
            );
            // The thread filter is a name or a regex: the name, escaped,
            // and whole.
            let pattern: String = format!("^{}$", escape_regex(name))
                .bytes()
                .map(|b| match b {
                    b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' => {
                        (b as char).to_string()
                    }
                    other => format!("%{other:02X}"),
                })
                .collect();
            let path = format!(
                "/api/v1/profiles/{}/flamegraph?thread={pattern}",
                profile.id
            );
            let graph: Value = client.get(&path).await.expect("flame graph of a thread");
            samples += graph["samples"]
                .as_u64()
                .unwrap_or_else(|| panic!("{path}: {graph}"));
        }
        assert_eq!(samples, *want, "{service}: thread {name:?}");
    }
    let want: BTreeSet<&String> = expect.perf_functions.iter().collect();
    assert_eq!(functions, want, "{service}: perf's symbols");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn real_captures_arrive_over_http_and_grpc_with_exact_totals_once() {
    let h = common::start_without_agent("otlp-ingest").await;
    let client = h.platform.client();
    let token = mint_scoped_token(&h.platform.jwt_secret, "collector", "ingest", &["otlp-*"])
        .expect("mint an ingest token");
    let services = ["otlp-pb", "otlp-json", "otlp-grpc"];
    let (dir, expects) = captures(&services).await;
    let dir = dir.path();

    // HTTP, protobuf, gzip.
    let answer = post(&h, &token, file(dir, "otlp-pb.pb"), PROTOBUF, true).await;
    let (rejected, message) = answer.partial();
    eprintln!("partial_success of a good request: {message}");
    assert_eq!(rejected, 0, "{message}");
    assert!(
        message.contains("\"bad key/x\""),
        "the dropped attribute is named: {message}"
    );
    assert!(!message.contains("thread"), "threads are kept: {message}");
    // HTTP, OTLP/JSON.
    let answer = post(&h, &token, file(dir, "otlp-json.json"), JSON, false).await;
    assert_eq!(answer.content_type, JSON);
    let (rejected, message) = answer.partial();
    assert_eq!(rejected, 0, "{message}");
    // gRPC, gzip.
    let reply = grpc(&h, &token, dir.join("otlp-grpc.pb"), true).await;
    assert_eq!(reply["code"], "OK", "{reply}");
    let rejected = &reply["response"]["partialSuccess"]["rejectedProfiles"];
    assert!(rejected.is_null() || rejected == "0", "{reply}");

    for (service, expect) in services.iter().zip(&expects) {
        check_stored(&client, service, expect).await;
    }

    // Retries, and the same request in the other encoding, store nothing
    // twice: the identity of a profile is its content, however encoded.
    for service in services {
        let pb = file(dir, &format!("{service}.pb"));
        let json = file(dir, &format!("{service}.json"));
        assert_eq!(post(&h, &token, pb, PROTOBUF, false).await.partial().0, 0);
        assert_eq!(post(&h, &token, json, JSON, true).await.partial().0, 0);
    }
    let reply = grpc(&h, &token, dir.join("otlp-pb.pb"), false).await;
    assert_eq!(reply["code"], "OK", "{reply}");
    for (service, expect) in services.iter().zip(&expects) {
        check_stored(&client, service, expect).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_otlp_input_is_refused_clearly_and_good_profiles_beside_it_are_kept() {
    let h = common::start_without_agent("otlp-attacks").await;
    let client = h.platform.client();
    let secret = &h.platform.jwt_secret;
    let token = mint_scoped_token(secret, "collector", "ingest", &["otlp-bad"]).expect("token");
    let other = mint_scoped_token(secret, "collector", "ingest", &["search"]).expect("token");
    let viewer = mint_scoped_token(secret, "eve", "viewer", &["*"]).expect("token");
    let (dir, expects) = captures(&["otlp-bad"]).await;
    let (dir, expect) = (dir.path(), &expects[0]);
    let good = file(dir, "otlp-bad.pb");

    // Tokens: none, a reader's, another service's; over gRPC too.
    for (who, status) in [("", 401), (viewer.as_str(), 403), (other.as_str(), 403)] {
        let answer = post(&h, who, good.clone(), PROTOBUF, false).await;
        assert_eq!(answer.status, status, "{}", answer.status_message());
        assert!(!answer.status_message().is_empty());
    }
    let reply = grpc(&h, "not-a-token", dir.join("otlp-bad.pb"), false).await;
    assert_eq!(reply["code"], "UNAUTHENTICATED", "{reply}");
    let reply = grpc(&h, &other, dir.join("otlp-bad.pb"), false).await;
    assert_eq!(reply["code"], "PERMISSION_DENIED", "{reply}");
    assert!(
        stored(&client, "otlp-bad", "").await.is_empty(),
        "refused whole"
    );

    // Spoiled perf profiles beside py-spy's good one: the good one is
    // kept (once: it has a profile_id), the bad one refused by name.
    for (case, needle) in [
        ("out-of-range", "stack index"),
        ("deep", "frames deep"),
        ("mixed", "several sample types"),
        ("outside", "outside the profile's time range"),
    ] {
        let body = file(dir, &format!("otlp-bad.bad-{case}.pb"));
        let (rejected, message) = post(&h, &token, body, PROTOBUF, false).await.partial();
        eprintln!("{case}: {message}");
        assert_eq!(rejected, 1, "{case}: {message}");
        assert!(
            message.contains("scope_profiles[0].profiles[1]: ") && message.contains(needle),
            "{case}: {message}"
        );
    }
    let reply = grpc(&h, &token, dir.join("otlp-bad.bad-mixed.pb"), false).await;
    assert_eq!(
        reply["response"]["partialSuccess"]["rejectedProfiles"], "1",
        "{reply}"
    );

    // Whole requests refused: 4xx and a Status naming the problem.
    let mut not_protobuf = good.clone();
    not_protobuf.push(0x0f); // field 1 of wire type 7, which does not exist
    let json = file(dir, "otlp-bad.json");
    let cases: Vec<(Vec<u8>, &str, u16, &str)> = vec![
        (
            file(dir, "otlp-bad.bad-nonzero-entry0.pb"),
            PROTOBUF,
            400,
            "function_table[0]",
        ),
        (
            not_protobuf,
            PROTOBUF,
            400,
            "not a protobuf ExportProfilesServiceRequest",
        ),
        (
            json[..json.len() - 10].to_vec(),
            JSON,
            400,
            "not an OTLP/JSON",
        ),
        (good.clone(), "text/plain", 415, "application/x-protobuf"),
    ];
    for (body, content_type, status, needle) in cases {
        let answer = post(&h, &token, body, content_type, false).await;
        let message = answer.status_message();
        assert_eq!(answer.status, status, "{needle}: {message}");
        assert!(message.contains(needle), "{needle}: {message}");
    }
    // Too large on the wire (sent by curl, which waits for the server's
    // go-ahead before sending a large body, as HTTP/1.1 lets clients do,
    // so the 413 comes back instead of a reset connection), and once
    // inflated.
    assert_eq!(curl_status(&h, &token, dir, 100 << 20).await, 413);
    let zeros = vec![0u8; 200 << 20];
    let bomb = post(&h, &token, zeros, PROTOBUF, true).await;
    assert_eq!(bomb.status, 413, "{}", bomb.status_message());
    assert!(bomb.status_message().contains("inflates"));

    let kept = stored(&client, "otlp-bad", "").await;
    assert_eq!(kept.len(), 1, "only py-spy's profile, once");
    assert_eq!(kept[0].1, expect.pyspy_total);
    assert_eq!(
        kept[0].0.frequency_hz, 100,
        "nothing of the spoiled perf profiles"
    );
}

/// `text` with the regex metacharacters escaped.
fn escape_regex(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        if "\\.+*?()|[]{}^$#&-~".contains(c) {
            out.push('\\');
        }
        out.push(c);
    }
    out
}
