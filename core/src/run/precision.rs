//! Stopping a run when its answer is precise: "the top K self shares are
//! each known to ±ε".
//!
//! A sampled share is unbiased and, for one host, binomial (the
//! hardware-counter sampling accuracy paper, seed 003): with `N` samples a
//! share `p` has standard error `sqrt(p (1 - p) / N)`. A run's aggregate
//! pools hosts, and hosts differ: one serves a heavier tenant, another
//! runs the new release. The pooled binomial error then describes only
//! the sampling noise inside hosts and is far too narrow for the question
//! a run answers, "what does the service spend its CPU on", whose answer
//! also varies with which hosts were profiled. The between-host (cluster)
//! estimate treats each host as one observation of the ratio
//! `Σ y / Σ n`; it captures both sources of variance, but is itself noisy
//! when there are few hosts. So a share's error is:
//!
//! - the pooled binomial with one host (there is nothing between hosts);
//! - the larger of the two with fewer than [`BETWEEN_HOST_MIN_HOSTS`];
//! - the between-host estimate from there on.
//!
//! Everything here is pure; a run feeds its windows into an [`Aggregate`]
//! and asks a [`StopRule`] after each.

use std::collections::{BTreeMap, HashMap};

use serde::{Deserialize, Serialize};

use crate::stats::binomial_stderr;

/// Hosts from which a share's error is the between-host estimate alone.
///
/// That estimate has `m - 1` degrees of freedom, so it is itself noisy: its
/// relative error is about `1 / sqrt(2 (m - 1))`, and a run that checks it
/// window after window stops on the first value that comes out low by
/// chance. Measured while choosing (600 simulated i.i.d. runs per fleet
/// size, top 3 shares 0.3/0.2/0.1, ε = 0.005, the estimate alone): with 16
/// hosts the widest share was within ±2ε of the truth in 93.3% of runs and
/// 5% of runs stopped before 0.6 of the analytic sample count; with 32 and
/// with 64 hosts, 95.7%. Below the threshold the pooled binomial floors
/// it: the floor cannot be low by chance, so it never stops a run early,
/// and when hosts differ the between-host estimate exceeds it anyway. Its
/// cost is a later stop when hosts agree (the tests print the figures).
/// From 32 hosts on, the between-host estimate alone also follows samples
/// that vary less than binomially, which the floor would overstate.
pub const BETWEEN_HOST_MIN_HOSTS: usize = 32;

/// Self samples per host and function, built window by window as a run's
/// members report. A host's total counts every sample it took, so each of
/// them has exactly one leaf function: recording a function's self
/// samples adds to its host's total too.
#[derive(Debug, Clone, Default)]
pub struct Aggregate {
    names: Vec<String>,
    index: HashMap<String, usize>,
    /// Per function, self samples over all hosts.
    totals: Vec<u64>,
    hosts: BTreeMap<String, HostTally>,
    samples: u64,
}

#[derive(Debug, Clone, Default)]
struct HostTally {
    samples: u64,
    self_samples: HashMap<usize, u64>,
}

/// How a share's standard error was estimated.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(utoipa::ToSchema))]
#[serde(rename_all = "snake_case")]
pub enum StderrMethod {
    /// One host: the binomial `sqrt(p (1 - p) / N)`.
    Pooled,
    /// Fewer than [`BETWEEN_HOST_MIN_HOSTS`]: the larger of the two.
    Larger,
    /// The between-host (cluster) estimate.
    BetweenHost,
}

/// One function's aggregate self share and its errors.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(utoipa::ToSchema))]
pub struct ShareEstimate {
    pub function: String,
    /// `Σ_i y_i / Σ_i n_i` over hosts `i`.
    pub share: f64,
    /// The standard error the stop rule uses (see [`StderrMethod`]).
    pub stderr: f64,
    pub pooled_stderr: f64,
    /// `sqrt(m/(m-1) Σ_i (y_i - p n_i)²) / Σ_i n_i`; none with one host.
    pub between_host_stderr: Option<f64>,
}

impl Aggregate {
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds `count` self samples of `function` on `host`.
    pub fn record(&mut self, host: &str, function: &str, count: u64) {
        let f = match self.index.get(function) {
            Some(&f) => f,
            None => {
                self.names.push(function.to_owned());
                self.totals.push(0);
                self.index.insert(function.to_owned(), self.names.len() - 1);
                self.names.len() - 1
            }
        };
        self.totals[f] += count;
        let tally = self.host_mut(host);
        tally.samples += count;
        *tally.self_samples.entry(f).or_insert(0) += count;
        self.samples += count;
    }

    /// Adds `count` samples to `host`'s total without naming their
    /// functions, for a per-host breakdown cut to its largest functions.
    pub fn record_unattributed(&mut self, host: &str, count: u64) {
        self.host_mut(host).samples += count;
        self.samples += count;
    }

    fn host_mut(&mut self, host: &str) -> &mut HostTally {
        if !self.hosts.contains_key(host) {
            self.hosts.insert(host.to_owned(), HostTally::default());
        }
        self.hosts.get_mut(host).expect("inserted above")
    }

    /// Samples over all hosts, `N`.
    pub fn samples(&self) -> u64 {
        self.samples
    }

    /// Hosts with at least one sample, `m`; a host that has reported
    /// nothing yet says nothing about how hosts differ.
    pub fn hosts(&self) -> usize {
        self.hosts.values().filter(|t| t.samples > 0).count()
    }

    /// How the errors are estimated with the hosts seen so far.
    pub fn method(&self) -> StderrMethod {
        match self.hosts() {
            0 | 1 => StderrMethod::Pooled,
            m if m < BETWEEN_HOST_MIN_HOSTS => StderrMethod::Larger,
            _ => StderrMethod::BetweenHost,
        }
    }

    /// The aggregate share of `function` and its errors; none before any
    /// sample or for a function never recorded.
    pub fn estimate(&self, function: &str) -> Option<ShareEstimate> {
        let &f = self.index.get(function)?;
        (self.samples > 0).then(|| self.estimate_of(f))
    }

    /// The `k` largest self shares, largest first (equal shares by name).
    pub fn top(&self, k: usize) -> Vec<ShareEstimate> {
        if self.samples == 0 {
            return Vec::new();
        }
        let mut order: Vec<usize> = (0..self.names.len())
            .filter(|&f| self.totals[f] > 0)
            .collect();
        order.sort_by(|&a, &b| {
            self.totals[b]
                .cmp(&self.totals[a])
                .then_with(|| self.names[a].cmp(&self.names[b]))
        });
        order.truncate(k);
        order.into_iter().map(|f| self.estimate_of(f)).collect()
    }

    fn estimate_of(&self, f: usize) -> ShareEstimate {
        let n_total = self.samples as f64;
        let share = self.totals[f] as f64 / n_total;
        let pooled = binomial_stderr(self.totals[f], self.samples);
        let m = self.hosts();
        let between = (m >= 2).then(|| {
            let squares: f64 = self
                .hosts
                .values()
                .filter(|t| t.samples > 0)
                .map(|t| {
                    let y = t.self_samples.get(&f).copied().unwrap_or(0) as f64;
                    let r = y - share * t.samples as f64;
                    r * r
                })
                .sum();
            (m as f64 / (m as f64 - 1.0) * squares).sqrt() / n_total
        });
        let chosen = match (self.method(), between) {
            (StderrMethod::BetweenHost, Some(b)) => b,
            (StderrMethod::Larger, Some(b)) => b.max(pooled),
            _ => pooled,
        };
        ShareEstimate {
            function: self.names[f].clone(),
            share,
            // A share seen in all or none of few samples has an estimated
            // error of zero; the rule of three (a 95% bound of 3/N) keeps
            // it from being taken as exact.
            stderr: chosen.max(RULE_OF_THREE_STDERR / n_total),
            pooled_stderr: pooled,
            between_host_stderr: between,
        }
    }
}

/// `1.5 / N`: half the rule-of-three 95% bound, the least error any share
/// estimated from `N` samples is given.
const RULE_OF_THREE_STDERR: f64 = 1.5;

/// `stop_when`: stop once each of the `top` largest self shares has a
/// standard error of at most `max_stderr`.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(utoipa::ToSchema))]
pub struct StopRule {
    /// K, at least 1.
    pub top: u32,
    /// ε, a share in (0, 1): 0.005 is half a percentage point.
    pub max_stderr: f64,
}

/// Why a stop rule cannot be used; each message is fit for a 422 body.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum StopRuleError {
    #[error("stop_when.top must be at least 1")]
    ZeroTop,
    #[error("stop_when.max_stderr {0} is outside (0, 1)")]
    StderrOutOfRange(f64),
}

/// A stop rule's verdict on the aggregate so far.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(utoipa::ToSchema))]
pub struct StopDecision {
    /// Every top share's error is within the rule's ε.
    pub met: bool,
    /// The largest error among the top shares: the ε reached. None
    /// before any sample.
    pub reached_epsilon: Option<f64>,
    pub samples_used: u64,
    pub hosts: usize,
    pub method: StderrMethod,
    /// Samples the rule would need at the current error's rate
    /// (`N (stderr / ε)²` for the worst top share), for a progress view.
    pub projected_samples: Option<u64>,
    pub top: Vec<ShareEstimate>,
}

impl StopRule {
    /// A validated rule.
    pub fn new(top: u32, max_stderr: f64) -> Result<Self, StopRuleError> {
        let rule = StopRule { top, max_stderr };
        rule.validate()?;
        Ok(rule)
    }

    pub fn validate(&self) -> Result<(), StopRuleError> {
        if self.top == 0 {
            return Err(StopRuleError::ZeroTop);
        }
        if !(self.max_stderr > 0.0 && self.max_stderr < 1.0) {
            return Err(StopRuleError::StderrOutOfRange(self.max_stderr));
        }
        Ok(())
    }

    /// Whether the run may stop. A rule that does not
    /// [`validate`](Self::validate) is never met. With fewer than `top`
    /// functions seen, all of them must be within ε.
    pub fn evaluate(&self, aggregate: &Aggregate) -> StopDecision {
        let top = aggregate.top(self.top as usize);
        let worst = top.iter().map(|s| s.stderr).reduce(f64::max);
        let samples = aggregate.samples();
        let projected = worst
            .filter(|_| self.validate().is_ok())
            .map(|e| (samples as f64 * (e / self.max_stderr).powi(2)).ceil() as u64);
        StopDecision {
            met: self.validate().is_ok() && worst.is_some_and(|e| e <= self.max_stderr),
            reached_epsilon: worst,
            samples_used: samples,
            hosts: aggregate.hosts(),
            method: aggregate.method(),
            projected_samples: projected,
            top,
        }
    }

    /// The binomial sample count `N = p (1 - p) / ε²` for the
    /// largest-variance share among the `top` largest of `shares`: what
    /// hosts that agree need. Hosts that differ need more. 0 for an
    /// invalid rule or no shares.
    pub fn analytic_samples(&self, shares: &[f64]) -> u64 {
        if self.validate().is_err() {
            return 0;
        }
        let mut sorted: Vec<f64> = shares.iter().copied().filter(|p| p.is_finite()).collect();
        sorted.sort_by(|a, b| b.total_cmp(a));
        sorted.truncate(self.top as usize);
        let variance = sorted
            .iter()
            .map(|&p| p.clamp(0.0, 1.0) * (1.0 - p.clamp(0.0, 1.0)))
            .fold(0.0, f64::max);
        let exact = variance / (self.max_stderr * self.max_stderr);
        // 0.21 / 0.005² is 8400.000000000001 in floating point: not 8401.
        (exact - exact * 1e-9).ceil() as u64
    }
}

#[cfg(test)]
#[path = "precision_tests.rs"]
mod tests;

#[cfg(test)]
#[path = "precision_sim.rs"]
mod sim;
