//! Differential flame graphs' shapes: two stack sets (a baseline and a
//! target, each one profile or an aggregate) compared after normalizing
//! each by its own total samples, so a 10 s profile compares with a 60 s
//! one.
//!
//! A diff is a tree of nodes carrying both sides' counts and shares, plus a
//! table of the functions whose share changed most, each change with its
//! error and whether it is beyond chance. Plain data and the significance
//! rule: `odp-profile` computes diffs from its model, and the api-server
//! draws their SVG.

use serde::{Deserialize, Serialize};

#[cfg_attr(feature = "schema", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DiffNode {
    pub name: String,
    pub baseline_total: u64,
    pub baseline_self: u64,
    pub target_total: u64,
    pub target_self: u64,
    /// `baseline_total` over the baseline's total samples.
    pub baseline_share: f64,
    /// `target_total` over the target's total samples.
    pub target_share: f64,
    /// Sorted by name.
    #[cfg_attr(feature = "schema", schema(no_recursion))]
    pub children: Vec<DiffNode>,
}

/// How one function's share moved between baseline and target.
#[cfg_attr(feature = "schema", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FunctionChange {
    pub function: String,
    pub baseline_self_share: f64,
    pub target_self_share: f64,
    pub baseline_total_share: f64,
    pub target_total_share: f64,
    /// `target_total_share - baseline_total_share`, in percentage points.
    pub delta_total_points: f64,
    /// `target_self_share - baseline_self_share`, in percentage points.
    pub delta_self_points: f64,
    /// One standard error of `delta_total_points`, in points: each side's
    /// share is a binomial proportion over its samples, and the sides are
    /// independent. Null when a side has no samples (or from a server
    /// before it was reported).
    #[serde(default)]
    pub delta_total_stderr_points: Option<f64>,
    /// Whether the change spans at least [`SIGNIFICANT_Z`] standard errors
    /// (any change of a share known exactly, 0 or 100% on both sides).
    #[serde(default)]
    pub significant: bool,
}

/// A change is significant when it spans at least this many standard
/// errors: about 3 in 1,000 changes of pure sampling noise do.
pub const SIGNIFICANT_Z: f64 = 3.0;

impl FunctionChange {
    /// One standard error of the total-share change, in points, given each
    /// side's samples; `None` when a side has none.
    pub fn total_stderr_points(&self, baseline_samples: u64, target_samples: u64) -> Option<f64> {
        if baseline_samples == 0 || target_samples == 0 {
            return None;
        }
        let variance = |p: f64, n: u64| p * (1.0 - p) / n as f64;
        let (pb, pt) = (self.baseline_total_share, self.target_total_share);
        Some(100.0 * (variance(pb, baseline_samples) + variance(pt, target_samples)).sqrt())
    }
}

/// Whether `points` of change is beyond chance given its error.
pub fn is_significant(points: f64, stderr: Option<f64>) -> bool {
    match stderr {
        None => false,
        Some(stderr) if stderr > 0.0 => points.abs() >= SIGNIFICANT_Z * stderr,
        // Both shares 0 or 100%: any change is certain.
        Some(_) => points != 0.0,
    }
}

fn share(count: u64, total: u64) -> f64 {
    if total == 0 {
        0.0
    } else {
        count as f64 / total as f64
    }
}

impl DiffNode {
    /// A node without children from each side's (total, self) counts and
    /// the sides' totals.
    pub fn new(
        name: String,
        (baseline_total, baseline_self): (u64, u64),
        (target_total, target_self): (u64, u64),
        totals: (u64, u64),
    ) -> DiffNode {
        DiffNode {
            name,
            baseline_total,
            baseline_self,
            target_total,
            target_self,
            baseline_share: share(baseline_total, totals.0),
            target_share: share(target_total, totals.1),
            children: Vec::new(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() < 1e-9
    }

    #[test]
    fn a_node_is_normalized_by_each_sides_total() {
        let hot = DiffNode::new("hot".into(), (60, 60), (60, 50), (100, 200));
        assert_eq!((hot.baseline_self, hot.target_self), (60, 50));
        assert!(close(hot.baseline_share, 0.6) && close(hot.target_share, 0.3));
        let new = DiffNode::new("cool".into(), (0, 0), (60, 60), (0, 200));
        assert!(close(new.baseline_share, 0.0) && close(new.target_share, 0.3));
        assert!(new.children.is_empty());
    }

    #[test]
    fn a_change_is_significant_beyond_three_standard_errors() {
        // hot: 0.6 of 100 against 0.3 of 200.
        let hot = FunctionChange {
            function: "hot".into(),
            baseline_self_share: 0.6,
            target_self_share: 0.3,
            baseline_total_share: 0.6,
            target_total_share: 0.3,
            delta_total_points: -30.0,
            delta_self_points: -30.0,
            delta_total_stderr_points: None,
            significant: false,
        };
        let expected = 100.0 * (0.6f64 * 0.4 / 100.0 + 0.3 * 0.7 / 200.0).sqrt();
        let stderr = hot.total_stderr_points(100, 200);
        assert!(close(stderr.unwrap(), expected));
        assert!(is_significant(-30.0, stderr));
        assert!(!is_significant(10.0, Some(5.0)) && is_significant(15.0, Some(5.0)));
        // Without samples on a side there is no error, and no verdict.
        assert_eq!(hot.total_stderr_points(0, 200), None);
        assert!(!is_significant(-30.0, None));
        // Shares known exactly: any change is certain, none is not.
        assert!(is_significant(0.5, Some(0.0)) && !is_significant(0.0, Some(0.0)));
    }
}
