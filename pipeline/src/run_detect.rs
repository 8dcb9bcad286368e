//! Detection on runs (issue 26): once a run has ended, the rules judge its
//! members' samples merged ([`odp_rules::run`]) and each finding raises one
//! alert per matching channel for the whole run, naming the hosts where
//! its rule measures most. The members' own evaluations still store their
//! detections, but leave the alerts of the rules a run judges to it.

use std::time::Duration;

use odp_rules::run::{evaluate_run, Member};
use odp_rules::RuleSet;
use odp_store::{Database, RunRow, Runs, StoreError};

/// Ended runs evaluated per pass of the deferred detection.
const RUNS_PER_PASS: i64 = 2;
/// How long after a run ended it is judged: a member's last window may
/// still be on its way when the stop rule ends the run.
const SETTLED: Duration = Duration::from_secs(3);
/// Bound on one run's evaluation (a member's profile is read each).
const RUN_EVALUATION_TIMEOUT: Duration = Duration::from_secs(120);

/// Evaluates the runs that ended since the last pass; a run whose
/// evaluation fails stays due for the next. Never fails.
pub async fn evaluate_ended_runs(pool: &Database, rules: &RuleSet) {
    let runs = Runs::new(pool.clone());
    let due = match runs.awaiting_detection(SETTLED, RUNS_PER_PASS).await {
        Ok(due) => due,
        Err(e) => {
            tracing::warn!(error = %e, "reading the runs awaiting detection failed");
            return;
        }
    };
    for run in due {
        match tokio::time::timeout(RUN_EVALUATION_TIMEOUT, evaluate(&runs, pool, rules, &run)).await
        {
            Ok(Ok(found)) => {
                tracing::info!(run_id = %run.id, service = %run.service, found, "run evaluated")
            }
            Ok(Err(e)) => tracing::warn!(run_id = %run.id, error = %e, "run detection failed"),
            Err(_) => tracing::warn!(run_id = %run.id, timeout = ?RUN_EVALUATION_TIMEOUT,
                "run detection timed out; tried again next pass"),
        }
    }
}

/// Judges one ended run and records what it found with its alerts; how
/// many rules flagged it.
async fn evaluate(
    runs: &Runs,
    pool: &Database,
    rules: &RuleSet,
    run: &RunRow,
) -> Result<usize, StoreError> {
    let mut members = Vec::new();
    for profile in runs.members(run.id).await? {
        let data = odp_store::profile_frames(pool, profile.id).await?;
        members.push(Member {
            profile_id: profile.id,
            host: profile.host,
            data,
        });
    }
    let found = evaluate_run(rules, &run.service, &members);
    runs.save_detections(run.id, &run.service, &found).await?;
    if !found.is_empty() {
        let rules: Vec<&str> = found.iter().map(|f| f.detection.rule_id.as_str()).collect();
        tracing::info!(run_id = %run.id, service = %run.service, ?rules, "new issues detected in a run");
    }
    Ok(found.len())
}
