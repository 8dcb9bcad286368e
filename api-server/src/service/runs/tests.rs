use super::*;

fn member(host: &str, status: ProfileStatus, reason: Option<&str>) -> RunMember {
    RunMember {
        host: host.into(),
        profile_id: None,
        status,
        reason: reason.map(str::to_owned),
    }
}

#[test]
fn the_host_limit_counts_the_chosen_and_the_busy_hosts() {
    assert!(check_host_limit(2, 0, 2, "alice").is_ok());
    assert!(check_host_limit(1, 1, 2, "alice").is_ok());
    let Err(ServiceError::Invalid(message)) = check_host_limit(2, 1, 2, "alice") else {
        panic!("3 hosts are over a limit of 2")
    };
    assert!(
        message.contains("profile 2 host(s) while the running runs of alice profile 1")
            && message.contains("3 is more than the limit of 2")
            && message.contains("ODP_MAX_RUN_HOSTS_PER_USER"),
        "{message}"
    );
    assert!(check_host_limit(1, 0, 0, "schedule:x").is_err());
}

#[test]
fn a_run_without_a_profile_on_some_host_ends_partial_with_each_reason() {
    let done = [
        member("h1", ProfileStatus::Finished, None),
        member("h2", ProfileStatus::Stopped, Some("stopped by run:x")),
    ];
    assert_eq!(
        ending_of(&done),
        (RunState::Finished, "every member ended".to_owned())
    );
    let mut members = done.to_vec();
    members.push(member(
        "h3",
        ProfileStatus::Failed,
        Some("not started: the target already has a live profile p1"),
    ));
    members.push(member("h4", ProfileStatus::Expired, None));
    let (state, reason) = ending_of(&members);
    assert_eq!(state, RunState::Partial);
    assert_eq!(
        reason,
        "every member ended; 2 of 4 host(s) have no profile to show: \
         h3: not started: the target already has a live profile p1; h4: expired"
    );
    let many: Vec<RunMember> = (0..7)
        .map(|i| member(&format!("h{i}"), ProfileStatus::Failed, Some("failed")))
        .collect();
    assert!(ending_of(&many).1.ends_with("; and 2 more"));
    assert_eq!(status_of(RunState::Partial, &members), RunStatus::Partial);
}

fn record(host: &str, started: bool, reason: Option<&str>) -> RunHost {
    RunHost {
        host: host.into(),
        profile_id: None,
        started,
        reason: reason.map(str::to_owned),
        blocked_by: None,
    }
}

#[test]
fn a_member_not_started_says_why_and_one_being_started_waits() {
    let not_started = member_of(
        "h1",
        None,
        Some(&record(
            "h1",
            false,
            Some("the target already has a live profile p1"),
        )),
        true,
    );
    assert_eq!(not_started.status, ProfileStatus::Failed);
    assert_eq!(
        not_started.reason.as_deref(),
        Some("not started: the target already has a live profile p1")
    );
    let starting = member_of("h2", None, None, true);
    assert_eq!(starting.status, ProfileStatus::Requested);
    let lost = member_of("h2", None, None, false);
    assert_eq!(lost.status, ProfileStatus::Failed);
    assert!(lost.reason.unwrap().starts_with("not started"));
}
