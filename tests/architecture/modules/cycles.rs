//! Circles in a graph of modules: its strongly connected components,
//! each with one shortest cycle through it.

use std::collections::{BTreeMap, BTreeSet, VecDeque};

/// The modules of one strongly connected component, and one cycle in it.
#[derive(Debug, PartialEq)]
pub(crate) struct Circle {
    pub(crate) members: BTreeSet<String>,
    /// The shortest path from the first member back to itself, that
    /// member repeated at the end.
    pub(crate) cycle: Vec<String>,
}

/// One circle per strongly connected component of `edges` of more than
/// one node.
pub(crate) fn cycles(edges: &[(&str, &str)]) -> Vec<Circle> {
    let mut next: BTreeMap<&str, BTreeSet<&str>> = BTreeMap::new();
    for &(from, to) in edges {
        next.entry(from).or_default().insert(to);
        next.entry(to).or_default();
    }
    let reach = |from: &str| {
        let mut seen = BTreeSet::new();
        let mut todo = vec![from];
        while let Some(n) = todo.pop() {
            for &m in &next[n] {
                if seen.insert(m) {
                    todo.push(m);
                }
            }
        }
        seen
    };
    let reaches: BTreeMap<&str, BTreeSet<&str>> = next.keys().map(|&n| (n, reach(n))).collect();
    let mut done = BTreeSet::new();
    let mut out = Vec::new();
    for &n in next.keys() {
        if done.contains(n) || !reaches[n].contains(n) {
            continue;
        }
        let component: BTreeSet<&str> = reaches[n]
            .iter()
            .copied()
            .filter(|m| reaches[m].contains(n))
            .collect();
        done.extend(component.iter().copied());
        // Breadth-first from n inside the component, back to n.
        let mut prev: BTreeMap<&str, &str> = BTreeMap::new();
        let mut queue = VecDeque::from([n]);
        'search: while let Some(cur) = queue.pop_front() {
            for &m in &next[cur] {
                if m == n {
                    out.push(Circle {
                        members: component.iter().map(|&m| m.to_owned()).collect(),
                        cycle: ordered(n, cur, &prev),
                    });
                    break 'search;
                }
                if component.contains(m) && !prev.contains_key(m) {
                    prev.insert(m, cur);
                    queue.push_back(m);
                }
            }
        }
    }
    out
}

/// The cycle n → … → last → n, following `prev` back from `last`.
fn ordered(n: &str, last: &str, prev: &BTreeMap<&str, &str>) -> Vec<String> {
    let mut back = vec![last.to_owned()];
    let mut at = last;
    while at != n {
        at = prev[at];
        back.push(at.to_owned());
    }
    back.reverse();
    back.push(n.to_owned());
    back
}
