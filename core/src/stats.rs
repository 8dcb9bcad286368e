//! Per-function shares with error bounds.
//!
//! A sampled share is a binomial estimate: with `n` samples of which `k`
//! hit a function, the share is `p = k/n` with standard error
//! `sqrt(p (1 - p) / n)` (see the hardware-counter sampling accuracy paper
//! in the seeds). Reports show shares with that bound so users do not read
//! noise as signal.

use std::collections::{HashMap, HashSet};

use serde::{Deserialize, Serialize};

use crate::model::WeightedStack;

#[cfg_attr(feature = "schema", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FunctionShare {
    pub function: String,
    /// Samples where the function was the leaf.
    pub self_samples: u64,
    /// Samples where the function was anywhere on the stack (once per
    /// stack, however deep the recursion).
    pub total_samples: u64,
    pub self_share: f64,
    pub total_share: f64,
    /// One binomial standard error of `self_share`.
    pub self_share_stderr: f64,
}

pub fn binomial_stderr(hits: u64, samples: u64) -> f64 {
    if samples == 0 {
        return 0.0;
    }
    let p = hits as f64 / samples as f64;
    (p * (1.0 - p) / samples as f64).sqrt()
}

/// Functions by self samples, largest first (ties by name), at most `limit`.
pub fn top_functions(stacks: &[WeightedStack], limit: usize) -> Vec<FunctionShare> {
    let mut self_counts: HashMap<&str, u64> = HashMap::new();
    let mut total_counts: HashMap<&str, u64> = HashMap::new();
    let mut samples = 0u64;
    for stack in stacks {
        samples += stack.count;
        if let Some(leaf) = stack.frames.last() {
            *self_counts.entry(leaf).or_insert(0) += stack.count;
        }
        let distinct: HashSet<&str> = stack.frames.iter().map(String::as_str).collect();
        for function in distinct {
            *total_counts.entry(function).or_insert(0) += stack.count;
        }
    }
    let share = |k: u64| {
        if samples == 0 {
            0.0
        } else {
            k as f64 / samples as f64
        }
    };
    let mut out: Vec<FunctionShare> = total_counts
        .into_iter()
        .map(|(function, total)| {
            let own = self_counts.get(function).copied().unwrap_or(0);
            FunctionShare {
                function: function.to_owned(),
                self_samples: own,
                total_samples: total,
                self_share: share(own),
                total_share: share(total),
                self_share_stderr: binomial_stderr(own, samples),
            }
        })
        .collect();
    out.sort_by(|a, b| {
        b.self_samples
            .cmp(&a.self_samples)
            .then(b.total_samples.cmp(&a.total_samples))
            .then_with(|| a.function.cmp(&b.function))
    });
    out.truncate(limit);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ws(frames: &[&str], count: u64) -> WeightedStack {
        WeightedStack {
            frames: frames.iter().map(|s| s.to_string()).collect(),
            count,
        }
    }

    #[test]
    fn shares_and_errors() {
        let stacks = [
            ws(&["main", "hot"], 60),
            ws(&["main", "warm"], 30),
            ws(&["main", "f", "f"], 10),
        ];
        let top = top_functions(&stacks, 10);
        assert_eq!(top[0].function, "hot");
        assert!((top[0].self_share - 0.6).abs() < 1e-12);
        assert!((top[0].self_share_stderr - (0.6f64 * 0.4 / 100.0).sqrt()).abs() < 1e-12);
        let main = top.iter().find(|f| f.function == "main").unwrap();
        assert_eq!((main.self_samples, main.total_samples), (0, 100));
        let f = top.iter().find(|f| f.function == "f").unwrap();
        assert_eq!(f.total_samples, 10, "recursion counts once per stack");
        assert_eq!(top_functions(&stacks, 1).len(), 1);
    }

    #[test]
    fn empty_input_has_no_nan() {
        assert!(top_functions(&[], 5).is_empty());
        assert_eq!(binomial_stderr(0, 0), 0.0);
    }
}
