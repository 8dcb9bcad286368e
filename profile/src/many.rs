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
    /// Where its members (view, node) lie in [`Members`].
    members: std::ops::Range<usize>,
    total: u64,
    self_count: u64,
    kept: bool,
    /// Kept children, filled as they are kept.
    children: Vec<usize>,
    /// How many distinct names its children have, once they are listed.
    child_names: u32,
}

/// Every merged node's members, each node's side by side: one buffer for
/// the hundreds of thousands of candidates a large read lists, where a
/// vector each was most of the flame graph's time.
#[derive(Default)]
struct Members {
    all: Vec<(u32, u32)>,
    /// Per child listed by one [`Shared::children_of`]: (its slot, view,
    /// node), before they are laid out by slot.
    found: Vec<(u32, u32, u32)>,
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

    fn name_of(&self, view: u32, node: u32) -> u32 {
        self.global[view as usize][self.views[view as usize].tree.frame(node) as usize]
    }

    fn candidate(&self, parent: usize, name: u32) -> Merged {
        Merged {
            name,
            parent,
            members: 0..0,
            total: 0,
            self_count: 0,
            kept: false,
            children: Vec::new(),
            child_names: 0,
        }
    }

    /// The merged children of `nodes[parent]`, by name, not kept yet, their
    /// members appended to `members`; records how many there are.
    fn children_of(
        &self,
        nodes: &mut [Merged],
        parent: usize,
        members: &mut Members,
    ) -> Vec<Merged> {
        let mut by_name: HashMap<u32, u32, BuildHasherDefault<PairHasher>> = HashMap::default();
        let mut out: Vec<Merged> = Vec::new();
        members.found.clear();
        for at in nodes[parent].members.clone() {
            let (view, node) = members.all[at];
            for &child in self.children[view as usize].of(node) {
                let name = self.name_of(view, child);
                let slot = *by_name.entry(name).or_insert_with(|| {
                    out.push(self.candidate(parent, name));
                    (out.len() - 1) as u32
                });
                let merged = &mut out[slot as usize];
                merged.members.end += 1;
                merged.total += self.totals[view as usize][child as usize];
                merged.self_count += self.views[view as usize].counts[child as usize];
                members.found.push((slot, view, child));
            }
        }
        // Lay the members out by slot (a counting sort), each slot's in
        // the order found.
        let mut next = members.all.len();
        let mut cursor = Vec::with_capacity(out.len());
        for merged in &mut out {
            let count = merged.members.end;
            merged.members = next..next + count;
            cursor.push(next);
            next += count;
        }
        members.all.resize(next, (0, 0));
        for &(slot, view, child) in &members.found {
            members.all[cursor[slot as usize]] = (view, child);
            cursor[slot as usize] += 1;
        }
        nodes[parent].child_names = out.len() as u32;
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
    let mut members = Members {
        all: (0..views.len() as u32).map(|v| (v, ROOT)).collect(),
        found: Vec::new(),
    };
    let mut nodes = vec![Merged {
        members: 0..views.len(),
        total: shared.totals.iter().map(|t| t[ROOT as usize]).sum(),
        self_count: views.iter().map(|v| v.counts[ROOT as usize]).sum(),
        kept: true,
        ..shared.candidate(0, u32::MAX)
    }];
    // Walk the focus path down, keeping it.
    let mut start = 0;
    for name in focus.unwrap_or_default() {
        let mut child = shared
            .children_of(&mut nodes, start, &mut members)
            .into_iter()
            .find(|c| shared.names[c.name as usize] == *name)?;
        child.kept = true;
        nodes.push(child);
        let index = nodes.len() - 1;
        nodes[start].children.push(index);
        start = index;
    }
    let mut heap = BinaryHeap::new();
    let mut open =
        |at: usize, nodes: &mut Vec<Merged>, heap: &mut BinaryHeap<(u64, Reverse<usize>)>| {
            for child in shared.children_of(nodes, at, &mut members) {
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
    Some(emit(&shared, &members, &mut nodes, 0))
}

fn emit(shared: &Shared<'_>, members: &Members, nodes: &mut [Merged], at: usize) -> FlameNode {
    let mut kept = std::mem::take(&mut nodes[at].children);
    kept.sort_by(|&a, &b| {
        shared.names[nodes[a].name as usize].cmp(shared.names[nodes[b].name as usize])
    });
    let kept_total: u64 = kept.iter().map(|&c| nodes[c].total).sum();
    let mut children: Vec<FlameNode> = kept
        .iter()
        .map(|&c| emit(shared, members, nodes, c))
        .collect();
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
            // Every kept node has had its children listed, and the kept
            // ones are distinct names among them.
            merged: node.child_names - kept.len() as u32,
        });
    }
    // The smallest location of the views' nodes merged here, as
    // `View::merge` would give it (see `crate::sources`); the root's
    // members are the views' roots, which have none.
    let source = members.all[node.members.clone()]
        .iter()
        .filter_map(|&(view, n)| shared.views[view as usize].sources.get(n))
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
