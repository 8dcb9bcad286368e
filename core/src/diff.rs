//! Differential flame graphs: two stack sets (a baseline and a target,
//! each one profile or an aggregate) compared after normalizing each by its
//! own total samples, so a 10 s profile compares with a 60 s one.
//!
//! The JSON form is a tree of nodes carrying both sides' counts and shares,
//! plus a table of the functions whose share changed most; the SVG form is
//! inferno's differential mode (red grew, blue shrank).

use std::collections::HashMap;

use serde::{Deserialize, Serialize};

use crate::flamegraph::{self, FlameNode};
use crate::folded::to_folded;
use crate::model::WeightedStack;
use crate::stats::{top_functions, FunctionShare};

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

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StackDiff {
    pub baseline_samples: u64,
    pub target_samples: u64,
    pub root: DiffNode,
    /// Largest `|delta_total_points|` first (ties by name), at most the
    /// requested number.
    pub changes: Vec<FunctionChange>,
}

fn share(count: u64, total: u64) -> f64 {
    if total == 0 {
        0.0
    } else {
        count as f64 / total as f64
    }
}

/// Compares `baseline` with `target`, keeping the `limit` largest changes.
pub fn diff(baseline: &[WeightedStack], target: &[WeightedStack], limit: usize) -> StackDiff {
    let before = flamegraph::build(baseline);
    let after = flamegraph::build(target);
    StackDiff {
        baseline_samples: before.total,
        target_samples: after.total,
        root: join_trees(&before, &after),
        changes: changes_between(
            (top_functions(baseline, usize::MAX), before.total),
            (top_functions(target, usize::MAX), after.total),
            limit,
        ),
    }
}

/// Two whole flame graphs joined path by path, each side's counts
/// normalized by its own total.
pub fn join_trees(before: &FlameNode, after: &FlameNode) -> DiffNode {
    join(Some(before), Some(after), (before.total, after.total))
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

/// Joins two nodes of the same path (either side may be missing);
/// children are sorted by name on both sides, so a merge-join pairs them.
fn join(before: Option<&FlameNode>, after: Option<&FlameNode>, totals: (u64, u64)) -> DiffNode {
    let name = before.or(after).map(|n| n.name.clone()).unwrap_or_default();
    let (bt, bs) = before.map_or((0, 0), |n| (n.total, n.self_count));
    let (tt, ts) = after.map_or((0, 0), |n| (n.total, n.self_count));
    let none: &[FlameNode] = &[];
    let left = before.map_or(none, |n| n.children.as_slice());
    let right = after.map_or(none, |n| n.children.as_slice());
    let mut children = Vec::with_capacity(left.len().max(right.len()));
    let (mut i, mut j) = (0, 0);
    while i < left.len() || j < right.len() {
        let order = match (left.get(i), right.get(j)) {
            (Some(l), Some(r)) => l.name.cmp(&r.name),
            (Some(_), None) => std::cmp::Ordering::Less,
            _ => std::cmp::Ordering::Greater,
        };
        let pair = match order {
            std::cmp::Ordering::Less => (left.get(i), None),
            std::cmp::Ordering::Greater => (None, right.get(j)),
            std::cmp::Ordering::Equal => (left.get(i), right.get(j)),
        };
        i += usize::from(pair.0.is_some());
        j += usize::from(pair.1.is_some());
        children.push(join(pair.0, pair.1, totals));
    }
    DiffNode {
        children,
        ..DiffNode::new(name, (bt, bs), (tt, ts), totals)
    }
}

/// The `limit` functions whose total share moved most (then self share,
/// then name), from each side's function table (as `top_functions` gives)
/// and samples, each change with its error.
pub fn changes_between(
    (baseline, baseline_samples): (Vec<FunctionShare>, u64),
    (target, target_samples): (Vec<FunctionShare>, u64),
    limit: usize,
) -> Vec<FunctionChange> {
    // (self share, total share) per function and side.
    let mut by_function: HashMap<String, [(f64, f64); 2]> = HashMap::new();
    for (side, table) in [baseline, target].into_iter().enumerate() {
        for f in table {
            by_function.entry(f.function).or_insert([(0.0, 0.0); 2])[side] =
                (f.self_share, f.total_share);
        }
    }
    let mut out: Vec<FunctionChange> = by_function
        .into_iter()
        .map(|(function, [(bs, bt), (ts, tt)])| {
            let mut change = FunctionChange {
                function,
                baseline_self_share: bs,
                target_self_share: ts,
                baseline_total_share: bt,
                target_total_share: tt,
                delta_total_points: (tt - bt) * 100.0,
                delta_self_points: (ts - bs) * 100.0,
                delta_total_stderr_points: None,
                significant: false,
            };
            change.delta_total_stderr_points =
                change.total_stderr_points(baseline_samples, target_samples);
            change.significant =
                is_significant(change.delta_total_points, change.delta_total_stderr_points);
            change
        })
        .collect();
    out.sort_by(|a, b| {
        b.delta_total_points
            .abs()
            .total_cmp(&a.delta_total_points.abs())
            .then_with(|| {
                b.delta_self_points
                    .abs()
                    .total_cmp(&a.delta_self_points.abs())
            })
            .then_with(|| a.function.cmp(&b.function))
    });
    out.truncate(limit);
    out
}

/// Renders the differential SVG: inferno's `differential` turns the two
/// folded texts into `stack baseline target` lines, normalized so both
/// sides have the same total, and `flamegraph` draws them with the target's
/// widths, colored by growth (red) or shrinkage (blue).
pub fn render_svg(
    baseline: &[WeightedStack],
    target: &[WeightedStack],
    title: String,
) -> std::io::Result<Vec<u8>> {
    let before = to_folded(baseline);
    let after = to_folded(target);
    let mut diff_folded = Vec::new();
    let options = inferno::differential::Options {
        normalize: true,
        strip_hex: false,
    };
    inferno::differential::from_readers(
        options,
        before.as_bytes(),
        after.as_bytes(),
        &mut diff_folded,
    )?;
    let text = String::from_utf8(diff_folded).map_err(std::io::Error::other)?;
    let mut options = inferno::flamegraph::Options::default();
    options.title = title;
    options.count_name = "samples".into();
    let mut svg = Vec::new();
    inferno::flamegraph::from_lines(&mut options, text.lines(), &mut svg)
        .map_err(std::io::Error::other)?;
    Ok(svg)
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

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() < 1e-9
    }

    fn baseline() -> Vec<WeightedStack> {
        vec![ws(&["main", "hot"], 60), ws(&["main", "warm"], 40)]
    }

    fn target() -> Vec<WeightedStack> {
        // Twice the samples; hot went from 60% to 30%, cool is new.
        vec![
            ws(&["main", "hot"], 60),
            ws(&["main", "warm"], 80),
            ws(&["main", "cool"], 60),
        ]
    }

    #[test]
    fn tree_carries_both_sides_normalized_by_their_totals() {
        let d = diff(&baseline(), &target(), 10);
        assert_eq!((d.baseline_samples, d.target_samples), (100, 200));
        assert_eq!(d.root.name, "all");
        assert!(close(d.root.baseline_share, 1.0) && close(d.root.target_share, 1.0));
        let main = &d.root.children[0];
        assert_eq!((main.baseline_total, main.target_total), (100, 200));
        let names: Vec<&str> = main.children.iter().map(|c| c.name.as_str()).collect();
        assert_eq!(names, ["cool", "hot", "warm"]);
        let cool = &main.children[0];
        assert_eq!(
            (cool.baseline_total, cool.target_total, cool.target_self),
            (0, 60, 60)
        );
        assert!(close(cool.baseline_share, 0.0) && close(cool.target_share, 0.3));
        let hot = &main.children[1];
        assert_eq!((hot.baseline_self, hot.target_self), (60, 60));
        assert!(close(hot.baseline_share, 0.6) && close(hot.target_share, 0.3));
        let warm = &main.children[2];
        assert!(close(warm.baseline_share, 0.4) && close(warm.target_share, 0.4));
    }

    #[test]
    fn changes_sorted_by_absolute_delta() {
        let d = diff(&baseline(), &target(), 10);
        let table: Vec<(&str, f64)> = d
            .changes
            .iter()
            .map(|c| (c.function.as_str(), c.delta_total_points))
            .collect();
        assert_eq!(table.len(), 4);
        assert_eq!(table[0].0, "cool");
        assert!(close(table[0].1, 30.0));
        assert_eq!(table[1].0, "hot");
        assert!(close(table[1].1, -30.0));
        // main and warm did not move; main's self share is 0 on both sides.
        assert_eq!((table[2].0, table[3].0), ("main", "warm"));
        assert!(close(table[2].1, 0.0) && close(table[3].1, 0.0));
        let hot = &d.changes[1];
        assert!(close(hot.baseline_self_share, 0.6) && close(hot.target_self_share, 0.3));
        assert!(close(hot.delta_self_points, -30.0));
        assert_eq!(diff(&baseline(), &target(), 1).changes.len(), 1);
    }

    #[test]
    fn each_change_carries_its_error_and_whether_it_is_beyond_chance() {
        let d = diff(&baseline(), &target(), 10);
        let change = |name: &str| d.changes.iter().find(|c| c.function == name).unwrap();
        // hot: 0.6 of 100 against 0.3 of 200.
        let hot = change("hot");
        let expected = 100.0 * (0.6f64 * 0.4 / 100.0 + 0.3 * 0.7 / 200.0).sqrt();
        assert!(close(hot.delta_total_stderr_points.unwrap(), expected));
        assert!(hot.significant, "-30 points against ± {expected:.1}");
        // warm did not move; main is on every stack of both sides, a share
        // known exactly, and did not move either.
        assert!(!change("warm").significant && !change("main").significant);
        assert_eq!(change("main").delta_total_stderr_points, Some(0.0));
        // The same 10-point move is noise in 20 samples, not in 20,000.
        let small = diff(
            &[ws(&["a"], 6), ws(&["b"], 4)],
            &[ws(&["a"], 5), ws(&["b"], 5)],
            10,
        );
        let large = diff(
            &[ws(&["a"], 6_000), ws(&["b"], 4_000)],
            &[ws(&["a"], 5_000), ws(&["b"], 5_000)],
            10,
        );
        assert!(!small.changes[0].significant && large.changes[0].significant);
        // Without samples on a side there is no error to give.
        let empty = diff(&[], &target(), 10);
        assert!(empty
            .changes
            .iter()
            .all(|c| c.delta_total_stderr_points.is_none() && !c.significant));
    }

    #[test]
    fn an_empty_side_has_zero_shares() {
        let d = diff(&[], &target(), 10);
        assert_eq!(d.baseline_samples, 0);
        assert!(close(d.root.baseline_share, 0.0));
        assert!(close(d.root.children[0].target_share, 1.0));
        let cool = d.changes.iter().find(|c| c.function == "cool").unwrap();
        assert!(close(cool.delta_total_points, 30.0));
    }

    #[test]
    fn renders_a_differential_svg() {
        let svg =
            String::from_utf8(render_svg(&baseline(), &target(), "diff".into()).unwrap()).unwrap();
        assert!(svg.starts_with("<?xml"));
        for name in ["hot", "warm", "cool"] {
            assert!(svg.contains(name), "{name}");
        }
        // Differential colors: hot shrank (blue), cool grew (red).
        assert!(svg.contains("rgb(") && svg.contains("diff"));
    }
}
