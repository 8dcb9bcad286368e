//! Profiles in and out as other tools' files: imports of folded stacks and
//! pprof become finished profiles every query works on, and exports (folded,
//! pprof, speedscope, JSON) read back to the same samples.

use odp_client::types::ProfileStatus;
use std::process::Output;

use odp_core::{folded, pprof};
use odp_devstack::{mint_scoped_token, ApiClient, Reply};
use reqwest::Method;
use serde_json::{json, Value};

use crate::common;

/// The Go-style CPU profile written by Google's protobuf runtime (see
/// core/tests/fixtures/make_pprof_fixture.py).
const GO_CPU: &[u8] = include_bytes!("../../core/tests/fixtures/go-cpu.pb.gz");
const GO_CPU_FOLDED: &str = "main.main;[checkout] 3\n\
    main.main;main.handle;main.encode 1\n\
    main.main;main.handle;main.encode;crypto/sha256.block 11\n\
    main.main;main.handle;main.encode;runtime.memmove 2\n";
const FOLDED: &str = "main;hot 6\nmain;warm 3\nmain;hot 1\n";

async fn upload(client: &ApiClient, query: &str, body: &[u8]) -> Reply {
    client
        .send_bytes(
            Method::POST,
            &format!("/api/v1/profiles/import?{query}"),
            body.to_vec(),
            "application/octet-stream",
        )
        .await
        .expect("send the import")
}

/// Sends a body the server refuses as too large. The server reads and
/// drops a body declared over its limit before answering, so the client
/// must see the 413, never a reset connection.
async fn send_oversized(client: &ApiClient, path: &str, body: &[u8], content_type: &str) -> Reply {
    client
        .send_bytes(Method::POST, path, body.to_vec(), content_type)
        .await
        .unwrap_or_else(|e| panic!("{} bytes to {path}: no 413 but {e}", body.len()))
}

async fn export(client: &ApiClient, id: &str, format: &str) -> Vec<u8> {
    client
        .flamegraph_bytes(id, format)
        .await
        .unwrap_or_else(|e| panic!("{format} export of {id}: {e}"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn imported_profiles_read_back_in_every_format() {
    let h = common::start_without_agent("formats").await;
    let client = h.platform.client();

    // Folded stacks: a finished profile of the service on host `imported`.
    let reply = upload(&client, "service=checkout&format=folded", FOLDED.as_bytes()).await;
    assert_eq!(reply.status, 201, "{}", reply.text);
    let profile = &reply.body;
    assert_eq!(profile["status"], "finished");
    assert_eq!(profile["service"], "checkout");
    assert_eq!(profile["host"], "imported");
    assert_eq!(profile["event"], "cpu-clock");
    assert_eq!(
        profile["target"],
        json!({"by": "imported", "value": "folded"})
    );
    let id = profile["id"].as_str().unwrap().to_owned();
    assert_eq!(
        client.profile(&id).await.unwrap().status,
        ProfileStatus::Finished
    );

    let text = String::from_utf8(export(&client, &id, "folded").await).unwrap();
    assert_eq!(text, "main;hot 7\nmain;warm 3\n");
    let tree: Value = serde_json::from_slice(&export(&client, &id, "json").await).unwrap();
    assert_eq!(
        (tree["samples"].as_u64(), tree["snapshots"].as_i64()),
        (Some(10), Some(1))
    );
    let top = client.top(&id, 5).await.unwrap();
    assert_eq!(
        top.functions.first().map(|f| f.function.as_str()),
        Some("hot")
    );
    let scope: Value = serde_json::from_slice(&export(&client, &id, "speedscope").await).unwrap();
    assert_eq!(
        scope["$schema"],
        "https://www.speedscope.app/file-format-schema.json"
    );
    let names: Vec<&str> = scope["shared"]["frames"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["name"].as_str().unwrap())
        .collect();
    assert_eq!(names.len(), 3);
    for name in ["main", "hot", "warm"] {
        assert!(names.contains(&name), "{names:?}");
    }
    let weights: u64 = scope["profiles"][0]["weights"]
        .as_array()
        .unwrap()
        .iter()
        .map(|w| w.as_u64().unwrap())
        .sum();
    assert_eq!(weights, 10);
    assert_eq!(scope["profiles"][0]["type"], "sampled");

    let response = h
        .platform
        .http()
        .get(format!(
            "{}/api/v1/profiles/{id}/flamegraph?format=pprof",
            h.platform.api_url
        ))
        .bearer_auth(&h.platform.token)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status().as_u16(), 200);
    assert_eq!(
        response.headers()["content-type"],
        "application/octet-stream"
    );
    assert_eq!(
        response.headers()["content-disposition"],
        format!("attachment; filename=\"profile-{id}.pb.gz\"").as_str()
    );
    let decoded = pprof::decode(&response.bytes().await.unwrap(), None).unwrap();
    assert_eq!(decoded.sample_type, "cpu-clock");
    assert_eq!(
        folded::to_folded(&decoded.stacks),
        "main;hot 7\nmain;warm 3\n"
    );

    // pprof written by another encoder, on a host of our choosing; its
    // period comes back out in our own pprof export.
    let reply = upload(
        &client,
        "service=checkout&format=pprof&host=ci-runner-1",
        GO_CPU,
    )
    .await;
    assert_eq!(reply.status, 201, "{}", reply.text);
    assert_eq!(reply.body["host"], "ci-runner-1");
    assert_eq!(reply.body["event"], "cpu-clock");
    assert_eq!(reply.body["frequency_hz"], 100);
    let go_id = reply.body["id"].as_str().unwrap().to_owned();
    let text = String::from_utf8(export(&client, &go_id, "folded").await).unwrap();
    assert_eq!(text, GO_CPU_FOLDED);
    let again = pprof::decode(&export(&client, &go_id, "pprof").await, None).unwrap();
    assert_eq!(again.sample_types, vec!["cpu-clock", "cpu"]);
    assert_eq!(again.period_nanos, Some(10_000_000));
    assert_eq!(again.duration_nanos, Some(5_000_000_000));
    assert_eq!(folded::to_folded(&again.stacks), GO_CPU_FOLDED);
    // Our export imports again, and the nanosecond values are selectable:
    // CPU time of a 10 ms period counts as its samples, as ODP counts them.
    let ours = export(&client, &go_id, "pprof").await;
    let reply = upload(
        &client,
        "service=checkout&format=pprof&sample_type=cpu",
        &ours,
    )
    .await;
    assert_eq!(reply.status, 201, "{}", reply.text);
    let nanos_id = reply.body["id"].as_str().unwrap().to_owned();
    let tree: Value = serde_json::from_slice(&export(&client, &nanos_id, "json").await).unwrap();
    assert_eq!(tree["samples"].as_u64(), Some(17));

    let listed = client
        .list_profiles("service=checkout&host=ci-runner-1")
        .await
        .unwrap();
    let ids: Vec<String> = listed.profiles.iter().map(|p| p.id.to_string()).collect();
    assert_eq!(ids, vec![go_id]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn imports_check_tokens_and_refuse_bad_files() {
    let h = common::start_without_agent("formats-bad").await;
    let secret = &h.platform.jwt_secret;
    let token = |role: &str, services: &[&str]| {
        h.platform
            .client_for(&mint_scoped_token(secret, "ci", role, services).unwrap())
    };
    let admin = h.platform.client();
    let anonymous = h.platform.client_for("");
    let viewer = token("viewer", &["*"]);
    let other_service = token("profiler", &["search-*"]);
    let scoped = token("profiler", &["checkout*"]);
    let folded = "service=checkout-api&format=folded".to_owned();
    let pprof = "service=checkout-api&format=pprof".to_owned();
    let cases: Vec<(&ApiClient, String, Vec<u8>, u16)> = vec![
        (&anonymous, folded.clone(), FOLDED.into(), 401),
        (&viewer, folded.clone(), FOLDED.into(), 403),
        (&other_service, folded.clone(), FOLDED.into(), 403),
        (&admin, folded.clone(), vec![], 422),
        (&admin, folded.clone(), b"\xff\xfe\x00 binary".to_vec(), 422),
        (&admin, folded.clone(), b"main;hot lots\n".to_vec(), 422),
        (&admin, folded.clone(), b"main;hot 0\n".to_vec(), 422),
        (&admin, pprof.clone(), FOLDED.into(), 422),
        (&admin, pprof.clone(), vec![0x1f, 0x8b, 8, 0, 0, 0], 422),
        (
            &admin,
            format!("{pprof}&sample_type=alloc_space"),
            GO_CPU.into(),
            422,
        ),
        (&admin, format!("{pprof}&event=bogus"), GO_CPU.into(), 422),
        (
            &admin,
            format!("{folded}&sample_type=cpu"),
            FOLDED.into(),
            422,
        ),
        (
            &admin,
            "service=bad%20name&format=folded".into(),
            FOLDED.into(),
            422,
        ),
        (&admin, format!("{folded}&host=a/b"), FOLDED.into(), 422),
        (&admin, "format=folded".into(), FOLDED.into(), 400),
        (
            &admin,
            "service=checkout-api&format=perf".into(),
            FOLDED.into(),
            400,
        ),
        (&admin, format!("{folded}&colour=red"), FOLDED.into(), 400),
        (&admin, folded.clone(), vec![b'x'; (32 << 20) + 1], 413),
        (&scoped, folded.clone(), FOLDED.into(), 201),
        (&scoped, format!("{pprof}&event=wall"), GO_CPU.into(), 201),
    ];
    for (who, query, body, want) in cases {
        let size = body.len();
        let reply = if want == 413 {
            let path = format!("/api/v1/profiles/import?{query}");
            send_oversized(who, &path, &body, "application/octet-stream").await
        } else {
            upload(who, &query, &body).await
        };
        assert_eq!(reply.status, want, "{query} ({size} bytes): {}", reply.text);
        if want != 201 {
            let message = reply.body["error"]["message"].as_str().unwrap_or_default();
            assert!(
                !message.is_empty(),
                "{query}: no JSON error in {}",
                reply.text
            );
        } else {
            assert_eq!(reply.body["requested_by"], "ci");
        }
    }
    // Other routes keep the 1 MiB limit.
    let big = vec![b' '; (1 << 20) + 1];
    let reply = send_oversized(&admin, "/api/v1/profiles", &big, "application/json").await;
    assert_eq!(reply.status, 413, "{}", reply.text);
    // `import` is not taken for a profile id.
    let reply = h
        .platform
        .client()
        .request(Method::GET, "/api/v1/profiles/import", None)
        .await
        .unwrap();
    assert_eq!(reply.status, 405, "{}", reply.text);
}

fn odpctl(h: &common::Harness, args: &[&str]) -> Output {
    common::odpctl(h, &h.platform.token, args)
}

fn stdout(output: &Output) -> String {
    assert_eq!(
        output.status.code(),
        Some(0),
        "stdout:\n{}\nstderr:\n{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8(output.stdout.clone()).unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn odpctl_imports_and_exports_files() {
    let h = common::start_without_agent("formats-cli").await;
    let dir = h.stack.state_dir().join("formats");
    std::fs::create_dir_all(&dir).unwrap();
    let path = |name: &str| dir.join(name).to_str().unwrap().to_owned();
    std::fs::write(path("go.pb.gz"), GO_CPU).unwrap();

    let import = ["import", "--service", "checkout", "--format", "pprof"];
    let output = tokio::task::block_in_place(|| {
        odpctl(
            &h,
            &[&import[..], &["--host", "laptop", &path("go.pb.gz")]].concat(),
        )
    });
    let id = stdout(&output).trim().to_owned();
    assert_eq!(id.len(), 36, "a profile id: {id}");

    let export = [
        "flamegraph",
        &id,
        "--format",
        "pprof",
        "-o",
        &path("out.pb.gz"),
    ];
    tokio::task::block_in_place(|| stdout(&odpctl(&h, &export)));
    let decoded = pprof::decode(&std::fs::read(path("out.pb.gz")).unwrap(), None).unwrap();
    assert_eq!(folded::to_folded(&decoded.stacks), GO_CPU_FOLDED);

    // Our own export imports back as folded text and as speedscope.
    let export = [
        "flamegraph",
        &id,
        "--format",
        "folded",
        "-o",
        &path("out.folded"),
    ];
    tokio::task::block_in_place(|| stdout(&odpctl(&h, &export)));
    let output = tokio::task::block_in_place(|| {
        odpctl(
            &h,
            &[
                "import",
                "--service",
                "checkout",
                "--format",
                "folded",
                &path("out.folded"),
            ],
        )
    });
    let folded_id = stdout(&output).trim().to_owned();
    let scope = tokio::task::block_in_place(|| {
        stdout(&odpctl(
            &h,
            &["flamegraph", &folded_id, "--format", "speedscope"],
        ))
    });
    let scope: Value = serde_json::from_str(&scope).unwrap();
    assert_eq!(scope["profiles"][0]["endValue"], 17);

    let refused = tokio::task::block_in_place(|| {
        odpctl(
            &h,
            &[
                "import",
                "--service",
                "checkout",
                "--format",
                "folded",
                &path("go.pb.gz"),
            ],
        )
    });
    assert_eq!(refused.status.code(), Some(2), "{refused:?}");
}

/// Real producers' files (core/tests/fixtures; make_jfr_fixture.sh and
/// make_speedscope_fixture.sh there record them and print the totals
/// below): JDK 17's flight recorder on ImportWorkload.java, py-spy 0.4.2
/// sampling two Python threads, and the `speedscope` package tracing a
/// Python program (an evented profile).
const JFR: &[u8] = include_bytes!("../../core/tests/fixtures/import-workload.jfr");
const PY_SPY: &[u8] = include_bytes!("../../core/tests/fixtures/py-spy.speedscope.json");
const EVENTED: &[u8] = include_bytes!("../../core/tests/fixtures/pyspeedscope.evented.json");

/// Uploads `body`, checks the profile's event, and returns its id, its
/// total (as its top functions and its folded stacks both count it) and
/// its folded stacks. (Its JSON flame graph nests deeper than serde_json
/// reads by default: JFR's stacks are 64 frames.)
async fn imported(
    client: &ApiClient,
    query: &str,
    body: &[u8],
    event: &str,
) -> (String, u64, String) {
    let reply = upload(client, query, body).await;
    assert_eq!(reply.status, 201, "{query}: {}", reply.text);
    assert_eq!(reply.body["event"], event, "{query}");
    assert_eq!(reply.body["status"], "finished");
    let id = reply.body["id"].as_str().unwrap().to_owned();
    let top = client.top(&id, 10).await.unwrap();
    assert_eq!(top.event.map(|e| e.to_string()).as_deref(), Some(event));
    let folded = String::from_utf8(export(client, &id, "folded").await).unwrap();
    let summed: u64 = folded
        .lines()
        .map(|l| l.rsplit_once(' ').unwrap().1.parse::<u64>().unwrap())
        .sum();
    assert_eq!(summed, top.samples, "{query}");
    (id, top.samples, folded)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn jfr_and_speedscope_files_import_with_their_exact_totals() {
    let h = common::start_without_agent("formats-jfr").await;
    let client = h.platform.client();

    // CPU samples by default: `jfr summary` counts 127 jdk.ExecutionSample,
    // every one with a stack, each one 10 ms apart by the recording's
    // settings.
    let jfr = "service=checkout&format=jfr";
    let reply = upload(&client, jfr, JFR).await;
    assert_eq!(reply.status, 201, "{}", reply.text);
    assert_eq!(reply.body["frequency_hz"], 100);
    assert_eq!(
        reply.body["target"],
        json!({"by": "imported", "value": "jfr"})
    );
    let (id, samples, folded) = imported(&client, jfr, JFR, "cpu-clock").await;
    assert_eq!(samples, 127);
    let top = client.top(&id, 50).await.unwrap();
    let functions: Vec<&str> = top.functions.iter().map(|f| f.function.as_str()).collect();
    assert!(functions.contains(&"ImportWorkload.spin"), "{functions:?}");
    assert!(
        folded.contains("ImportWorkload.main;ImportWorkload.spin"),
        "{folded}"
    );

    // Allocation samples weigh the bytes `jfr print` adds up.
    let (_, bytes, folded) = imported(
        &client,
        &format!("{jfr}&sample_type=alloc"),
        JFR,
        "alloc-bytes",
    )
    .await;
    assert_eq!(bytes, 136_750_880);
    assert!(folded.contains("ImportWorkload.allocate"), "{folded}");

    // Waits weigh the nanoseconds `jfr print` shows for the 118 monitor
    // enters and 279 parks (ticks lose at most one each).
    let (_, waited, folded) =
        imported(&client, &format!("{jfr}&sample_type=lock"), JFR, "lock").await;
    assert!(
        waited.abs_diff(915_605_842 + 1_744_266_063) <= 118 + 279,
        "{waited} ns"
    );
    assert!(
        folded.contains("[monitor] ImportWorkload$Ledger"),
        "{folded}"
    );

    // py-spy's capture: 409 samples of 10 ms, in seconds, as wall time.
    let speedscope = "service=checkout&format=speedscope";
    let (id, nanos, folded) = imported(&client, speedscope, PY_SPY, "wall").await;
    assert_eq!(nanos, 409 * 10_000_000);
    assert!(folded.contains("main;crunch_numbers"), "{folded}");
    let top = client.top(&id, 50).await.unwrap();
    assert!(top.functions.iter().any(|f| f.function == "hash_block"));

    // The evented trace: main open from the first event to the last.
    let (_, nanos, folded) = imported(&client, speedscope, EVENTED, "wall").await;
    assert_eq!(nanos, 20_992_269);
    assert!(folded.contains("main;fib;fib"), "{folded}");
    // `event` still overrides what the file says.
    let (_, _, _) = imported(
        &client,
        &format!("{speedscope}&event=cpu-clock"),
        PY_SPY,
        "cpu-clock",
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_jfr_and_speedscope_files_are_refused_with_the_reason() {
    let h = common::start_without_agent("formats-jfr-bad").await;
    let client = h.platform.client();
    let (jfr, speedscope) = (
        "service=checkout&format=jfr",
        "service=checkout&format=speedscope",
    );
    let truncated = &JFR[..JFR.len() / 2];
    let cases: Vec<(String, &[u8], u16, &str)> = vec![
        (
            speedscope.into(),
            b"{\"profiles\": [",
            422,
            "not speedscope JSON",
        ),
        (speedscope.into(), JFR, 422, "not speedscope JSON"),
        (
            speedscope.into(),
            br#"{"$schema": "x", "profiles": []}"#,
            422,
            "`$schema` is \"x\"",
        ),
        (
            format!("{speedscope}&sample_type=cpu"),
            PY_SPY,
            422,
            "sample_type",
        ),
        (jfr.into(), truncated, 422, "not a usable JFR recording"),
        (jfr.into(), PY_SPY, 422, "not a usable JFR recording"),
        (
            format!("{jfr}&sample_type=heap"),
            JFR,
            422,
            "cpu (jdk.ExecutionSample)",
        ),
        (
            "service=checkout&format=perfetto".into(),
            PY_SPY,
            400,
            "unknown variant `perfetto`, expected one of `pprof`, `folded`, `jfr`, `speedscope`",
        ),
    ];
    for (query, body, want, says) in cases {
        let reply = upload(&client, &query, body).await;
        assert_eq!(reply.status, want, "{query}: {}", reply.text);
        let message = reply.body["error"]["message"].as_str().unwrap_or_default();
        assert!(
            message.contains(says),
            "{query}: {message:?} does not say {says:?}"
        );
    }
}
