//! `share_regression`: a finished run of a schedule against the schedule's
//! previous runs. It flags the run when a function's self (leaf) share grew
//! by at least the rule's threshold, in percentage points, over its mean in
//! the previous runs, or when another rule flagged this run but none of the
//! previous ones. The detection's share is the largest growth; its detail
//! lists the grown functions and the rules newly hit.
//!
//! Self shares are compared because they move with the code that changed;
//! a caller's total share moves with every callee.

use std::collections::{BTreeSet, HashMap};

use odp_profile::{FrameRead, FrameRef, ProfileFrames};

use crate::StackHit;
use serde::Deserialize;
use serde_json::json;

use crate::{top_stacks, Evidence, ProfileInput, RuleKind, SpecError};

pub const KIND: &str = "share_regression";

/// Grown functions listed in a detection's detail.
const LISTED: usize = 5;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Spec {
    /// Previous runs the new one is compared with (their mean).
    #[serde(default = "default_previous_runs")]
    previous_runs: usize,
    /// Functions under this self share in the new run are noise.
    #[serde(default = "default_min_share_pct")]
    min_share_pct: f64,
    /// A growth counts only when it exceeds this many standard errors of
    /// the difference of the two shares (binomial on each side), so a
    /// short or quiet profile does not alert on chance; absent: every
    /// growth counts.
    #[serde(default)]
    k_stderr: Option<f64>,
    /// What the profile is compared with: a schedule's previous runs (the
    /// default), a continuous segment's same hour of earlier weeks, or its
    /// host's segments of the release before.
    #[serde(default)]
    baseline: Baseline,
}

/// Which profiles a rule compares with.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Baseline {
    /// The previous runs of the profile's schedule.
    #[default]
    Schedule,
    /// For a continuous segment, the same host's segments of the same hour
    /// in earlier weeks.
    Continuous,
    /// For a continuous segment whose host labels its release (`version`),
    /// the same host's latest segments of the release before: before and
    /// after a deploy.
    PreviousRelease,
}

fn default_previous_runs() -> usize {
    5
}

fn default_min_share_pct() -> f64 {
    1.0
}

#[derive(Debug)]
pub struct ShareRegression {
    previous_runs: usize,
    min_share_pct: f64,
    k_stderr: Option<f64>,
    baseline: Baseline,
}

impl ShareRegression {
    pub fn from_spec(spec: &serde_json::Value) -> Result<Self, SpecError> {
        let spec = Spec::deserialize(spec)?;
        if !(1..=50).contains(&spec.previous_runs) {
            return Err(SpecError::PreviousRuns);
        }
        if !(0.0..=100.0).contains(&spec.min_share_pct) {
            return Err(SpecError::MinSharePct);
        }
        if spec
            .k_stderr
            .is_some_and(|k| !(k.is_finite() && (0.0..=20.0).contains(&k)))
        {
            return Err(SpecError::KStderr);
        }
        Ok(ShareRegression {
            previous_runs: spec.previous_runs,
            min_share_pct: spec.min_share_pct,
            k_stderr: spec.k_stderr,
            baseline: spec.baseline,
        })
    }
}

/// A schedule's previous runs, as a new run is compared with them.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RunHistory {
    /// How many runs this summarises (the most recent first).
    pub runs: usize,
    /// Mean self share of each function over the runs, in percent (a run
    /// without the function counts as 0).
    pub self_share_pct: HashMap<String, f64>,
    /// Rules that flagged any of the runs.
    pub rules_hit: BTreeSet<String>,
    /// Their samples, all together: the baseline's share is known to
    /// within its binomial error over them.
    pub samples: u64,
    /// Their profile ids, most recent first, for the detail's diff link.
    pub profiles: Vec<String>,
    /// What kind of profiles they are: only the rules comparing with that
    /// kind judge the profile.
    pub baseline: Baseline,
}

impl RunHistory {
    pub fn from_runs(runs: &[ProfileFrames], rules_hit: BTreeSet<String>) -> RunHistory {
        let mut sums: HashMap<String, f64> = HashMap::new();
        for run in runs {
            for (function, share) in self_shares(run) {
                *sums.entry(function).or_default() += share;
            }
        }
        let n = runs.len().max(1) as f64;
        RunHistory {
            runs: runs.len(),
            self_share_pct: sums.into_iter().map(|(f, sum)| (f, sum / n)).collect(),
            rules_hit,
            samples: runs.iter().map(|r| r.samples).sum(),
            profiles: Vec::new(),
            baseline: Baseline::Schedule,
        }
    }
}

/// Each leaf function's share of the samples, in percent.
pub fn self_shares(data: &ProfileFrames) -> HashMap<String, f64> {
    let mut counts: HashMap<&str, u64> = HashMap::new();
    for stack in &data.stacks {
        if let Some(&leaf) = stack.frames.last() {
            *counts
                .entry(&data.frames[leaf as usize].function)
                .or_default() += stack.count;
        }
    }
    let total = data.samples.max(1) as f64;
    counts
        .into_iter()
        .map(|(f, c)| (f.to_owned(), c as f64 * 100.0 / total))
        .collect()
}

/// A function whose self share grew.
struct Growth {
    function: String,
    share: f64,
    baseline: f64,
    /// Standard error of `share - baseline`, in points.
    stderr: f64,
}

/// Standard error, in percentage points, of the difference between a
/// share of `n` samples and one of `n_baseline`, each binomial.
fn difference_stderr(share_pct: f64, n: u64, baseline_pct: f64, n_baseline: u64) -> f64 {
    let side = |pct: f64, n: u64| {
        let p = pct / 100.0;
        p * (1.0 - p) / n.max(1) as f64
    };
    (side(share_pct, n) + side(baseline_pct, n_baseline)).sqrt() * 100.0
}

impl RuleKind for ShareRegression {
    fn measure(&self, profile: &ProfileInput<'_>) -> Evidence {
        let Some(history) = profile
            .histories
            .iter()
            .find(|h| h.runs > 0 && h.baseline == self.baseline)
        else {
            return Evidence::default();
        };
        let data = profile.data;
        let mut grown: Vec<Growth> = self_shares(data)
            .into_iter()
            .filter(|(_, share)| *share >= self.min_share_pct)
            .map(|(function, share)| {
                let baseline = history
                    .self_share_pct
                    .get(&function)
                    .copied()
                    .unwrap_or(0.0);
                Growth {
                    stderr: difference_stderr(share, data.samples, baseline, history.samples),
                    baseline,
                    function,
                    share,
                }
            })
            .filter(|g| {
                g.share > g.baseline
                    && self
                        .k_stderr
                        .is_none_or(|k| g.share - g.baseline > k * g.stderr)
            })
            .collect();
        grown.sort_by(|a, b| {
            (b.share - b.baseline)
                .total_cmp(&(a.share - a.baseline))
                .then_with(|| a.function.cmp(&b.function))
        });
        grown.truncate(LISTED);
        let new_rules: Vec<&String> = profile
            .flagged
            .iter()
            .filter(|r| !history.rules_hit.contains(*r))
            .collect();
        let (matched, stacks) = match grown.first() {
            Some(top) => leaf_stacks(data, &top.function),
            None => (0, Vec::new()),
        };
        Evidence {
            matched,
            total: data.samples,
            stacks,
            score_pct: Some(grown.first().map_or(0.0, |g| g.share - g.baseline)),
            flag: !new_rules.is_empty(),
            detail: json!({
                "runs_compared": history.runs,
                "baseline_profiles": history.profiles,
                "functions": grown.iter().map(|g| json!({
                    "function": g.function,
                    "share_pct": g.share,
                    "baseline_pct": g.baseline,
                    "growth_points": g.share - g.baseline,
                    "growth_stderr_points": g.stderr,
                })).collect::<Vec<_>>(),
                "new_rules": new_rules,
            }),
        }
    }

    fn reads_findings(&self) -> bool {
        true
    }

    fn history_runs(&self) -> Option<usize> {
        Some(self.previous_runs)
    }

    /// A running profile has no history to be compared with.
    fn reads_running_frame(&self, _frame: &FrameRef) -> FrameRead {
        FrameRead::Never
    }
}

/// Samples and heaviest stacks ending in `function`.
fn leaf_stacks(data: &ProfileFrames, function: &str) -> (u64, Vec<StackHit>) {
    let mut matched = 0;
    let mut hits = Vec::new();
    for stack in &data.stacks {
        let leaf = stack.frames.last().map(|&i| &data.frames[i as usize]);
        if leaf.is_some_and(|f| f.function == function) {
            matched += stack.count;
            hits.push(StackHit::new(stack.stack_id, stack.count));
        }
    }
    (matched, top_stacks(hits))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::RuleDef;
    use crate::{profile, RuleSet};

    fn rule(threshold_pct: f64) -> RuleDef {
        RuleDef {
            id: "regression".into(),
            title: "t".into(),
            explanation: "e".into(),
            fix: "f".into(),
            link: "https://example.invalid".into(),
            kind: KIND.into(),
            spec: json!({"previous_runs": 3}),
            threshold_pct,
            service_thresholds: Default::default(),
            enabled: true,
        }
    }

    /// A run with `parse`'s self share at `pct`% and the rest in `main`.
    fn run(parse_pct: u64) -> ProfileFrames {
        profile(&[
            (&[("main", ""), ("parse", "")], parse_pct * 100),
            (&[("main", "")], (100 - parse_pct) * 100),
        ])
    }

    #[test]
    fn growth_over_the_previous_runs_mean_is_flagged_in_points() {
        let (set, errors) = RuleSet::compile([rule(5.0)]);
        assert!(errors.is_empty(), "{errors:?}");
        assert_eq!(set.history_runs(), Some(3));
        // Previous runs at 10% and 14%: a mean of 12%.
        let history = RunHistory::from_runs(&[run(10), run(14)], BTreeSet::new());
        assert_eq!(history.self_share_pct["parse"], 12.0);
        let check = |pct: u64| {
            let data = run(pct);
            let input = ProfileInput {
                histories: std::slice::from_ref(&history),
                ..ProfileInput::new("svc", &data)
            };
            set.evaluate(&input)
        };
        let flagged = check(18);
        assert_eq!(flagged.len(), 1);
        assert_eq!(flagged[0].share, 6.0, "18% against a 12% mean");
        assert_eq!(flagged[0].samples_matched, 1800);
        assert_eq!(flagged[0].detail["functions"][0]["function"], "parse");
        assert_eq!(flagged[0].detail["runs_compared"], 2);
        assert_eq!(check(17).len(), 1, "5 points reaches the threshold");
        assert!(check(16).is_empty(), "4 points is under 5");
        // Without history (not a scheduled run) nothing is compared.
        let data = run(90);
        assert!(set.evaluate(&ProfileInput::new("svc", &data)).is_empty());
    }

    /// A run of `samples` with `parse`'s self share at `pct`%.
    fn run_of(parse_pct: u64, samples: u64) -> ProfileFrames {
        profile(&[
            (&[("main", ""), ("parse", "")], parse_pct * samples / 100),
            (&[("main", "")], (100 - parse_pct) * samples / 100),
        ])
    }

    #[test]
    fn with_k_stderr_only_a_growth_beyond_chance_counts() {
        let significant = RuleDef {
            spec: json!({"previous_runs": 1, "k_stderr": 3.0, "baseline": "continuous"}),
            ..rule(1.0)
        };
        let (set, errors) = RuleSet::compile([significant]);
        assert!(errors.is_empty(), "{errors:?}");
        let check = |baseline: ProfileFrames, now: ProfileFrames| {
            let history = RunHistory {
                baseline: Baseline::Continuous,
                ..RunHistory::from_runs(&[baseline], BTreeSet::new())
            };
            let input = ProfileInput {
                histories: std::slice::from_ref(&history),
                ..ProfileInput::new("svc", &now)
            };
            set.evaluate(&input)
        };
        // 10% to 12% over 10,000 samples a side: the difference's standard
        // error is 0.44 points, and 2 points is 4.5 of them.
        let found = check(run_of(10, 10_000), run_of(12, 10_000));
        assert_eq!(found.len(), 1);
        let growth = &found[0].detail["functions"][0];
        let stderr = growth["growth_stderr_points"].as_f64().unwrap();
        assert!((stderr - 0.442).abs() < 0.001, "{growth}");
        // The same shares over 100 samples a side: 4.4 points of error, so
        // 2 points is chance.
        assert!(check(run_of(10, 100), run_of(12, 100)).is_empty());
        // A schedule's runs are not this rule's baseline.
        let history = RunHistory::from_runs(&[run_of(10, 10_000)], BTreeSet::new());
        let now = run_of(20, 10_000);
        let input = ProfileInput {
            histories: std::slice::from_ref(&history),
            ..ProfileInput::new("svc", &now)
        };
        assert!(set.evaluate(&input).is_empty());
        let (_, errors) = RuleSet::compile([RuleDef {
            spec: json!({"k_stderr": -1.0}),
            ..rule(1.0)
        }]);
        assert_eq!(errors.len(), 1, "a negative k is refused");
    }

    #[test]
    fn each_rule_judges_by_its_own_baseline() {
        let rule_of = |id: &str, baseline: &str| RuleDef {
            id: id.into(),
            spec: json!({"previous_runs": 2, "k_stderr": 3.0, "baseline": baseline}),
            ..rule(1.0)
        };
        let (set, errors) = RuleSet::compile([
            rule_of("weekly", "continuous"),
            rule_of("release", "previous_release"),
        ]);
        assert!(errors.is_empty(), "{errors:?}");
        // Last week's hour ran the new release already (12%); the release
        // before ran at 10%. Now 12%: a change of release, not of the week.
        let histories = [
            RunHistory {
                baseline: Baseline::Continuous,
                ..RunHistory::from_runs(&[run_of(12, 10_000)], BTreeSet::new())
            },
            RunHistory {
                baseline: Baseline::PreviousRelease,
                ..RunHistory::from_runs(&[run_of(10, 10_000)], BTreeSet::new())
            },
        ];
        let now = run_of(12, 10_000);
        let found = set.evaluate(&ProfileInput {
            histories: &histories,
            ..ProfileInput::new("svc", &now)
        });
        let ids: Vec<&str> = found.iter().map(|d| d.rule_id.as_str()).collect();
        assert_eq!(ids, ["release"]);
        assert_eq!(found[0].share, 2.0);
        // Without a release history (an unlabelled host) it judges nothing.
        let found = set.evaluate(&ProfileInput {
            histories: &histories[..1],
            ..ProfileInput::new("svc", &now)
        });
        assert!(found.is_empty());
    }

    #[test]
    fn a_rule_first_hit_in_this_run_is_a_regression() {
        let stack_rule = RuleDef {
            id: "parse-heavy".into(),
            kind: crate::stack_share::KIND.into(),
            spec: json!({"function": "^parse$"}),
            threshold_pct: 20.0,
            ..rule(0.0)
        };
        let (set, _) = RuleSet::compile([rule(50.0), stack_rule]);
        let data = run(25);
        let quiet = RunHistory::from_runs(&[run(24)], BTreeSet::new());
        let input = ProfileInput {
            histories: std::slice::from_ref(&quiet),
            ..ProfileInput::new("svc", &data)
        };
        let found: Vec<_> = set.evaluate(&input);
        let ids: Vec<&str> = found.iter().map(|d| d.rule_id.as_str()).collect();
        assert_eq!(ids, ["parse-heavy", "regression"]);
        assert_eq!(found[1].detail["new_rules"], json!(["parse-heavy"]));
        // Hit before as well: no regression (growth of 1 point is under 50).
        let hit_before = RunHistory::from_runs(&[run(24)], ["parse-heavy".to_owned()].into());
        let input = ProfileInput {
            histories: std::slice::from_ref(&hit_before),
            ..ProfileInput::new("svc", &data)
        };
        let ids: Vec<String> = set
            .evaluate(&input)
            .into_iter()
            .map(|d| d.rule_id)
            .collect();
        assert_eq!(ids, ["parse-heavy"]);
    }

    #[test]
    fn bad_specs_are_refused() {
        for spec in [
            json!({"previous_runs": 0}),
            json!({"previous_runs": 51}),
            json!({"min_share_pct": -1}),
            json!({"window": 3}),
        ] {
            assert!(ShareRegression::from_spec(&spec).is_err(), "{spec}");
        }
    }
}
