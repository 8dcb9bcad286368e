//! What the rules found in a run's merged samples once it ended: one row
//! per (run, rule), written once with the alerts it raises, in the
//! transaction that marks the run evaluated.

use odp_rules::run::{HostShare, RunFinding};
use odp_rules::StackHit;
use sqlx::types::Json;
use uuid::Uuid;

use super::{RunRow, Runs, RUNS};
use crate::detections::{queue_dialect, Issue, IssueStack, SERVICE_LIKE_PATTERN};
use crate::sql::{Arg, Sql, Tx};
use crate::Result;

/// A run's finding as the API shows it: the issue on its merged samples
/// and the hosts where its rule measures most.
#[derive(Debug, Clone, PartialEq)]
pub struct RunIssue {
    pub issue: Issue,
    pub hosts: Vec<HostShare>,
}

impl Runs {
    /// Runs that ended at least `settled` ago and whose detection has not
    /// run yet, longest ended first. The wait lets members' last windows,
    /// still on their way when a stop rule ended the run, be stored.
    pub async fn awaiting_detection(
        &self,
        settled: std::time::Duration,
        limit: i64,
    ) -> Result<Vec<RunRow>> {
        RUNS.select(
            "where ended_at is not null and detected_at is null and ended_at <= {now} - $1
             order by ended_at, id limit $2",
        )
        .bind(settled)
        .bind(limit)
        .fetch_all(&self.db)
        .await
    }

    /// Records what the rules found in the ended run `run` of `service`
    /// and queues one alert per finding and matching channel (under the
    /// profile of the host where the rule measures most), in one
    /// transaction that also marks the run evaluated. `false`, writing
    /// nothing, when the run was evaluated before: a run raises its alerts
    /// once.
    pub async fn save_detections(
        &self,
        run: Uuid,
        service: &str,
        found: &[RunFinding],
    ) -> Result<bool> {
        let mut tx = self.db.begin().await?;
        let marked = Sql::new(
            "update runs set detected_at = {now}
             where id = $1 and ended_at is not null and detected_at is null",
        )
        .bind(run)
        .execute(&mut tx)
        .await?;
        if marked != 1 {
            return Ok(false);
        }
        for finding in found {
            insert_finding(&mut tx, run, finding).await?;
            queue_alerts(&mut tx, run, service, finding).await?;
        }
        tx.commit().await?;
        Ok(true)
    }

    /// The run's findings, largest share first (their stacks were named
    /// when the run was judged, from its merged samples).
    pub async fn issues(&self, run: Uuid) -> Result<Vec<RunIssue>> {
        let rows: Vec<RunIssueRow> = Sql::new(
            "select d.rule_id, r.kind, r.title, r.explanation, r.fix, r.link, d.share,
                    d.threshold_pct, d.samples_matched, d.samples_total, d.stacks, d.detail,
                    d.evaluated_at as first_evaluated_at, d.evaluated_at as last_evaluated_at,
                    d.hosts
             from run_detections d join rules r on r.id = d.rule_id
             where d.run_id = $1
             order by d.share desc, d.rule_id",
        )
        .bind(run)
        .fetch_all(&self.db)
        .await?;
        Ok(rows.into_iter().map(RunIssueRow::into_issue).collect())
    }
}

async fn insert_finding(tx: &mut Tx, run: Uuid, finding: &RunFinding) -> Result<u64> {
    let d = &finding.detection;
    Sql::new(
        "insert into run_detections (run_id, rule_id, share, threshold_pct, samples_matched,
                                     samples_total, stacks, detail, hosts)
         values ($1, $2, $3, $4, $5, $6, $7, $8, $9)",
    )
    .bind(run)
    .bind(d.rule_id.as_str())
    .bind(d.share)
    .bind(d.threshold_pct)
    .bind(i64::try_from(d.samples_matched).unwrap_or(i64::MAX))
    .bind(i64::try_from(d.samples_total).unwrap_or(i64::MAX))
    .bind(Arg::json(&d.stacks)?)
    .bind(Arg::json(&d.detail)?)
    .bind(Arg::json(&finding.hosts)?)
    .execute(tx)
    .await
}

/// Queues the finding's alert for every enabled channel matching the
/// service, keyed by the profile of the host where it measures most.
async fn queue_alerts(tx: &mut Tx, run: Uuid, service: &str, finding: &RunFinding) -> Result<u64> {
    let Some(top) = finding.hosts.first() else {
        return Ok(0);
    };
    let dialect = queue_dialect(tx);
    Sql::new(format!(
        "insert into alert_deliveries (id, profile_id, run_id, rule_id, channel_id, service, host,
                                       share, threshold_pct, stacks, hosts, detected_at)
         select {new_id}, $3, d.run_id, d.rule_id, c.id, $4, $5,
                d.share, d.threshold_pct, d.stacks, d.hosts, d.evaluated_at
         from run_detections d cross join alert_channels c
         where d.run_id = $1 and d.rule_id = $2 and c.enabled
           and $4 like {SERVICE_LIKE_PATTERN} escape '!'
         {keep_queued}",
        new_id = dialect.new_id,
        keep_queued = dialect.keep_queued,
    ))
    .bind(run)
    .bind(finding.detection.rule_id.as_str())
    .bind(top.profile_id)
    .bind(service)
    .bind(top.host.as_str())
    .execute(tx)
    .await
}

/// A run's finding as read.
#[derive(sqlx::FromRow)]
struct RunIssueRow {
    #[sqlx(flatten)]
    issue: Issue,
    stacks: Json<Vec<StackHit>>,
    hosts: Json<Vec<HostShare>>,
}

impl RunIssueRow {
    fn into_issue(self) -> RunIssue {
        let stacks = self
            .stacks
            .0
            .into_iter()
            .map(|hit| IssueStack {
                stack_id: hit.stack_id,
                count: hit.count,
                frames: hit.frames,
            })
            .collect();
        RunIssue {
            issue: Issue {
                stacks,
                ..self.issue
            },
            hosts: self.hosts.0,
        }
    }
}
