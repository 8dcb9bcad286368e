// The sandwich view of one function, as speedscope and Pyroscope show it:
// every place the function runs merged into one, its callers above (an
// inverted tree: the function, then who called it, then who called them)
// and its callees below. Computed from the flame tree the browser already
// holds, so it costs no request; pure and DOM-free, so it unit-tests.
//
// Recursion: only a function's outermost occurrences on each stack count
// (those with no ancestor of the same name), so a sample is counted once
// however often the function recurses; the inner calls show in the
// callees tree, below the outer ones. Frames the server's node budget cut
// into `other` boxes are not known by name here: they stay `other` boxes
// among the callees, and a function only inside them is not found. A
// merged node names the smallest file and line of the nodes it merges, as
// the server's nodes do (odp_profile::sources), for "View source".

import type { SourceLocation } from '../settings';
import type { FlameNode, FlatTree } from './layout';

export interface Sandwich {
  name: string;
  /** Inverted: the function at the root, its callers as children. */
  callers: FlameNode;
  /** The function at the root, what it calls below, merged. */
  callees: FlameNode;
  /** Outermost occurrences merged. */
  occurrences: number;
  /** Samples with the function anywhere on the stack. */
  total: number;
  /** Samples with the function as the leaf (every occurrence). */
  self: number;
}

/** A node under construction: children by name. */
interface Building {
  name: string;
  total: number;
  self: number;
  merged: number;
  source?: SourceLocation;
  children: Map<string, Building>;
}

const building = (name: string): Building => ({ name, total: 0, self: 0, merged: 0, children: new Map() });

function child(parent: Building, name: string): Building {
  let c = parent.children.get(name);
  if (!c) {
    c = building(name);
    parent.children.set(name, c);
  }
  return c;
}

/** Whether location `a` comes before `b`: by file, then line (an unknown
 *  line first), as the server orders them. */
function before(a: SourceLocation, b: SourceLocation): boolean {
  if (a.file !== b.file) return a.file < b.file;
  return (a.line ?? -1) < (b.line ?? -1);
}

/** Adds node `i` of `tree` to `b`'s source: the smallest so far. */
function locate(b: Building, tree: FlatTree, i: number): void {
  const source = tree.sources?.[i];
  if (source && (!b.source || before(source, b.source))) b.source = source;
}

/** The built tree as the API's node shape (children sorted by name, as
 *  the server sends them), without recursion. */
function toFlameNode(root: Building): FlameNode {
  const out = new Map<Building, FlameNode>();
  const order: Building[] = [];
  const stack = [root];
  while (stack.length) {
    const b = stack.pop()!;
    order.push(b);
    for (const c of b.children.values()) stack.push(c);
  }
  for (let i = order.length - 1; i >= 0; i--) {
    const b = order[i];
    const children = [...b.children.values()]
      .map((c) => out.get(c)!)
      .sort((x, y) => (x.name < y.name ? -1 : x.name > y.name ? 1 : 0));
    const node: FlameNode = { name: b.name, total: b.total, self_count: b.self, children };
    if (b.merged > 0) node.merged = b.merged;
    if (b.source) {
      node.file = b.source.file;
      node.line = b.source.line;
    }
    out.set(b, node);
  }
  return out.get(root)!;
}

/** Pre-order indexes of the real (not `other`) nodes named `name` with no
 *  ancestor of that name. */
export function outermostOccurrences(tree: FlatTree, name: string): number[] {
  const found: number[] = [];
  for (let i = 0; i < tree.count; ) {
    if (tree.names[i] === name && tree.merged[i] === 0) {
      found.push(i);
      i += tree.size[i]; // its subtree holds only inner occurrences
    } else i++;
  }
  return found;
}

/**
 * The sandwich of `name` in `tree`, or null when no real frame has that
 * name. The tree's root (the whole profile) is not a caller: the callers
 * tree ends at the root's children. The function as the root itself has
 * no callers.
 */
export function sandwich(tree: FlatTree, name: string): Sandwich | null {
  const occurrences = outermostOccurrences(tree, name);
  if (!occurrences.length) return null;
  const callers = building(name);
  const callees = building(name);
  let self = 0;
  for (let i = 0; i < tree.count; i++) if (tree.names[i] === name && tree.merged[i] === 0) self += tree.self[i];
  for (const o of occurrences) {
    const weight = tree.total[o];
    // Callers: up from the occurrence to the root's child.
    callers.total += weight;
    locate(callers, tree, o);
    locate(callees, tree, o);
    let at = callers;
    for (let a = tree.parent[o]; a > 0; a = tree.parent[a]) {
      at = child(at, tree.names[a]);
      at.total += weight;
      locate(at, tree, a);
    }
    // The samples end at the outermost caller (or at the function when
    // the root calls it directly): that node's own weight.
    at.self += weight;
    // Callees: the occurrence's subtree, merged in by name. Pre-order, so
    // a node's parent was placed before it.
    callees.total += weight;
    callees.self += tree.self[o];
    const placed = new Map<number, Building>([[o, callees]]);
    const end = o + tree.size[o];
    for (let i = o + 1; i < end; i++) {
      const c = child(placed.get(tree.parent[i])!, tree.names[i]);
      c.total += tree.total[i];
      c.self += tree.self[i];
      c.merged += tree.merged[i];
      locate(c, tree, i);
      placed.set(i, c);
    }
  }
  const total = callees.total;
  return { name, callers: toFlameNode(callers), callees: toFlameNode(callees), occurrences: occurrences.length, total, self };
}

/** A function's share of a tree: self from every occurrence, total once
 *  per stack (outermost occurrences). */
export interface FunctionTotals {
  function: string;
  self: number;
  total: number;
}

/**
 * Functions by self weight, heaviest first, from a flame tree (the top
 * functions of a view without a `/top` endpoint, such as an aggregate).
 * The root and `other` boxes are left out: their samples have no known
 * leaf function.
 */
export function functionTotals(tree: FlatTree): FunctionTotals[] {
  const self = new Map<string, number>();
  const total = new Map<string, number>();
  // Names on the path from the root to the node being visited, counted,
  // to tell outermost occurrences (count 0 before entering).
  const onPath = new Map<string, number>();
  const path: number[] = [];
  for (let i = 1; i < tree.count; i++) {
    // Leave the nodes that are not ancestors of i.
    while (path.length && tree.parent[i] !== path[path.length - 1]) {
      const left = path.pop()!;
      if (tree.merged[left] === 0) onPath.set(tree.names[left], onPath.get(tree.names[left])! - 1);
    }
    if (tree.merged[i] > 0) {
      path.push(i);
      continue;
    }
    const name = tree.names[i];
    self.set(name, (self.get(name) ?? 0) + tree.self[i]);
    if (!onPath.get(name)) total.set(name, (total.get(name) ?? 0) + tree.total[i]);
    path.push(i);
    onPath.set(name, (onPath.get(name) ?? 0) + 1);
  }
  return [...total.keys()]
    .map((fn) => ({ function: fn, self: self.get(fn) ?? 0, total: total.get(fn)! }))
    .sort((a, b) => b.self - a.self || b.total - a.total || (a.function < b.function ? -1 : 1));
}
