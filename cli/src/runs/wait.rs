//! `odpctl run wait`: the run's progress until it ends, then its top
//! shares.

use std::io::{IsTerminal as _, Write as _};
use std::time::Duration;

use anyhow::bail;
use chrono::{DateTime, Utc};
use odp_client::types::{Run, RunPrecision, RunStatus};
use odp_client::ApiClient;
use odp_core::ProfileStatus;
use uuid::Uuid;

use super::render::{epsilon, outcome, shares_table, status_name};
use crate::exit::ProfileEnded;
use crate::follow::Progress;
use crate::retry::{retrying, WAITS};

/// How long past its maximum duration a run may take to end before `wait`
/// gives up (members stopping, their agents flushing the last window).
pub(super) const GRACE: Duration = Duration::from_secs(180);
/// How often `wait` reads the run, and its precision.
pub(super) const POLL_EVERY: Duration = Duration::from_secs(1);
pub(super) const PRECISION_EVERY: Duration = Duration::from_secs(3);
/// Without a terminal, a progress line when something changed or this long
/// after the last one.
pub(super) const PLAIN_LINE_EVERY: Duration = Duration::from_secs(10);

/// Shows the run's progress until it ends (a live line on a terminal,
/// plain lines otherwise, on standard error), then prints its top shares;
/// fails (exit 6) when it ended partial. While the API is away the calls
/// are retried, and the line says so.
pub(super) async fn follow(
    client: &ApiClient,
    id: Uuid,
    width: Option<usize>,
) -> anyhow::Result<()> {
    let live = std::io::stderr().is_terminal();
    let mut notes = Progress::new(format!("run {id}: "));
    let mut run = retrying(WAITS, || client.run(id), |m| notes.note(m)).await?;
    let left = remaining_secs(&run, Utc::now());
    let deadline = tokio::time::Instant::now() + Duration::from_secs(left) + GRACE;
    let mut precision: Option<(RunPrecision, tokio::time::Instant)> = None;
    let mut last_line: Option<((RunStatus, MemberCounts), tokio::time::Instant)> = None;
    loop {
        let now = tokio::time::Instant::now();
        if precision
            .as_ref()
            .is_none_or(|(_, at)| now.duration_since(*at) >= PRECISION_EVERY)
        {
            let read = retrying(WAITS, || client.run_precision(id), |m| notes.note(m)).await?;
            precision = Some((read, now));
        }
        let line = progress(&run, precision.as_ref().map(|(p, _)| p), Utc::now());
        let ended = is_ended(run.status);
        if live {
            // Redrawn in place: back to the line's start, erase it, and
            // write it with the terminal's auto-wrap off (`ESC [?7l`, on
            // again right after) so a line wider than the terminal is cut
            // at its edge instead of wrapping out of reach of `\r`.
            let mut stderr = std::io::stderr().lock();
            let _ = write!(stderr, "\r\x1b[2K\x1b[?7l{line}\x1b[?7h");
            if ended {
                let _ = writeln!(stderr);
            }
            let _ = stderr.flush();
        } else {
            let key = (run.status, MemberCounts::of(&run));
            let due = last_line.as_ref().is_none_or(|(last, at)| {
                *last != key || now.duration_since(*at) >= PLAIN_LINE_EVERY
            });
            if due {
                eprintln!("run {id}: {line}");
                last_line = Some((key, now));
            }
        }
        if ended {
            break;
        }
        if now >= deadline {
            if live {
                eprintln!();
            }
            bail!(
                "run {id} still {} {} s after its {} s",
                status_name(run.status),
                GRACE.as_secs(),
                run.duration_secs
            );
        }
        tokio::time::sleep(POLL_EVERY).await;
        run = retrying(WAITS, || client.run(id), |m| notes.note(m)).await?;
    }
    let run = settle(client, run).await?;
    let precision = retrying(WAITS, || client.run_precision(id), |m| notes.note(m)).await?;
    notes.done();
    eprintln!("{}", outcome(&run));
    print!("{}", shares_table(&precision, width));
    if run.status == RunStatus::Partial {
        return Err(ProfileEnded(format!(
            "run {id} ended partial: {}",
            run.status_reason.as_deref().unwrap_or("some hosts failed")
        ))
        .into());
    }
    Ok(())
}

/// The ended run once its members have ended too and its end is recorded
/// (a precise or stopped run's members are still stopping), for at most
/// 30 s; the members' last windows reach storage just after.
pub(super) async fn settle(client: &ApiClient, mut run: Run) -> anyhow::Result<Run> {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    while (run.ended_at.is_none() || run.members.iter().any(|m| !m.status.is_terminal()))
        && tokio::time::Instant::now() < deadline
    {
        tokio::time::sleep(Duration::from_millis(500)).await;
        run = client.run(run.id).await?;
    }
    tokio::time::sleep(Duration::from_secs(1)).await;
    let run = client.run(run.id).await?;
    Ok(run)
}

pub(super) fn is_ended(status: RunStatus) -> bool {
    matches!(
        status,
        RunStatus::Finished | RunStatus::Stopped | RunStatus::Precise | RunStatus::Partial
    )
}

/// Members still under way, ended well, and failed or expired.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct MemberCounts {
    running: usize,
    finished: usize,
    failed: usize,
}

impl MemberCounts {
    fn of(run: &Run) -> Self {
        let count =
            |f: fn(ProfileStatus) -> bool| run.members.iter().filter(|m| f(m.status)).count();
        MemberCounts {
            running: count(|s| !s.is_terminal()),
            finished: count(|s| matches!(s, ProfileStatus::Finished | ProfileStatus::Stopped)),
            failed: count(|s| matches!(s, ProfileStatus::Failed | ProfileStatus::Expired)),
        }
    }
}

/// Seconds since the run started (to its end once ended).
pub(super) fn elapsed_secs(run: &Run, now: DateTime<Utc>) -> u64 {
    let until = run.ended_at.unwrap_or(now);
    (until - run.created_at).num_seconds().max(0).unsigned_abs()
}

/// Seconds of the run's maximum duration still to go.
pub(super) fn remaining_secs(run: &Run, now: DateTime<Utc>) -> u64 {
    run.duration_secs.saturating_sub(elapsed_secs(run, now))
}

/// One line of `wait`'s progress, most telling first (a terminal narrower
/// than the line cuts its end): status and time, ε against the target,
/// members, samples.
pub(super) fn progress(run: &Run, precision: Option<&RunPrecision>, now: DateTime<Utc>) -> String {
    let elapsed = elapsed_secs(run, now);
    let status = status_name(run.status);
    let duration = run.duration_secs;
    let time = if is_ended(run.status) {
        format!("{status} after {elapsed}/{duration} s")
    } else {
        let left = duration.saturating_sub(elapsed);
        format!("{status} {elapsed}/{duration} s, {left} s left")
    };
    let reached = precision.map_or(run.reached_epsilon, |p| p.decision.reached_epsilon);
    let reached = reached.map_or_else(|| "-".to_owned(), epsilon);
    let target = run.stop_when.map_or_else(
        || "no stop rule".to_owned(),
        |r| format!("target {}", epsilon(r.max_stderr)),
    );
    let counts = MemberCounts::of(run);
    let mut line = format!(
        "{time}; ε {reached} ({target}); members {} running, {} finished, {} failed",
        counts.running, counts.finished, counts.failed,
    );
    let samples = precision
        .map(|p| p.decision.samples_used)
        .or(run.samples_used.map(|n| n.max(0).unsigned_abs()));
    if let Some(samples) = samples {
        let projected = precision
            .filter(|_| run.stop_when.is_some())
            .and_then(|p| p.decision.projected_samples)
            .filter(|&n| n > samples);
        match projected {
            Some(projected) => line.push_str(&format!("; {samples}/~{projected} samples")),
            None => line.push_str(&format!("; {}", crate::text::count(samples, "sample"))),
        }
    }
    line
}
