//! Running the rules over stored profiles.
//!
//! The worker evaluates the profiles a batch touched once the batch is
//! stored and before its offsets are committed, so a crash re-runs the
//! evaluation; writes are upserts, so re-running changes nothing. A failed
//! evaluation is logged and counted, never allowed to hold up ingest.
//! Profiles stored without the pipeline (imported files, profiles pushed
//! over OTLP or Pyroscope's API) wait in the store's detection queue,
//! which the deferred pass drains.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use odp_core::runtime::ProfileRuntime;
use odp_profile::ProfileFrames;
use odp_store::runtime::profile_runtime;
use odp_store::Database;
use odp_store::{AlertSubject, StoreError};
use tokio::sync::Mutex;
use tokio::time::Instant;
use uuid::Uuid;

use crate::pacing::Pacer;
use odp_rules::{
    seed, service_of, share_regression, ProfileIdentity, ProfileInput, RuleSet, RunHistory,
};

/// How long evaluated rules are trusted before they are re-read, so admins'
/// edits take effect without a restart.
const RULES_TTL: Duration = Duration::from_secs(60);
/// Bound on one profile's evaluation; past it the evaluation counts as
/// failed and ingest moves on.
const EVALUATION_TIMEOUT: Duration = Duration::from_secs(30);

#[derive(Debug, thiserror::Error)]
pub enum DetectError {
    #[error("store: {0}")]
    Store(#[from] StoreError),
    #[error("seed rule pack: {0}")]
    Seed(#[from] serde_json::Error),
    #[error("evaluation timed out")]
    Timeout,
}

#[derive(Debug)]
pub struct Detector {
    /// When the rules were loaded (never: load at first use) and the rules.
    rules: Mutex<(Option<Instant>, Arc<RuleSet>)>,
    failures: AtomicU64,
    /// Which running profiles are due for evaluation.
    pacer: std::sync::Mutex<Pacer>,
}

/// How often the deferred pass looks for running profiles due.
const DEFERRED_TICK: Duration = Duration::from_secs(1);
/// How long each tick of the deferred pass may spend evaluating running
/// profiles; those still due wait for the next tick, the longest waiting
/// first. When an evaluation read its profile whole, its cost grew with
/// the profile: at 2,000 continuous hosts one worker's evaluations of
/// running segments, back to back, took a growing share of the CPU its
/// ingest needs (evaluations fell from 2,800 to 1,100 a minute while the
/// windows they read rose from 9,000 to 24,000 a minute, in four minutes).
/// It now reads only the windows stored since the last (the pacer keeps
/// what it read), but the rules still run over the whole sum. A running
/// profile's detections are provisional: it is evaluated whole, at once,
/// when it finishes. So past what this budget allows, running profiles
/// are evaluated less often rather than ingest slowed.
const RUNNING_BUDGET: Duration = Duration::from_millis(250);
/// How often the deferred pass logs what the pacer holds of running
/// profiles' sums: a fleet's running segments hold theirs for an hour.
const REPORT_READS_EVERY: Duration = Duration::from_secs(60);
/// Queued profiles evaluated per tick of the deferred pass.
const QUEUED_PER_TICK: i64 = 20;

impl Detector {
    /// Installs the seed pack (admins' rules untouched) and loads the rules.
    pub async fn start(pool: &Database) -> Result<Detector, DetectError> {
        let written = odp_store::install_seed_rules(pool, &seed::seed_rules()?).await?;
        tracing::info!(written, "seed rules installed");
        let rules = load_rules(pool).await?;
        Ok(Detector {
            rules: Mutex::new((Some(Instant::now()), rules)),
            failures: AtomicU64::new(0),
            pacer: std::sync::Mutex::new(Pacer::new(Duration::ZERO)),
        })
    }

    /// A detector with no rules yet, which loads them at first use: for
    /// when [`Detector::start`] failed and ingest must go on without it.
    pub fn unloaded() -> Detector {
        Detector {
            rules: Mutex::new((None, Arc::new(RuleSet::default()))),
            failures: AtomicU64::new(0),
            pacer: std::sync::Mutex::new(Pacer::new(Duration::ZERO)),
        }
    }

    /// Evaluates a running profile at most once per `interval` (see
    /// the `pacing` module); without this, every batch.
    pub fn evaluating_every(self, interval: Duration) -> Detector {
        Detector {
            pacer: std::sync::Mutex::new(Pacer::new(interval)),
            ..self
        }
    }

    /// Evaluates what a stored batch changed: the finished profiles (the
    /// running ones are left to [`Detector::run_deferred`], unless the
    /// interval is zero).
    pub async fn evaluate_batch(&self, pool: &Database, windows: &[Uuid], finished: &[Uuid]) {
        let due = self.pacer().due_now(windows, finished, Instant::now());
        self.evaluate_all(pool, &due).await;
    }

    /// Evaluates running profiles whose windows waited for their interval,
    /// until `stop` says so.
    pub async fn run_deferred(
        detector: Arc<Detector>,
        pool: Database,
        mut stop: tokio::sync::watch::Receiver<bool>,
    ) {
        let mut reported = Instant::now();
        while !*stop.borrow() && stop.has_changed().is_ok() {
            detector.evaluate_running(&pool, RUNNING_BUDGET).await;
            detector.evaluate_queued(&pool).await;
            let rules = detector.rules(&pool).await;
            crate::run_detect::evaluate_ended_runs(&pool, &rules).await;
            if reported.elapsed() >= REPORT_READS_EVERY {
                reported = Instant::now();
                let held = detector.pacer().held();
                tracing::info!(
                    profiles = held.profiles,
                    stack_counts = held.stack_counts,
                    table_stacks = held.table_stacks,
                    mib = held.bytes as f64 / (1 << 20) as f64,
                    "running profiles' sums held for detection"
                );
            }
            tokio::select! {
                _ = stop.changed() => {}
                _ = tokio::time::sleep(DEFERRED_TICK) => {}
            }
        }
    }

    /// Evaluates the running profiles due, the longest waiting first, one
    /// at a time until `budget` is spent; the rest stay due.
    async fn evaluate_running(&self, pool: &Database, budget: Duration) {
        let started = Instant::now();
        while started.elapsed() < budget {
            let due = self.pacer().take_due(Instant::now(), 1);
            if due.is_empty() {
                return;
            }
            self.evaluate_all(pool, &due).await;
        }
    }

    fn pacer(&self) -> std::sync::MutexGuard<'_, Pacer> {
        self.pacer
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Evaluations that failed since start-up.
    pub fn failures(&self) -> u64 {
        self.failures.load(Ordering::Relaxed)
    }

    /// Evaluates each profile, logging and counting failures; never fails.
    pub async fn evaluate_all(&self, pool: &Database, profile_ids: &[Uuid]) {
        for &profile_id in profile_ids {
            let result =
                tokio::time::timeout(EVALUATION_TIMEOUT, self.evaluate_profile(pool, profile_id))
                    .await
                    .unwrap_or(Err(DetectError::Timeout));
            match result {
                Ok(found) => tracing::debug!(%profile_id, found, "profile evaluated"),
                Err(e) => {
                    let failures = self.failures.fetch_add(1, Ordering::Relaxed) + 1;
                    tracing::warn!(%profile_id, error = %e, failures, "issue detection failed");
                }
            }
        }
    }

    /// Evaluates, with alerts, the oldest profiles of the store's detection
    /// queue (imports and pushes) and takes them off it. One that fails for
    /// the database stays queued for the next pass; one whose evaluation
    /// itself fails is logged, counted and taken off, so it cannot come
    /// back every second.
    pub async fn evaluate_queued(&self, pool: &Database) {
        let queued = match odp_store::awaiting_detection(pool, QUEUED_PER_TICK).await {
            Ok(queued) => queued,
            Err(e) => {
                tracing::warn!(error = %e, "reading the detection queue failed");
                return;
            }
        };
        let mut done = Vec::with_capacity(queued.len());
        for profile_id in queued {
            let result =
                tokio::time::timeout(EVALUATION_TIMEOUT, self.evaluate_profile(pool, profile_id))
                    .await
                    .unwrap_or(Err(DetectError::Timeout));
            match result {
                Ok(found) => {
                    tracing::debug!(%profile_id, found, "queued profile evaluated");
                    done.push(profile_id);
                }
                Err(e) => {
                    let failures = self.failures.fetch_add(1, Ordering::Relaxed) + 1;
                    tracing::warn!(%profile_id, error = %e, failures, "issue detection failed");
                    if !matches!(e, DetectError::Store(_)) {
                        done.push(profile_id);
                    }
                }
            }
        }
        if let Err(e) = odp_store::detection_done(pool, &done).await {
            tracing::warn!(error = %e, "marking queued profiles evaluated failed");
        }
    }

    /// Runs the rules over all the profile's stored samples and replaces
    /// its detections, queueing alerts for new ones; returns how many rules
    /// flagged it.
    pub async fn evaluate_profile(
        &self,
        pool: &Database,
        profile_id: Uuid,
    ) -> Result<usize, DetectError> {
        let rules = self.rules(pool).await;
        let runtime = self.runtime(pool, profile_id, &rules).await?;
        let identity = odp_store::profile_identity(pool, profile_id).await?;
        let data = if identity.ended {
            self.pacer().forget_read(profile_id);
            odp_store::profile_frames(pool, profile_id).await?
        } else {
            self.read_running(pool, profile_id, &rules).await?
        };
        let profile = Evaluated {
            id: profile_id,
            identity,
            data,
        };
        evaluate_on(pool, &profile, &rules, runtime.as_deref(), Alerting::On).await
    }

    /// A running profile's samples: what its last evaluation read, kept by
    /// the pacer, and the windows stored since. Each evaluation of a
    /// continuous segment reads its new windows only, so its cost stays
    /// that of the windows' rate however far into its hour it is.
    async fn read_running(
        &self,
        pool: &Database,
        profile_id: Uuid,
        rules: &Arc<RuleSet>,
    ) -> Result<ProfileFrames, StoreError> {
        let after = self.pacer().last_window(profile_id, rules);
        let new = odp_store::load_windows_after(pool, profile_id, after).await?;
        let summed = self
            .pacer()
            .add_read(profile_id, after, &new.profile, new.last_window, rules);
        match summed {
            Some(data) => Ok(data),
            None => odp_store::profile_frames(pool, profile_id).await,
        }
    }

    /// The profile's runtime if a rule reads it: a running profile's, once
    /// reported, is kept by the pacer between its evaluations, since it
    /// does not change while the profile runs.
    async fn runtime(
        &self,
        pool: &Database,
        profile_id: Uuid,
        rules: &RuleSet,
    ) -> Result<Option<Arc<ProfileRuntime>>, StoreError> {
        if !rules.reads_runtime() {
            return Ok(None);
        }
        let cached = self.pacer().runtime(profile_id);
        if cached.is_some() {
            return Ok(cached);
        }
        let loaded = profile_runtime(pool, profile_id).await?.map(Arc::new);
        if let Some(runtime) = &loaded {
            self.pacer().remember_runtime(profile_id, runtime.clone());
        }
        Ok(loaded)
    }

    /// The rules as last loaded, for a re-analysis that just reloaded them.
    pub async fn loaded_rules(&self) -> Arc<RuleSet> {
        self.rules.lock().await.1.clone()
    }

    /// The current rules, re-read when stale; on a failed re-read the
    /// previous rules stay in use.
    async fn rules(&self, pool: &Database) -> Arc<RuleSet> {
        let mut guard = self.rules.lock().await;
        if guard.0.is_none_or(|at| at.elapsed() >= RULES_TTL) {
            match load_rules(pool).await {
                Ok(rules) => *guard = (Some(Instant::now()), rules),
                Err(e) => {
                    tracing::warn!(error = %e, "reloading rules failed, keeping the old ones")
                }
            }
        }
        guard.1.clone()
    }

    /// Re-reads the rules now (after an admin changed them).
    pub async fn reload(&self, pool: &Database) -> Result<(), DetectError> {
        let rules = load_rules(pool).await?;
        *self.rules.lock().await = (Some(Instant::now()), rules);
        Ok(())
    }
}

/// Whether new detections queue alerts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Alerting {
    On,
    /// Re-analysis of past profiles: record findings, do not alert on history.
    Off,
}

/// Evaluates `rules` over a profile and replaces its detections.
pub async fn evaluate_with(
    pool: &Database,
    profile_id: Uuid,
    rules: &RuleSet,
    alerting: Alerting,
) -> Result<usize, DetectError> {
    let runtime = if rules.reads_runtime() {
        profile_runtime(pool, profile_id).await?
    } else {
        None
    };
    let profile = Evaluated {
        id: profile_id,
        identity: odp_store::profile_identity(pool, profile_id).await?,
        data: odp_store::profile_frames(pool, profile_id).await?,
    };
    evaluate_on(pool, &profile, rules, runtime.as_ref(), alerting).await
}

/// A profile as the rules see it.
struct Evaluated {
    id: Uuid,
    identity: ProfileIdentity,
    data: ProfileFrames,
}

/// Evaluates `rules` over `profile` given its runtime (if a rule reads
/// it), and replaces its detections.
async fn evaluate_on(
    pool: &Database,
    profile: &Evaluated,
    rules: &RuleSet,
    runtime: Option<&ProfileRuntime>,
    alerting: Alerting,
) -> Result<usize, DetectError> {
    let Evaluated {
        id: profile_id,
        identity,
        data,
    } = profile;
    let profile_id = *profile_id;
    let service = service_of(identity);
    // A run is compared with its schedule's earlier runs once it ended.
    let histories = match rules.history_runs() {
        Some(runs) if identity.ended => run_histories(pool, profile_id, runs).await?,
        _ => Vec::new(),
    };
    let mut found = rules.evaluate(&ProfileInput {
        histories: &histories,
        runtime,
        ..ProfileInput::new(&service, data)
    });
    odp_rules::name_stacks(&mut found, data);
    // A run's member leaves the rules its run judges to the run's own
    // evaluation, which alerts once for every host.
    let judged_by_run: Vec<String> = match identity.run {
        Some(_) => found
            .iter()
            .filter(|d| rules.judged_per_run(&d.rule_id))
            .map(|d| d.rule_id.clone())
            .collect(),
        None => Vec::new(),
    };
    let subject = (alerting == Alerting::On).then(|| AlertSubject {
        service: &service,
        host: identity.host.as_deref().unwrap_or_default(),
        except_rules: &judged_by_run,
    });
    let new = odp_store::save_detections(pool, profile_id, subject, &found).await?;
    if !new.is_empty() {
        tracing::info!(%profile_id, service = %service, rules = ?new, ?alerting, "new issues detected");
    }
    Ok(found.len())
}

/// What `profile_id` is compared with: the previous runs of its schedule,
/// or for a continuous segment the same hour of the previous weeks and,
/// when its host labels its release, the segments of the release before
/// ([`odp_store::segment_baselines`]); none for other profiles.
async fn run_histories(
    pool: &Database,
    profile_id: Uuid,
    runs: usize,
) -> Result<Vec<RunHistory>, StoreError> {
    let limit = runs as i64;
    let scheduled = odp_store::previous_schedule_runs(pool, profile_id, limit).await?;
    let baselines = if scheduled.is_empty() {
        let segment = odp_store::segment_baselines(pool, profile_id, limit).await?;
        vec![
            (share_regression::Baseline::Continuous, segment.same_hour),
            (
                share_regression::Baseline::PreviousRelease,
                segment.previous_release,
            ),
        ]
    } else {
        vec![(share_regression::Baseline::Schedule, scheduled)]
    };
    let mut histories = Vec::new();
    for (baseline, previous) in baselines {
        if !previous.is_empty() {
            histories.push(history_of(pool, baseline, &previous).await?);
        }
    }
    Ok(histories)
}

/// The `previous` profiles, most recent first, summed as one baseline.
async fn history_of(
    pool: &Database,
    baseline: share_regression::Baseline,
    previous: &[Uuid],
) -> Result<RunHistory, StoreError> {
    let mut data = Vec::with_capacity(previous.len());
    for &id in previous {
        data.push(odp_store::profile_frames(pool, id).await?);
    }
    let rules_hit = odp_store::rules_hit(pool, previous, share_regression::KIND).await?;
    let mut history = RunHistory::from_runs(&data, rules_hit);
    history.profiles = previous.iter().map(Uuid::to_string).collect();
    history.baseline = baseline;
    Ok(history)
}

async fn load_rules(pool: &Database) -> Result<Arc<RuleSet>, StoreError> {
    let rows = odp_store::list_rules(pool).await?;
    let (set, errors) = RuleSet::compile(rows.into_iter().map(|r| r.rule));
    for e in errors {
        tracing::warn!(error = %e, "rule left out");
    }
    tracing::info!(rules = set.len(), "detection rules loaded");
    Ok(Arc::new(set))
}
