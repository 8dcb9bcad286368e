//! A run's precision, and the watcher that ends runs: once every member
//! has ended, or as soon as the stop rule holds of the run's aggregate
//! (the `top` largest self shares each known to ±`max_stderr`, with the
//! between-host error once there are enough hosts: `odp_core::run`).

use std::time::Duration;

use odp_core::run::{Aggregate, StopDecision, StopRule};
use odp_profile::top::top_functions;
use odp_store::{read, Database, Read, ReadScope, RunEnd, RunRow, RunState, Runs};
use uuid::Uuid;

use crate::service::runs;
use crate::service_error::ServiceError;
use crate::AppState;

/// How often running runs are checked.
const CHECK_EVERY: Duration = Duration::from_secs(2);

/// The rule shown for a run without one.
pub(crate) const DEFAULT_RULE: StopRule = StopRule {
    top: 5,
    max_stderr: 0.01,
};

/// The run's samples so far, per host and function, as the stop rule
/// reads them: each host's self counts, the rest of its samples
/// unattributed.
pub(crate) async fn aggregate(db: &Database, run: Uuid) -> Result<Aggregate, ServiceError> {
    let members = Read {
        scope: ReadScope::Run(run),
        ..Read::profile(run)
    };
    let result = read(db, &members).await?;
    let mut aggregate = Aggregate::new();
    for host in &result.hosts {
        let view = host.view();
        let mut attributed = 0;
        for share in top_functions(&view, usize::MAX) {
            if share.self_samples > 0 {
                aggregate.record(&host.host, &share.function, share.self_samples);
                attributed += share.self_samples;
            }
        }
        aggregate.record_unattributed(&host.host, host.samples().saturating_sub(attributed));
    }
    Ok(aggregate)
}

/// The rule a run is judged by: its own, or [`DEFAULT_RULE`].
pub(crate) fn rule_of(row: &RunRow) -> Result<StopRule, ServiceError> {
    Ok(match &row.stop_rule {
        Some(rule) => RunRow::decode(&rule.0, "stop_rule")?,
        None => DEFAULT_RULE,
    })
}

/// The rule's decision on the run's aggregate now.
pub(crate) async fn decide(
    db: &Database,
    row: &RunRow,
) -> Result<(StopRule, StopDecision), ServiceError> {
    let rule = rule_of(row)?;
    let decision = rule.evaluate(&aggregate(db, row.id).await?);
    Ok((rule, decision))
}

/// Checks every running run, every [`CHECK_EVERY`], for as long as the
/// server runs.
pub(crate) async fn watch_forever(state: AppState) {
    let mut tick = tokio::time::interval(CHECK_EVERY);
    loop {
        tick.tick().await;
        let running = match Runs::new(&state.pool).running().await {
            Ok(running) => running,
            Err(e) => {
                tracing::warn!(error = %e, "reading the running runs failed");
                continue;
            }
        };
        for row in running {
            let id = row.id;
            if let Err(e) = check(&state, row).await {
                tracing::warn!(run = %id, error = %e, "checking a run failed");
            }
        }
    }
}

/// Ends `row` if its members all ended or its stop rule holds. A run
/// without a stop rule is read only when it ends (its precision is read on
/// request): reading a large run's aggregate every tick would cost what a
/// user's read does.
async fn check(state: &AppState, row: RunRow) -> Result<(), ServiceError> {
    let runs = Runs::new(&state.pool);
    let members = runs.members(row.id).await?;
    let view = runs::view_with(row.clone(), &members, &runs.hosts_of(&[row.id]).await?)?;
    let all_ended = view.members.iter().all(|m| m.status.is_terminal());
    if !all_ended && row.stop_rule.is_none() {
        return Ok(());
    }
    let (_, decision) = decide(&state.pool, &row).await?;
    let samples = i64::try_from(decision.samples_used).unwrap_or(i64::MAX);
    if all_ended {
        // Finished, or partial with each host's reason.
        let (ended, reason) = runs::ending_of(&view.members);
        runs.end(
            row.id,
            &RunEnd {
                state: ended,
                reason: &reason,
                reached_epsilon: decision.reached_epsilon,
                samples_used: Some(samples),
            },
        )
        .await?;
        tracing::info!(run = %row.id, %reason, "run finished");
        return Ok(());
    }
    if !decision.met {
        runs.progress(row.id, decision.reached_epsilon, samples)
            .await?;
        return Ok(());
    }
    let hosts = match decision.hosts {
        1 => "1 host".to_owned(),
        n => format!("{n} hosts"),
    };
    let reason = format!(
        "stop rule met: the top {} shares known to ±{:.4} from {} samples of {hosts}",
        decision.top.len(),
        decision.reached_epsilon.unwrap_or(0.0),
        decision.samples_used,
    );
    let ended = runs
        .end(
            row.id,
            &RunEnd {
                state: RunState::Precise,
                reason: &reason,
                reached_epsilon: decision.reached_epsilon,
                samples_used: Some(samples),
            },
        )
        .await?;
    if ended {
        tracing::info!(run = %row.id, %reason, "run precise: stopping its members");
        runs::stop_members(state, row.id, &format!("run:{}", row.id)).await?;
    }
    Ok(())
}
