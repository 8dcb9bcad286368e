//! `odpctl start --wait`: a profile followed to its end, with how long it
//! has run, how long is left and the samples stored so far; on a terminal
//! one line redrawn in place, otherwise a line when the status changes and
//! every few seconds. When the API is away the line says so while the
//! calls are retried.

use std::io::{IsTerminal as _, Write as _};
use std::time::Duration;

use chrono::{DateTime, Utc};
use odp_client::types::{Profile, ProfileStatus, TimelineJson};
use odp_client::ApiClient;
use tokio::time::Instant;
use uuid::Uuid;

use crate::exit::ProfileEnded;
use crate::profile_view::{top_text, TopRows};
use crate::retry::{retrying, WAITS};
use crate::text::{count, span};

/// How often the profile is read, and its samples counted.
const POLL_EVERY: Duration = Duration::from_secs(1);
const SAMPLES_EVERY: Duration = Duration::from_secs(2);
/// Without a terminal: a line when the status changes or this long after
/// the last one.
pub(crate) const PLAIN_LINE_EVERY: Duration = Duration::from_secs(5);
/// How long past its duration a profile may take to end before the wait
/// gives up (dispatch, the agent's last window).
const GRACE: Duration = Duration::from_secs(180);

/// Where a wait's progress goes: standard error, redrawn in place on a
/// terminal, plain lines otherwise.
pub(crate) struct Progress {
    live: bool,
    prefix: String,
    drawn: bool,
    last_plain: Option<(String, Instant)>,
}

impl Progress {
    pub(crate) fn new(prefix: String) -> Progress {
        Progress {
            live: std::io::stderr().is_terminal(),
            prefix,
            drawn: false,
            last_plain: None,
        }
    }

    /// Shows `line`; without a terminal only when `key` changed or
    /// [`PLAIN_LINE_EVERY`] passed.
    pub(crate) fn show(&mut self, key: &str, line: &str) {
        if self.live {
            self.redraw(line);
            return;
        }
        let now = Instant::now();
        let due = self
            .last_plain
            .as_ref()
            .is_none_or(|(last, at)| last != key || now.duration_since(*at) >= PLAIN_LINE_EVERY);
        if due {
            eprintln!("{}{line}", self.prefix);
            self.last_plain = Some((key.to_owned(), now));
        }
    }

    /// Shows `line` whatever it replaces (a retry, a warning).
    pub(crate) fn note(&mut self, line: &str) {
        if self.live {
            self.redraw(line);
        } else {
            eprintln!("{}{line}", self.prefix);
        }
    }

    /// Ends the live line, so what follows starts on a line of its own.
    pub(crate) fn done(&mut self) {
        if self.live && self.drawn {
            eprintln!();
            self.drawn = false;
        }
    }

    fn redraw(&mut self, line: &str) {
        // Back to the line's start, erase it, and write it with the
        // terminal's auto-wrap off (`ESC [?7l`, on again right after) so
        // a line wider than the terminal is cut at its edge instead of
        // wrapping out of reach of `\r`.
        let mut stderr = std::io::stderr().lock();
        let _ = write!(stderr, "\r\x1b[2K\x1b[?7l{}{line}\x1b[?7h", self.prefix);
        let _ = stderr.flush();
        self.drawn = true;
    }
}

/// One line of a profile's progress: `running, 3 s of 6 s, 3 s left, 290
/// samples so far`; before it starts, how long it has waited for its
/// agent.
pub(crate) fn progress_line(profile: &Profile, samples: Option<u64>, now: DateTime<Utc>) -> String {
    let asked = profile.duration_ms.max(0) as f64 / 1000.0;
    let secs_since = |from: DateTime<Utc>, to: DateTime<Utc>| {
        ((to - from).num_milliseconds().max(0) / 1000) as f64
    };
    let status = profile.status;
    let mut line = match (status, profile.started_at) {
        (ProfileStatus::Dispatched, _) | (_, None) if !status.is_terminal() => format!(
            "{status}, waiting for the agent ({})",
            span(secs_since(profile.created_at, now))
        ),
        (_, Some(started)) if !status.is_terminal() => {
            let elapsed = secs_since(started, now);
            format!(
                "{status}, {} of {}, {} left",
                span(elapsed),
                span(asked),
                span((asked - elapsed).max(0.0))
            )
        }
        (_, started) => {
            let ran = started
                .zip(profile.finished_at)
                .map(|(from, to)| (to - from).num_milliseconds().max(0) as f64 / 1000.0);
            match ran {
                Some(ran) => format!("{status} after {} of {}", span(ran), span(asked)),
                None => status.to_string(),
            }
        }
    };
    match samples {
        // Windows arrive every few seconds: none stored yet is no news.
        Some(0) | None if !status.is_terminal() => {}
        Some(samples) => {
            let so_far = if status.is_terminal() { "" } else { " so far" };
            line.push_str(&format!(", {}{so_far}", count(samples, "sample")));
        }
        None => {}
    }
    if status.is_terminal() {
        if let Some(reason) = &profile.status_reason {
            line.push_str(&format!(" ({reason})"));
        }
    }
    line
}

/// The samples stored so far: the sum of the profile's windows.
pub(crate) fn stored_samples(timeline: &TimelineJson) -> u64 {
    timeline
        .windows
        .iter()
        .map(|w| w.samples.max(0).unsigned_abs())
        .sum()
}

/// Follows the profile until it ends, then prints its top functions;
/// fails (exit 6) if it did not finish well.
pub(crate) async fn follow(
    client: &ApiClient,
    id: Uuid,
    duration_secs: u64,
    rows: TopRows,
) -> anyhow::Result<()> {
    let deadline = Instant::now() + Duration::from_secs(duration_secs) + GRACE;
    let mut progress = Progress::new(format!("{id}: "));
    let mut samples: Option<(u64, Instant)> = None;
    let profile = loop {
        let profile = retrying(WAITS, || client.profile(id), |m| progress.note(m)).await?;
        let now = Instant::now();
        let started = profile.started_at.is_some();
        if started
            && samples
                .as_ref()
                .is_none_or(|(_, at)| now.duration_since(*at) >= SAMPLES_EVERY)
        {
            let path = format!("/api/v1/profiles/{id}/timeline");
            let timeline: Option<TimelineJson> =
                retrying(WAITS, || client.get(&path), |m| progress.note(m))
                    .await
                    .ok();
            if let Some(timeline) = timeline {
                samples = Some((stored_samples(&timeline), now));
            }
        }
        if profile.status.is_terminal() {
            break profile;
        }
        let line = progress_line(&profile, samples.map(|(n, _)| n), Utc::now());
        progress.show(profile.status.as_str(), &line);
        if now >= deadline {
            progress.done();
            anyhow::bail!(
                "profile {id} still {} {} s after its {duration_secs} s",
                profile.status,
                GRACE.as_secs()
            );
        }
        tokio::time::sleep(POLL_EVERY).await;
    };
    let status = profile.status;
    if !matches!(status, ProfileStatus::Finished | ProfileStatus::Stopped) {
        let line = progress_line(&profile, samples.map(|(n, _)| n), Utc::now());
        progress.show(status.as_str(), &line);
        progress.done();
        return Err(ProfileEnded(format!(
            "profile {id} ended {status}: {}",
            profile.status_reason.unwrap_or_default()
        ))
        .into());
    }
    // The last window reaches storage just after the agent reports the
    // end; the samples the line ends with are those the table counts.
    tokio::time::sleep(Duration::from_secs(1)).await;
    let top = retrying(WAITS, || client.top(id, rows.limit), |m| progress.note(m)).await?;
    let line = progress_line(&profile, Some(top.samples), Utc::now());
    progress.show(status.as_str(), &line);
    progress.done();
    print!("{}", top_text(&top, rows));
    Ok(())
}
