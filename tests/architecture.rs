//! The dependency arrows that must never exist (ARCHITECTURE.md), checked
//! on the workspace's real dependency graph from `cargo metadata`: what a
//! crate pulls in when built for production (normal and build
//! dependencies, transitively), never its dev-dependencies. And inside
//! each crate, no import circle between modules (`modules.rs`).

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::process::Command;

use serde_json::Value;

#[path = "architecture/modules.rs"]
mod modules;

/// The target this machine builds for, from `rustc -vV`.
fn host_triple() -> String {
    let rustc = std::env::var("RUSTC").unwrap_or_else(|_| "rustc".to_owned());
    let output = Command::new(rustc)
        .arg("-vV")
        .output()
        .expect("run rustc -vV");
    let text = String::from_utf8_lossy(&output.stdout).into_owned();
    text.lines()
        .find_map(|l| l.strip_prefix("host: "))
        .expect("rustc -vV names the host")
        .to_owned()
}

/// `cargo metadata` of the workspace.
fn metadata() -> Value {
    // Only this platform's graph: the build downloaded exactly its crates,
    // so reading it needs no network.
    let output = Command::new(env!("CARGO"))
        .args(["metadata", "--format-version", "1", "--offline"])
        .args(["--filter-platform", &host_triple()])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .expect("run cargo metadata");
    assert!(output.status.success(), "{output:?}");
    serde_json::from_slice(&output.stdout).expect("cargo metadata's JSON")
}

/// Package name → the names of its normal and build dependencies, for
/// every package of the resolved graph.
fn graph() -> BTreeMap<String, BTreeSet<String>> {
    let metadata = metadata();
    let names: BTreeMap<&str, &str> = metadata["packages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| (p["id"].as_str().unwrap(), p["name"].as_str().unwrap()))
        .collect();
    let mut graph = BTreeMap::new();
    for node in metadata["resolve"]["nodes"].as_array().unwrap() {
        let name = names[node["id"].as_str().unwrap()].to_owned();
        let deps: BTreeSet<String> = node["deps"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|dep| {
                dep["dep_kinds"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .any(|kind| kind["kind"].as_str() != Some("dev"))
            })
            .map(|dep| names[dep["pkg"].as_str().unwrap()].to_owned())
            .collect();
        graph.entry(name).or_insert_with(BTreeSet::new).extend(deps);
    }
    graph
}

/// Everything `from` pulls in, itself excluded.
fn reaches(graph: &BTreeMap<String, BTreeSet<String>>, from: &str) -> BTreeSet<String> {
    let mut seen = BTreeSet::new();
    let mut todo: Vec<&str> = vec![from];
    while let Some(name) = todo.pop() {
        for dep in graph.get(name).into_iter().flatten() {
            if seen.insert(dep.clone()) {
                todo.push(dep);
            }
        }
    }
    seen
}

/// Arrows of ARCHITECTURE.md: `(from, to)`, none of which may exist.
fn forbidden() -> Vec<(&'static str, &'static str)> {
    let mut arrows = Vec::new();
    for pure in ["odp-core", "odp-profile", "odp-rules", "odp-api-types"] {
        for to in ["odp-store", "rdkafka", "sqlx", "tokio"] {
            arrows.push((pure, to));
        }
    }
    for to in ["odp-store", "odp-api-server", "odp-pipeline"] {
        arrows.push(("odp-profiler-service", to));
    }
    // The agent links odp-core: SVG is drawn by the api-server alone.
    arrows.push(("odp-core", "inferno"));
    // The store keeps the domain's values (odp-core), not the REST
    // contract's: renaming an API field must not change what is stored.
    arrows.push(("odp-store", "odp-api-types"));
    arrows.push(("odp-api-server", "odp-pipeline"));
    arrows.push(("odp-pipeline", "odp-api-server"));
    for client in ["odp-client", "odpctl"] {
        for to in ["odp-store", "odp-api-server"] {
            arrows.push((client, to));
        }
    }
    let production = [
        "odp-core",
        "odp-api-types",
        "odp-profile",
        "odp-rules",
        "odp-store",
        "odp-metrics",
        "odp-plumbing",
        "odp-api-server",
        "odp-profiler-service",
        "odp-pipeline",
        "odp-client",
        "odpctl",
    ];
    for crate_ in production {
        for to in ["odp-tests", "odp-devstack"] {
            arrows.push((crate_, to));
        }
    }
    arrows
}

#[test]
fn no_forbidden_dependency_arrow() {
    let graph = graph();
    let mut found = Vec::new();
    for (from, to) in forbidden() {
        assert!(graph.contains_key(from), "no package {from}");
        if reaches(&graph, from).contains(to) {
            found.push((from, to));
        }
    }
    assert!(found.is_empty(), "forbidden arrows: {found:?}");
}

#[test]
fn the_check_sees_real_arrows() {
    // So a broken graph reader cannot pass the test above vacuously.
    let graph = graph();
    assert!(reaches(&graph, "odp-api-server").contains("odp-store"));
    assert!(reaches(&graph, "odp-pipeline").contains("rdkafka"));
    assert!(reaches(&graph, "odp-store").contains("sqlx"));
    // Dev-dependencies are left out: the pipeline's tests use the devstack.
    assert!(!reaches(&graph, "odp-pipeline").contains("odp-devstack"));
}

/// Every library and binary of the workspace: (package, target kind and
/// name, root file).
fn crate_roots() -> Vec<(String, String, String)> {
    let metadata = metadata();
    let members: BTreeSet<&str> = metadata["workspace_members"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m.as_str().unwrap())
        .collect();
    let mut roots = Vec::new();
    for package in metadata["packages"].as_array().unwrap() {
        if !members.contains(package["id"].as_str().unwrap()) {
            continue;
        }
        for target in package["targets"].as_array().unwrap() {
            let kind = target["kind"][0].as_str().unwrap();
            if matches!(kind, "lib" | "bin" | "proc-macro") {
                roots.push((
                    package["name"].as_str().unwrap().to_owned(),
                    format!("{kind} {}", target["name"].as_str().unwrap()),
                    target["src_path"].as_str().unwrap().to_owned(),
                ));
            }
        }
    }
    roots
}

#[test]
fn no_import_circle_between_modules() {
    let mut found = Vec::new();
    let mut arrows = BTreeSet::new();
    for (package, target, root) in crate_roots() {
        // Without `#[cfg(test)]` code: a test module may take what it needs
        // from anywhere in its crate (odp-core's cost tests sign commands,
        // whose options are cost's), and nothing imports it.
        let tree = modules::Tree::load(Path::new(&root), false, &modules::disk);
        arrows.extend(
            tree.arrows()
                .into_keys()
                .map(|(parent, from, to)| format!("{package}: {parent}: {from} → {to}")),
        );
        for cycle in tree.cycles() {
            found.push(format!("{package} ({target}) {cycle}"));
        }
    }
    // So a broken reader cannot pass vacuously: arrows it must see.
    for arrow in [
        "odp-store: crate: blocks → sql",
        "odp-pipeline: crate: notify → config",
    ] {
        assert!(arrows.contains(arrow), "{arrow} not seen in {arrows:#?}");
    }
    assert!(
        found.is_empty(),
        "import circles between modules:\n{}",
        found.join("\n")
    );
}

/// Every file under `dir`, recursively.
fn files_under(dir: &Path) -> Vec<std::path::PathBuf> {
    let mut files = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap_or_else(|e| panic!("read {dir:?}: {e}")) {
        let path = entry.unwrap().path();
        if path.is_dir() {
            files.extend(files_under(&path));
        } else {
            files.push(path);
        }
    }
    files
}

/// Each line of `files` that mentions `needle`, as `file:line: text`.
fn lines_mentioning(files: &[std::path::PathBuf], needle: &str) -> Vec<String> {
    let mut found = Vec::new();
    for file in files {
        let text = std::fs::read_to_string(file).unwrap();
        for (number, line) in text.lines().enumerate() {
            if line.contains(needle) {
                found.push(format!(
                    "{}:{}: {}",
                    file.display(),
                    number + 1,
                    line.trim()
                ));
            }
        }
    }
    found
}

/// The api-server's sources, `src/` joined with `path`.
fn api_server_src(path: &str) -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../api-server/src")
        .join(path)
}

#[test]
fn api_server_routes_reach_the_store_only_through_service() {
    // ARCHITECTURE.md: routes parse, authorize, call an operation in
    // `service/` and map its result; the store is the services' to call.
    let files = files_under(&api_server_src("routes"));
    // So a wrong path cannot pass vacuously.
    assert!(
        files.iter().any(|f| f.ends_with("routes/profiles.rs")),
        "{files:?}"
    );
    let found = lines_mentioning(&files, "odp_store");
    assert!(
        found.is_empty(),
        "routes that use odp_store directly:\n{}",
        found.join("\n")
    );
}

#[test]
fn api_server_services_know_no_http_error() {
    // Services return the domain error (`service_error.rs`); `error.rs`
    // maps it to HTTP once, and routes map with `?`.
    let mut files = files_under(&api_server_src("service"));
    files.extend(files_under(&api_server_src("control")));
    for file in [
        "scheduler.rs",
        "trigger_firings.rs",
        "service_error.rs",
        "validate.rs",
        "read_budget.rs",
    ] {
        files.push(api_server_src(file));
    }
    // So a wrong path cannot pass vacuously.
    assert!(
        files.iter().any(|f| f.ends_with("service/profiles.rs"))
            && files.iter().any(|f| f.ends_with("control/dispatch.rs")),
        "{files:?}"
    );
    let found = lines_mentioning(&files, "ApiError");
    assert!(
        found.is_empty(),
        "service-layer code that names the HTTP error:\n{}",
        found.join("\n")
    );
}
