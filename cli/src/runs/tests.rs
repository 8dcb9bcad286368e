//! Tests of `odpctl run`'s arguments and rendering, from the API's types.

use std::collections::BTreeMap;

use chrono::TimeZone as _;
use clap::Parser as _;
use odp_client::types::RunMember;
use odp_core::run::{Selection, ShareEstimate, StopDecision, Stratum};

use chrono::{DateTime, Utc};
use odp_client::types::{Run, RunPrecision, RunStatus, RunsResponse};
use odp_core::run::{HostSelection, StderrMethod, StopRule};
use odp_core::ProfileStatus;
use uuid::Uuid;

use super::render::*;
use super::wait::*;
use super::*;

#[derive(clap::Parser)]
struct Cli {
    #[command(subcommand)]
    action: RunAction,
}

fn start(args: &[&str]) -> Result<CreateRunRequest, clap::Error> {
    let base = ["run", "start", "demo"];
    let cli = Cli::try_parse_from(base.iter().chain(args))?;
    let RunAction::Start(args) = cli.action else {
        panic!("not a start")
    };
    Ok(args.request())
}

#[test]
fn start_shapes_the_request() {
    assert_eq!(
        start(&["--duration", "60"]).unwrap(),
        CreateRunRequest {
            service: "demo".into(),
            hosts: HostSelection::All,
            stratify_by: vec![],
            seed: None,
            strict: false,
            duration_secs: 60,
            frequency_hz: None,
            window_secs: None,
            stop_when: None,
            options: None,
        }
    );
    let full = start(&[
        "--count",
        "20",
        "--stratify-by",
        "zone",
        "--stratify-by",
        "version",
        "--seed",
        "7",
        "--strict",
        "--duration",
        "300",
        "--frequency",
        "199",
        "--window",
        "2",
        "--stop-top",
        "5",
        "--stop-stderr",
        "0.01",
        "--event",
        "wall",
    ])
    .unwrap();
    assert_eq!(full.hosts, HostSelection::Count(20));
    assert_eq!(full.stratify_by, ["zone", "version"]);
    assert_eq!((full.seed, full.strict), (Some(7), true));
    assert_eq!(
        (full.duration_secs, full.frequency_hz, full.window_secs),
        (300, Some(199), Some(2))
    );
    assert_eq!(
        full.stop_when,
        Some(StopRule {
            top: 5,
            max_stderr: 0.01
        })
    );
    assert_eq!(full.options.unwrap().event.as_deref(), Some("wall"));
    assert_eq!(
        start(&["--percent", "25", "--duration", "9"])
            .unwrap()
            .hosts,
        HostSelection::Percent(25.0)
    );
    assert_eq!(
        start(&["--all", "--duration", "9"]).unwrap().hosts,
        HostSelection::All
    );
}

#[test]
fn start_refuses_bad_combinations() {
    let cases: [(&[&str], &str); 6] = [
        (&["--count", "1"], "no duration"),
        (
            &["--count", "1", "--percent", "5", "--duration", "9"],
            "two host counts",
        ),
        (
            &["--all", "--count", "1", "--duration", "9"],
            "all and a count",
        ),
        (&["--stop-top", "3", "--duration", "9"], "a rule without ε"),
        (
            &["--stop-stderr", "0.02", "--duration", "9"],
            "a rule without K",
        ),
        (
            &["--count", "many", "--duration", "9"],
            "a count that is no number",
        ),
    ];
    for (args, why) in cases {
        assert!(start(args).is_err(), "{why}");
    }
    assert!(Cli::try_parse_from(["run", "start", "--duration", "9"]).is_err());
    assert!(run_id("not-a-uuid").is_err());
    assert!(run_id("00000000-0000-0000-0000-000000000001").is_ok());
}

fn at(secs: i64) -> DateTime<Utc> {
    Utc.with_ymd_and_hms(2026, 11, 27, 9, 0, 0).unwrap() + chrono::Duration::seconds(secs)
}

const RUN: Uuid = Uuid::from_u128(0x5eed_0000_0000_4000_8000_0000_0000_0001);
const MEMBER: Uuid = Uuid::from_u128(0x5eed_0000_0000_4000_8000_0000_0000_0002);

/// A run as `GET /api/v1/runs/{id}` answers it once its stop rule
/// ended it: K = 3 asked, one live host in zone eu-1.
fn precise_run() -> Run {
    Run {
        id: RUN,
        service: "demo".into(),
        status: RunStatus::Precise,
        status_reason: Some(
            "stop rule met: the top 3 shares known to ±0.0187 from 612 samples of 1 host".into(),
        ),
        hosts: HostSelection::Count(3),
        stratify_by: vec!["zone".into()],
        seed: 7,
        selection: Selection {
            hosts: vec!["web-1".into()],
            eligible: 1,
            requested: 3,
            capped: true,
            strata: vec![Stratum {
                labels: BTreeMap::from([("zone".to_owned(), "eu-1".to_owned())]),
                eligible: 1,
                chosen: 1,
            }],
        },
        members: vec![RunMember {
            host: "web-1".into(),
            profile_id: Some(MEMBER),
            status: ProfileStatus::Stopped,
            reason: Some(format!("stopped by run:{RUN}")),
        }],
        stop_when: Some(StopRule {
            top: 3,
            max_stderr: 0.02,
        }),
        duration_secs: 60,
        reached_epsilon: Some(0.0187),
        samples_used: Some(612),
        saved_secs: Some(52.3),
        requested_by: "odp-dev".into(),
        created_at: at(0),
        ended_at: Some(at(8)),
    }
}

/// The same run while it runs on three hosts: one profiling, one
/// done, one that never started.
fn running_run() -> Run {
    let member = |host: &str, status, reason: Option<&str>| RunMember {
        host: host.into(),
        profile_id: Some(MEMBER),
        status,
        reason: reason.map(str::to_owned),
    };
    Run {
        status: RunStatus::Running,
        status_reason: None,
        stratify_by: vec![],
        selection: Selection {
            hosts: vec!["web-1".into(), "web-2".into(), "web-3".into()],
            eligible: 10,
            requested: 3,
            capped: false,
            strata: vec![],
        },
        members: vec![
            member("web-1", ProfileStatus::Running, None),
            member("web-2", ProfileStatus::Finished, None),
            member(
                "web-3",
                ProfileStatus::Expired,
                Some("no agent acknowledged"),
            ),
        ],
        reached_epsilon: Some(0.031),
        samples_used: Some(240),
        saved_secs: None,
        ended_at: None,
        ..precise_run()
    }
}

fn precision(samples: u64) -> RunPrecision {
    let share = |function: &str, share: f64, stderr: f64| ShareEstimate {
        function: function.into(),
        share,
        stderr,
        pooled_stderr: stderr,
        between_host_stderr: None,
    };
    RunPrecision {
        run: RUN,
        stop_when: StopRule {
            top: 3,
            max_stderr: 0.02,
        },
        decision: StopDecision {
            met: false,
            reached_epsilon: Some(0.025),
            samples_used: samples,
            hosts: 1,
            method: StderrMethod::Pooled,
            projected_samples: Some(600),
            top: vec![
                share("demo_hot", 0.6, 0.0198),
                share("demo_warm", 0.3, 0.0184),
                share("demo_cool", 0.1, 0.0121),
            ],
        },
    }
}

#[test]
fn the_summary_says_how_the_hosts_were_chosen_and_how_precise_it_got() {
    let text = summary(&precise_run());
    let has = |line: &str| {
        assert!(
            text.lines().any(|l| l.trim_end() == line),
            "no line {line:?} in\n{text}"
        )
    };
    has(&format!("run        {RUN}"));
    has("service    demo");
    has("status     precise (stop rule met: the top 3 shares known to ±0.0187 from 612 samples of 1 host)");
    has("hosts      1 of 1 live host chosen (count 3, capped: fewer live hosts); seed 7");
    has("strata     by zone: zone=eu-1 1 of 1");
    has("precision  ε ±1.87% (target ±2.00% for the top 3), 612 samples used");
    has("duration   60 s at most, 52.3 s saved by the stop rule");
    has("started    2026-11-27T09:00:00Z by odp-dev");
    has("ended      2026-11-27T09:00:08Z");
    let members: Vec<&str> = text
        .lines()
        .skip_while(|l| !l.starts_with("host "))
        .collect();
    assert_eq!(members.len(), 2, "{text}");
    let words: Vec<&str> = members[1].split_whitespace().collect();
    assert_eq!(
        words[..3],
        ["web-1", "stopped", &MEMBER.to_string()[..]],
        "{text}"
    );
    assert!(members[1].ends_with(&format!("stopped by run:{RUN}")));

    let plain = summary(&Run {
        stop_when: None,
        saved_secs: None,
        ..running_run()
    });
    assert!(!plain.contains("strata"), "{plain}");
    assert!(plain.contains("3 of 10 live hosts chosen (count 3); seed 7"));
    assert!(plain.contains("(no stop rule)"), "{plain}");
    assert!(plain.contains("ended      -\n"), "{plain}");
    assert!(plain.contains("no agent acknowledged"), "{plain}");
}

#[test]
fn progress_shows_time_members_and_epsilon_against_the_target() {
    let line = progress(&running_run(), Some(&precision(400)), at(12));
    assert_eq!(
        line,
        "running 12/60 s, 48 s left; ε ±2.50% (target ±2.00%); \
         members 1 running, 1 finished, 1 failed; 400/~600 samples"
    );
    // Before the first precision read: the run's own figures.
    let line = progress(&running_run(), None, at(75));
    assert!(
        line.starts_with("running 75/60 s, 0 s left; ε ±3.10% "),
        "{line}"
    );
    assert!(line.ends_with("; 240 samples"), "{line}");
    let plain = Run {
        stop_when: None,
        ..running_run()
    };
    let line = progress(&plain, Some(&precision(400)), at(12));
    assert!(line.contains("ε ±2.50% (no stop rule)"), "{line}");
    assert!(line.ends_with("; 400 samples"), "{line}");
    assert_eq!(
        progress(&precise_run(), None, at(100)),
        "precise after 8/60 s; ε ±1.87% (target ±2.00%); \
         members 0 running, 1 finished, 0 failed; 612 samples"
    );
    let ended = outcome(&precise_run());
    assert!(ended.starts_with(&format!("run {RUN} precise: stop rule met")));
    assert!(ended.ends_with("ε ±1.87% (target ±2.00% for the top 3), 52.3 s saved"));
    assert!(is_ended(RunStatus::Partial) && !is_ended(RunStatus::Dispatching));
}

#[test]
fn top_shares_are_a_top_table_with_errors() {
    let table = shares_table(&precision(612), None);
    let lines: Vec<&str> = table.lines().collect();
    assert_eq!(
        lines[0],
        "612 samples of 1 host; ± is the pooled binomial error"
    );
    assert_eq!(
        lines[1].split_whitespace().collect::<Vec<_>>(),
        ["function", "self"]
    );
    assert_eq!(lines[2], "demo_hot   60.0% ± 2.0");
    assert!(lines[3].starts_with("demo_warm") && lines[3].contains("30.0% ± 1.8"));
    assert_eq!(lines.len(), 5, "{table}");
}

#[test]
fn runs_list_as_a_table() {
    let page = RunsResponse {
        runs: vec![precise_run(), running_run()],
    };
    let table = runs_table(&page);
    let rows: Vec<Vec<&str>> = table
        .lines()
        .map(|l| l.split_whitespace().collect())
        .collect();
    assert_eq!(
        rows[0],
        ["id", "service", "status", "hosts", "ε", "created"]
    );
    let run = RUN.to_string();
    assert_eq!(
        rows[1],
        [
            &run[..],
            "demo",
            "precise",
            "1/1",
            "±1.87%",
            "2026-11-27T09:00:00Z"
        ]
    );
    assert_eq!(rows[2][2..5], ["running", "3/10", "±3.10%"]);
}

/// `GET /api/v1/runs/{id}/hosts` of a run of three hosts, one of which
/// runs a function the others do not.
fn run_hosts() -> odp_client::types::RunHostsResponse {
    use odp_client::types::{HostFunction, RunHost, SampleUnit};
    use odp_core::run::outliers::{FunctionMove, OutlierOptions};
    let host = |name: &str, samples, hot: &str, share, outlier| RunHost {
        host: name.into(),
        labels: BTreeMap::from([("version".to_owned(), "v1".to_owned())]),
        profile_id: Some(MEMBER),
        status: ProfileStatus::Finished,
        samples,
        snapshots: 3,
        top: vec![HostFunction {
            function: hot.into(),
            self_samples: (samples as f64 * share) as u64,
            self_share: share,
        }],
        statistic: if outlier { 812.4 } else { 3.2 },
        df: 10,
        p_value: if outlier { 1e-160 } else { 0.97 },
        distance: if outlier { 0.41 } else { 0.01 },
        outlier,
        moved: Some(FunctionMove {
            function: hot.into(),
            host_share: share,
            others_share: if outlier { 0.0 } else { share },
        }),
    };
    odp_client::types::RunHostsResponse {
        run_id: RUN,
        service: "demo".into(),
        event: Some(odp_core::EventKind::CpuClock),
        units: SampleUnit {
            unit: "nanoseconds".into(),
            period: Some(1e7),
        },
        samples: 3_000,
        options: OutlierOptions::default(),
        threshold: 0.01 / 3.0,
        functions: vec!["demo_hot".into(), "regex_backtrack".into()],
        hosts: vec![
            host("web-2", 1_000, "regex_backtrack", 0.4, true),
            host("web-1", 1_000, "demo_hot", 0.6, false),
            RunHost {
                labels: BTreeMap::new(),
                top: vec![],
                df: 0,
                p_value: 1.0,
                moved: None,
                ..host("web-3", 1_000, "demo_hot", 0.6, false)
            },
        ],
        outliers: vec!["web-2".into()],
    }
}

#[test]
fn hosts_list_as_a_table_with_their_outliers() {
    let table = hosts_table(&run_hosts(), None);
    let lines: Vec<&str> = table.lines().collect();
    assert!(lines[0].contains("3000 samples over 3 hosts"), "{table}");
    assert!(
        lines[0].contains("p < 3.33e-3") && lines[0].contains("top 10"),
        "{table}"
    );
    assert!(
        lines[1].starts_with("host") && lines[1].contains("chi²"),
        "{table}"
    );
    assert!(lines[2].starts_with("web-2"), "{table}");
    assert!(lines[2].contains("regex_backtrack 40.0%"), "{table}");
    assert!(lines[2].contains("version=v1") && lines[2].ends_with("OUTLIER"));
    assert!(lines[3].starts_with("web-1") && !lines[3].contains("OUTLIER"));
    // An untested host shows dashes, not a statistic.
    assert!(
        lines[4].starts_with("web-3") && lines[4].contains(" - "),
        "{table}"
    );
    assert!(table.contains("\n1 outlier:\n"), "{table}");
    assert!(
        table
            .contains("web-2: p 1.0e-160, moved most: regex_backtrack 40.0% vs 0.0% on the others"),
        "{table}"
    );

    let mut calm = run_hosts();
    for h in &mut calm.hosts {
        h.outlier = false;
    }
    assert!(hosts_table(&calm, None).contains("no outliers"));
}

#[test]
fn hosts_and_top_parse_and_ask_the_run() {
    let cli =
        Cli::try_parse_from(["run", "hosts", "x", "--top-k", "5", "--alpha", "0.05"]).unwrap();
    let RunAction::Hosts { top_k, alpha, .. } = cli.action else {
        panic!("not hosts")
    };
    assert_eq!((top_k, alpha), (Some(5), Some(0.05)));
    assert_eq!(
        hosts_path(RUN, top_k, alpha),
        format!("/api/v1/runs/{RUN}/hosts?top_k=5&alpha=0.05")
    );
    assert_eq!(
        hosts_path(RUN, None, None),
        format!("/api/v1/runs/{RUN}/hosts")
    );
    let cli = Cli::try_parse_from(["run", "top", "x", "--limit", "3", "--json"]).unwrap();
    assert!(matches!(
        cli.action,
        RunAction::Top {
            limit: 3,
            json: true,
            ..
        }
    ));
    assert!(Cli::try_parse_from(["run", "top", "x", "--limit", "many"]).is_err());
}

#[test]
fn a_runs_top_is_a_top_table() {
    use odp_client::types::{FunctionShare, RunTopResponse, SampleUnit};
    let top = RunTopResponse {
        run_id: RUN,
        service: "demo".into(),
        event: Some(odp_core::EventKind::CpuClock),
        units: SampleUnit {
            unit: "nanoseconds".into(),
            period: Some(1e7),
        },
        samples: 200,
        hosts: 2,
        functions: vec![FunctionShare {
            function: "demo_hot".into(),
            self_samples: 120,
            total_samples: 150,
            self_share: 0.6,
            total_share: 0.75,
            self_share_stderr: 0.0346,
        }],
    };
    let rows = crate::profile_view::TopRows {
        limit: 20,
        include_callers: false,
        width: None,
    };
    let table = top_table(&top, rows);
    let lines: Vec<&str> = table.lines().collect();
    assert!(
        lines[0].starts_with(&format!(
            "run {RUN} of demo: 200 cpu-clock samples of 2 hosts"
        )),
        "{table}"
    );
    assert!(lines[0].contains("(2.00 s of CPU time)"), "{table}");
    assert!(lines[1].starts_with("function"));
    assert!(lines[2].starts_with("demo_hot") && lines[2].contains("60.0% ± 3.5"));
    assert!(lines[2].trim_end().ends_with("75.0%"), "{table}");
}

/// `odpctl run issues` on a run's findings captured off a quick-start
/// stack (`tests/data/run-issues.json`: a rule on demo_hot at 40%), before
/// it is judged, and once judged with nothing found.
#[test]
fn a_runs_issues_name_the_hosts_where_each_is_highest() {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/run-issues.json");
    let found: odp_client::types::RunIssuesResponse =
        serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap();
    assert_eq!(
        issues_text(&found),
        "run 794de284-abca-4863-96f1-6931d09bbe38: 1 issue (judged 2026-11-28T00:52:04Z)\n\
         demo_hot is hot (demo-hot-try): 61.4% of 495 samples (threshold 40.0%)\n\
         \x20 highest on: vm 61.4%\n\
         \x20 fix: cool it\n"
    );
    let pending = odp_client::types::RunIssuesResponse {
        evaluated_at: None,
        issues: Vec::new(),
        ..found.clone()
    };
    assert!(issues_text(&pending).contains("not judged yet"));
    let clean = odp_client::types::RunIssuesResponse {
        issues: Vec::new(),
        ..found
    };
    assert!(issues_text(&clean).contains("no rule flagged it"));
}
