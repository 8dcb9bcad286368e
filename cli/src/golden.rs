//! What odpctl prints, from response bodies captured off a real stack
//! (`tests/data/`, see its README), against golden files
//! (`tests/golden/`). `ODP_BLESS=1 cargo test -p odpctl golden` rewrites
//! the golden files; review the diff before committing them.

use chrono::{DateTime, TimeZone as _, Utc};
use odp_client::types::{
    AggregateJson, Channel, ChannelList, DiffJson, HostsResponse, Profile, ProfileStatus,
    ProfilesPage, RequestList, ScheduleWithRuns, SchedulesResponse, TimelineJson, TopResponse,
};

use crate::compare_view::{aggregate_text, diff_text, empty_aggregate, is_empty_export, Runtimes};
use crate::profile_view::{profile_summary, profiles_table, top_text, TopRows};

const DATA: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data");
const GOLDEN: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/golden");

fn bytes(name: &str) -> Vec<u8> {
    let path = format!("{DATA}/{name}");
    std::fs::read(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
}

/// The body in `tests/data/{name}`, decoded as the type asked for.
macro_rules! data {
    ($name:expr) => {
        serde_json::from_slice(&bytes($name)).unwrap_or_else(|e| panic!("{}: {e}", $name))
    };
}

/// `actual` is what `tests/golden/{name}` holds (or, with `ODP_BLESS`,
/// becomes it).
fn golden(name: &str, actual: &str) {
    let path = format!("{GOLDEN}/{name}");
    if std::env::var_os("ODP_BLESS").is_some() {
        std::fs::create_dir_all(GOLDEN).unwrap();
        std::fs::write(&path, actual).unwrap();
    }
    let expected = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        expected == actual,
        "{name} differs from {path} (ODP_BLESS=1 rewrites it):\n--- expected\n{expected}\n--- actual\n{actual}"
    );
}

/// Just after the captures.
fn now() -> DateTime<Utc> {
    Utc.with_ymd_and_hms(2026, 11, 27, 14, 28, 6).unwrap()
}

const ROWS: TopRows = TopRows {
    limit: 15,
    include_callers: false,
    width: None,
};

#[test]
fn status_is_a_summary_not_the_body() {
    let python: Profile = data!("profile-python.json");
    let top: TopResponse = data!("top-python.json");
    let summary = profile_summary(&python, Some(&top), now());
    golden("status-python.txt", &summary);
    // 600-odd lines of JSON become a screenful.
    assert!(summary.lines().count() < 25, "{summary}");
    assert!(summary.contains("python 3.11, 110 packages, 7 shared libraries, 2 flags"));

    let jvm: Profile = data!("profile-jvm.json");
    let top: TopResponse = data!("top-jvm.json");
    golden("status-jvm.txt", &profile_summary(&jvm, Some(&top), now()));
    let native: Profile = data!("profile-native.json");
    let top: TopResponse = data!("top-native.json");
    golden(
        "status-native.txt",
        &profile_summary(&native, Some(&top), now()),
    );
    // Half of the demo's CPU time fell in cost control's pauses: the
    // coverage line says so, and the warning.
    let duty: Profile = data!("profile-duty.json");
    let top: TopResponse = data!("top-duty.json");
    let summary = profile_summary(&duty, Some(&top), now());
    golden("status-duty.txt", &summary);
    assert!(
        summary.contains("593 of 1187 expected from its CPU time (50.0%); lost: 594 paused"),
        "{summary}"
    );
    assert!(
        summary.contains("warning     50.0% of the samples"),
        "{summary}"
    );
    let failed: Profile = data!("profile-failed.json");
    golden("status-failed.txt", &profile_summary(&failed, None, now()));
    let running: Profile = data!("profile-running.json");
    golden(
        "status-running.txt",
        &profile_summary(&running, None, now()),
    );
}

#[test]
fn top_shows_self_time_and_hides_the_callers_unless_asked() {
    let native: TopResponse = data!("top-native.json");
    let table = top_text(&native, ROWS);
    golden("top-native.txt", &table);
    assert!(!table.contains("_start"), "{table}");
    assert!(!table.contains("0.0% ± 0.0"), "{table}");
    let all = top_text(
        &native,
        TopRows {
            include_callers: true,
            ..ROWS
        },
    );
    golden("top-native-include-callers.txt", &all);
    assert!(all.contains("_start"), "{all}");

    let jvm: TopResponse = data!("top-jvm.json");
    golden("top-jvm.txt", &top_text(&jvm, ROWS));
    // On an 80-column terminal the long names are cut in the middle.
    let narrow = top_text(
        &jvm,
        TopRows {
            width: Some(80),
            include_callers: true,
            ..ROWS
        },
    );
    golden("top-jvm-80-columns.txt", &narrow);
    assert!(narrow.lines().all(|l| l.chars().count() <= 80), "{narrow}");
    golden("top-python.txt", &top_text(&data!("top-python.json"), ROWS));
}

#[test]
fn list_columns_hold_every_status_word() {
    let page: ProfilesPage = data!("profiles.json");
    let table = profiles_table(&page);
    golden("list.txt", &table);
    // Every row's columns start where the header's do.
    let header = table.lines().next().unwrap();
    let at = |line: &str, word: &str| line.find(word).unwrap();
    for line in table.lines().skip(1).filter(|l| !l.starts_with('(')) {
        let status = line.split_whitespace().nth(1).unwrap();
        assert_eq!(at(line, status), at(header, "status"), "{table}");
    }
}

#[test]
fn aggregate_is_a_top_table_and_an_empty_one_is_the_same_error_in_every_format() {
    let aggregate: AggregateJson = data!("aggregate-checkout.json");
    golden("aggregate.txt", &aggregate_text(&aggregate, ROWS));

    for format in ["folded", "pprof", "speedscope"] {
        assert!(
            is_empty_export(format, &bytes(&format!("aggregate-empty.{format}"))),
            "{format}"
        );
        assert!(
            !is_empty_export(format, &bytes(&format!("aggregate-checkout.{format}"))),
            "{format}"
        );
    }
    assert!(is_empty_export("json", &bytes("aggregate-empty.json")));
    assert!(!is_empty_export("json", &bytes("aggregate-checkout.json")));
    let empty: AggregateJson = data!("aggregate-empty.json");
    assert_eq!(empty.samples, 0);
    let svg_404: serde_json::Value = data!("aggregate-empty-svg-404.json");
    assert!(svg_404["error"]["message"]
        .as_str()
        .unwrap()
        .contains("no samples"));
    assert_eq!(
        empty_aggregate(
            "checkout-api",
            "2026-11-26T14:00:00Z",
            "2026-11-26T15:00:00Z",
            false
        ),
        "no profiles of checkout-api between 2026-11-26T14:00:00Z and 2026-11-26T15:00:00Z"
    );
}

#[test]
fn diff_names_its_columns_and_marks_what_is_significant() {
    let diff: DiffJson = data!("diff-python.json");
    let baseline: Profile = data!("profile-python.json");
    let target = Profile {
        id: diff
            .target
            .label
            .trim_start_matches("profile ")
            .parse()
            .unwrap(),
        ..baseline.clone()
    };
    let runtimes = Runtimes {
        baseline: &baseline,
        target: &target,
    };
    let text = diff_text(&diff, Some(runtimes), None);
    golden("diff-python.txt", &text);
    let row = |name: &str| {
        text.lines()
            .find(|l| l.starts_with(&format!("{name} ")))
            .unwrap_or_else(|| panic!("no {name} in\n{text}"))
            .to_owned()
    };
    assert!(row("iterencode").ends_with('*'), "{text}");
    // On a narrow terminal the function names give way.
    let narrow = diff_text(&diff, None, Some(40));
    golden("diff-python-40-columns.txt", &narrow);
    assert!(narrow.contains("serializ…esponse "), "{narrow}");

    // With --force, profiles of two runtimes; the header says which.
    let native: Profile = data!("profile-native.json");
    let forced: DiffJson = data!("diff-native-python.json");
    let python = Profile {
        id: forced
            .target
            .label
            .trim_start_matches("profile ")
            .parse()
            .unwrap(),
        ..baseline.clone()
    };
    let runtimes = Runtimes {
        baseline: &native,
        target: &python,
    };
    golden(
        "diff-native-python-forced.txt",
        &diff_text(&forced, Some(runtimes), None),
    );
}

#[test]
fn profiles_of_different_runtimes_are_not_compared_without_force() {
    let native: Profile = data!("profile-native.json");
    let python: Profile = data!("profile-python.json");
    let refused = crate::compare::comparable(&native, &python).unwrap_err();
    golden("diff-refused.txt", &format!("{refused}\n"));
    assert!(crate::compare::comparable(&python, &python).is_ok());
    let wall: Profile = data!("profile-running.json");
    let events = crate::compare::comparable(&python, &wall).unwrap_err();
    assert!(events.contains("different events"), "{events}");
    // What is not known yet is not held against a profile.
    let failed: Profile = data!("profile-failed.json");
    assert!(crate::compare::comparable(&failed, &python).is_ok());
}

#[test]
fn schedules_and_channels_show_summaries() {
    let every_minute: ScheduleWithRuns = data!("schedule-every-minute.json");
    golden(
        "schedule-every-minute.txt",
        &crate::schedules::schedule_summary(&every_minute),
    );
    let nightly: ScheduleWithRuns = data!("schedule-nightly.json");
    golden(
        "schedule-nightly.txt",
        &crate::schedules::schedule_summary(&nightly),
    );
    let schedules: SchedulesResponse = data!("schedules.json");
    golden(
        "schedules.txt",
        &crate::schedules::schedules_table(&schedules),
    );
    let webhook: Channel = data!("channel-webhook.json");
    golden(
        "channel-webhook.txt",
        &crate::channels::channel_summary(&webhook),
    );
    let email: Channel = data!("channel-email.json");
    golden(
        "channel-email.txt",
        &crate::channels::channel_summary(&email),
    );
    let channels: ChannelList = data!("channels.json");
    golden("channels.txt", &crate::channels::channels_table(&channels));
}

#[test]
fn admin_tables() {
    let hosts: HostsResponse = data!("hosts.json");
    golden("hosts.txt", &crate::admin::hosts_table(&hosts));
    let requests: RequestList = data!("requests.json");
    golden("requests.txt", &crate::admin::requests_table(&requests));
}

#[test]
fn agent_identities_show_their_state_and_enroll_says_where_the_files_are() {
    use odp_client::types::{AgentIdentityList, IssuedAgentIdentity};
    let list: AgentIdentityList = data!("agent-identities.json");
    let table = crate::agents::identities_table(&list, now());
    golden("agent-identities.txt", &table);
    for state in ["valid", "revoked", "expired"] {
        assert!(table.contains(&format!(" {state} ")), "{state}: {table}");
    }
    let empty = AgentIdentityList { identities: vec![] };
    assert!(crate::agents::identities_table(&empty, now()).ends_with("(no agent identities)\n"));
    let enrolled: IssuedAgentIdentity = data!("agent-identity-enrolled.json");
    let dir = std::path::Path::new("./odp-agent-identity");
    golden(
        "agent-enroll.txt",
        &crate::agents::enroll_summary(&enrolled, dir),
    );
}

#[test]
fn enrollment_tokens_show_their_state_and_create_says_how_to_start_the_agent() {
    use odp_client::types::{CreatedEnrollmentToken, EnrollmentTokenList};
    let list: EnrollmentTokenList = data!("enrollment-tokens.json");
    let table = crate::enrollment::tokens_table(&list);
    golden("enrollment-tokens.txt", &table);
    for state in ["unused", "used", "revoked", "expired"] {
        assert!(table.contains(&format!(" {state} ")), "{state}: {table}");
    }
    assert!(table.contains("2 identities"), "{table}");
    // Listed tokens carry no secret to show.
    assert!(!table.contains("odp-enroll-"), "{table}");
    let empty = EnrollmentTokenList { tokens: vec![] };
    assert!(crate::enrollment::tokens_table(&empty).ends_with("(no enrollment tokens)\n"));
    let created: CreatedEnrollmentToken = data!("enrollment-token-created.json");
    let summary = crate::enrollment::created_summary(&created, "https://odp.example.com:8443");
    golden("enrollment-token-created.txt", &summary);
    assert!(summary.contains(&created.secret), "{summary}");
}

#[test]
fn wait_progress_says_time_and_samples() {
    use crate::follow::{progress_line, stored_samples};
    let running: Profile = data!("profile-running.json");
    let timeline: TimelineJson = data!("timeline-running.json");
    let samples = stored_samples(&timeline);
    let mut lines = vec![
        progress_line(&running, None, running.started_at.unwrap()),
        progress_line(&running, Some(samples), now()),
    ];
    let dispatched = Profile {
        status: ProfileStatus::Dispatched,
        started_at: None,
        ..running.clone()
    };
    lines.push(progress_line(&dispatched, None, now()));
    let finished: Profile = data!("profile-python.json");
    lines.push(progress_line(&finished, Some(578), now()));
    let failed: Profile = data!("profile-failed.json");
    lines.push(progress_line(&failed, None, now()));
    golden("wait-progress.txt", &(lines.join("\n") + "\n"));
}
