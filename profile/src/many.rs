//! Flame graphs and top tables of several views at once, without merging
//! their trees.
//!
//! An aggregate over many instances is many views (one per profile and
//! host). Merging them into one tree costs a hash lookup per node of
//! every view, which for ten 100k-stack profiles is most of the read. A
//! flame graph cut to a node budget needs far less: starting at the root,
//! the heaviest merged node is opened next, and opening it looks only at
//! the children of the nodes it merges. So only the few thousand nodes
//! kept (and their children) are ever merged, and every total is still
//! exact. A top table needs no tree at all: each view's per-name counts
//! add up by name.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap};
use std::hash::BuildHasherDefault;

use odp_core::flamegraph::{FlameNode, ROOT_NAME};
use odp_core::stats::{binomial_stderr, FunctionShare};

use crate::halves::map_in_halves;
use crate::tree::{Children, PairHasher, ROOT};
use crate::view::View;

/// The name of a node that stands for children cut by the budget.
pub const OTHER_NAME: &str = "other";

/// One node of the merged tree: nodes of the views with the same path.
struct Merged {
    name: u32,
    parent: usize,
    members: Vec<(usize, u32)>,
    total: u64,
    self_count: u64,
    kept: bool,
    /// Kept children, filled as they are kept.
    children: Vec<usize>,
}

/// What the views share: one name table, and per view its totals, its
/// nodes' children and its names' ids in that table.
struct Shared<'a> {
    views: &'a [&'a View],
    names: Vec<&'a str>,
    global: Vec<Vec<u32>>,
    totals: Vec<Vec<u64>>,
    children: Vec<Children>,
}

impl<'a> Shared<'a> {
    fn new(views: &'a [&'a View]) -> Shared<'a> {
        let mut ids: HashMap<&str, u32> = HashMap::new();
        let mut names: Vec<&str> = Vec::new();
        let global = views
            .iter()
            .map(|view| {
                view.names
                    .iter()
                    .map(|name| {
                        *ids.entry(name.as_str()).or_insert_with(|| {
                            names.push(name);
                            (names.len() - 1) as u32
                        })
                    })
                    .collect()
            })
            .collect();
        let (totals, children) = map_in_halves(views, SPLIT_VIEWS, |view| {
            let totals = view.totals();
            let children = view.tree.children(|node| totals[node as usize] > 0);
            (totals, children)
        })
        .into_iter()
        .unzip();
        Shared {
            views,
            names,
            global,
            totals,
            children,
        }
    }

    fn name_of(&self, view: usize, node: u32) -> u32 {
        self.global[view][self.views[view].tree.frame(node) as usize]
    }

    /// The merged children of `nodes[parent]` (whose members are
    /// `members`), by name, not kept yet.
    fn children_of(&self, parent: usize, members: &[(usize, u32)]) -> Vec<Merged> {
        if let [(view, node)] = *members {
            // One view's children have a name each: nothing to merge.
            return self.children[view]
                .of(node)
                .iter()
                .map(|&child| Merged {
                    name: self.name_of(view, child),
                    parent,
                    members: vec![(view, child)],
                    total: self.totals[view][child as usize],
                    self_count: self.views[view].counts[child as usize],
                    kept: false,
                    children: Vec::new(),
                })
                .collect();
        }
        let mut by_name: HashMap<u32, usize, BuildHasherDefault<PairHasher>> = HashMap::default();
        let mut out: Vec<Merged> = Vec::new();
        for &(view, node) in members {
            for &child in self.children[view].of(node) {
                let name = self.name_of(view, child);
                let at = *by_name.entry(name).or_insert_with(|| {
                    out.push(Merged {
                        name,
                        parent,
                        members: Vec::new(),
                        total: 0,
                        self_count: 0,
                        kept: false,
                        children: Vec::new(),
                    });
                    out.len() - 1
                });
                out[at].members.push((view, child));
                out[at].total += self.totals[view][child as usize];
                out[at].self_count += self.views[view].counts[child as usize];
            }
        }
        out
    }
}

/// Views from which a flame graph's pass over each view takes a second
/// thread (each view's totals and children are a pass over its whole tree).
const SPLIT_VIEWS: usize = 8;

/// The flame graph of all `views` added up, with at most about `budget`
/// nodes (as [`crate::flame::build`] of their merge); with `focus` (names
/// from the root), only that path's subtree is opened. `None` when the
/// views have no such path.
pub fn flame_graph(views: &[&View], budget: usize, focus: Option<&[&str]>) -> Option<FlameNode> {
    let shared = Shared::new(views);
    let root_members: Vec<(usize, u32)> = (0..views.len()).map(|v| (v, ROOT)).collect();
    let mut nodes = vec![Merged {
        name: u32::MAX,
        parent: 0,
        total: shared.totals.iter().map(|t| t[ROOT as usize]).sum(),
        self_count: views.iter().map(|v| v.counts[ROOT as usize]).sum(),
        members: root_members,
        kept: true,
        children: Vec::new(),
    }];
    // Walk the focus path down, keeping it.
    let mut start = 0;
    for name in focus.unwrap_or_default() {
        let mut child = shared
            .children_of(start, &nodes[start].members)
            .into_iter()
            .find(|c| shared.names[c.name as usize] == *name)?;
        child.kept = true;
        nodes.push(child);
        let index = nodes.len() - 1;
        nodes[start].children.push(index);
        start = index;
    }
    let mut heap = BinaryHeap::new();
    let open =
        |at: usize, nodes: &mut Vec<Merged>, heap: &mut BinaryHeap<(u64, Reverse<usize>)>| {
            for child in shared.children_of(at, &nodes[at].members) {
                heap.push((child.total, Reverse(nodes.len())));
                nodes.push(child);
            }
        };
    open(start, &mut nodes, &mut heap);
    let mut left = budget.max(1);
    while let Some((_, Reverse(at))) = heap.pop() {
        if left == 0 {
            break;
        }
        left -= 1;
        nodes[at].kept = true;
        let parent = nodes[at].parent;
        nodes[parent].children.push(at);
        open(at, &mut nodes, &mut heap);
    }
    Some(emit(&shared, &mut nodes, 0))
}

fn emit(shared: &Shared<'_>, nodes: &mut [Merged], at: usize) -> FlameNode {
    let mut kept = std::mem::take(&mut nodes[at].children);
    kept.sort_by(|&a, &b| {
        shared.names[nodes[a].name as usize].cmp(shared.names[nodes[b].name as usize])
    });
    let kept_total: u64 = kept.iter().map(|&c| nodes[c].total).sum();
    let mut children: Vec<FlameNode> = kept.iter().map(|&c| emit(shared, nodes, c)).collect();
    let node = &nodes[at];
    let rest = node.total - node.self_count - kept_total;
    if rest > 0 {
        children.push(FlameNode {
            name: OTHER_NAME.to_owned(),
            file: None,
            line: None,
            total: rest,
            self_count: rest,
            children: Vec::new(),
            merged: cut_children(shared, node, &kept, nodes),
        });
    }
    // The smallest location of the views' nodes merged here, as
    // `View::merge` would give it (see `crate::sources`); the root's
    // members are the views' roots, which have none.
    let source = node
        .members
        .iter()
        .filter_map(|&(view, n)| shared.views[view].sources.get(n))
        .min();
    FlameNode {
        name: if at == 0 {
            ROOT_NAME.to_owned()
        } else {
            shared.names[node.name as usize].to_owned()
        },
        file: source.map(|s| s.file.clone()),
        line: source.and_then(|s| s.line),
        total: node.total,
        self_count: node.self_count,
        children,
        merged: 0,
    }
}

/// How many distinct names the cut children of `node` have.
fn cut_children(shared: &Shared<'_>, node: &Merged, kept: &[usize], nodes: &[Merged]) -> u32 {
    let kept_names: Vec<u32> = kept.iter().map(|&k| nodes[k].name).collect();
    let mut names: Vec<u32> = node
        .members
        .iter()
        .flat_map(|&(view, n)| {
            shared.children[view]
                .of(n)
                .iter()
                .map(move |&c| shared.name_of(view, c))
        })
        .filter(|name| !kept_names.contains(name))
        .collect();
    names.sort_unstable();
    names.dedup();
    names.len() as u32
}

/// The hottest functions of all `views` added up (as
/// [`crate::top::top_functions`] of their merge).
pub fn top_functions(views: &[&View], limit: usize) -> Vec<FunctionShare> {
    let mut by_name: HashMap<&str, (u64, u64)> = HashMap::new();
    let mut samples = 0u64;
    for view in views {
        let (self_samples, total_samples) = view.name_counts();
        samples += view.samples();
        for (i, name) in view.names.iter().enumerate() {
            if total_samples[i] > 0 {
                let entry = by_name.entry(name.as_str()).or_insert((0, 0));
                entry.0 += self_samples[i];
                entry.1 += total_samples[i];
            }
        }
    }
    let share = |k: u64| {
        if samples == 0 {
            0.0
        } else {
            k as f64 / samples as f64
        }
    };
    let mut hot: Vec<(&str, u64, u64)> = by_name.into_iter().map(|(n, (s, t))| (n, s, t)).collect();
    hot.sort_by(|a, b| b.1.cmp(&a.1).then(b.2.cmp(&a.2)).then_with(|| a.0.cmp(b.0)));
    hot.truncate(limit);
    hot.into_iter()
        .map(|(function, own, total)| FunctionShare {
            function: function.to_owned(),
            self_samples: own,
            total_samples: total,
            self_share: share(own),
            total_share: share(total),
            self_share_stderr: binomial_stderr(own, samples),
        })
        .collect()
}
