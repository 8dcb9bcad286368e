// Flame graph layout math, pure and DOM-free so it is unit-tested and fast
// on 100,000-stack profiles. The tree is flattened in pre-order into typed
// arrays: the subtree of node i is the contiguous range [i, i + size[i]),
// so layout, pruning and search are linear scans without recursion.

import type { Schemas } from '../api';
import type { SourceLocation } from '../settings';
import { shareStderr } from './significance';
import { hslToRgb, luminance } from './theme';

/** A node as the API sends it (`/flamegraph?format=json`, `/aggregate`).
 *  `merged` is only on an `other` node, which stands for this many
 *  children the server's node budget (`max_nodes`) cut. */
export type FlameNode = Schemas['FlameNode'];

/** A node of a diff (`/diff`): both sides' counts and shares. */
export type DiffNode = Schemas['DiffNode'];

export interface FlatTree {
  count: number;
  names: string[];
  /** Width weight of each node: samples (or a share for diffs). */
  total: Float64Array;
  self: Float64Array;
  parent: Int32Array;
  depth: Int32Array;
  /** Number of nodes in the subtree, itself included. */
  size: Int32Array;
  /** Weight of the earlier siblings' subtrees below the same parent, summed
   *  up the ancestry: the node's left edge in root weight units. */
  start: Float64Array;
  maxDepth: number;
  /** Per-node signed change for diffs (target − baseline share), else 0. */
  delta: Float64Array;
  /** Children an `other` node stands for (see `FlameNode.merged`); 0 for
   *  real frames. */
  merged: Uint32Array;
  /** Diffs only: each side's total samples per node. */
  sides?: { baseline: Float64Array; target: Float64Array };
  /** Per node, its file and line when the API sent them (sparse); absent
   *  when no node has one. */
  sources?: Array<SourceLocation | undefined>;
}

interface Source<N> {
  name(n: N): string;
  total(n: N): number;
  self(n: N): number;
  delta(n: N): number;
  merged(n: N): number;
  children(n: N): N[];
}

function flattenWith<N>(root: N, src: Source<N>, visit?: (i: number, n: N) => void): FlatTree {
  // First pass: count nodes without recursion (deep stacks must not overflow).
  let count = 0;
  const counting: N[] = [root];
  while (counting.length) {
    const n = counting.pop()!;
    count++;
    for (const c of src.children(n)) counting.push(c);
  }
  const tree: FlatTree = {
    count,
    names: new Array<string>(count),
    total: new Float64Array(count),
    self: new Float64Array(count),
    parent: new Int32Array(count),
    depth: new Int32Array(count),
    size: new Int32Array(count),
    start: new Float64Array(count),
    maxDepth: 0,
    delta: new Float64Array(count),
    merged: new Uint32Array(count),
  };
  // Pre-order with an explicit stack; children pushed in reverse so they come
  // out left to right. Each entry carries its parent and its left edge.
  const stack: Array<{ node: N; parent: number; depth: number; start: number }> = [
    { node: root, parent: -1, depth: 0, start: 0 },
  ];
  let next = 0;
  while (stack.length) {
    const { node, parent, depth, start } = stack.pop()!;
    const i = next++;
    tree.names[i] = src.name(node);
    tree.total[i] = src.total(node);
    tree.self[i] = src.self(node);
    tree.delta[i] = src.delta(node);
    tree.merged[i] = src.merged(node);
    tree.parent[i] = parent;
    tree.depth[i] = depth;
    tree.start[i] = start;
    visit?.(i, node);
    if (depth > tree.maxDepth) tree.maxDepth = depth;
    const kids = src.children(node);
    let offset = start;
    const entries = kids.map((c) => {
      const e = { node: c, parent: i, depth: depth + 1, start: offset };
      offset += src.total(c);
      return e;
    });
    for (let k = entries.length - 1; k >= 0; k--) stack.push(entries[k]);
  }
  // Subtree sizes: walk backwards, adding each node's size to its parent.
  for (let i = count - 1; i >= 0; i--) {
    tree.size[i] += 1;
    const p = tree.parent[i];
    if (p >= 0) tree.size[p] += tree.size[i];
  }
  return tree;
}

export function flatten(root: FlameNode): FlatTree {
  const sources: Array<SourceLocation | undefined> = [];
  let located = false;
  const tree = flattenWith(
    root,
    {
      name: (n) => n.name,
      total: (n) => n.total,
      self: (n) => n.self_count,
      delta: () => 0,
      merged: (n) => n.merged ?? 0,
      children: (n) => n.children ?? [],
    },
    (i, n) => {
      if (n.file) {
        sources[i] = { file: n.file, line: n.line };
        located = true;
      }
    },
  );
  if (located) tree.sources = sources;
  return tree;
}

/** Diff trees are laid out by the mean of both sides' shares, so frames that
 *  vanished (target 0) or appeared (baseline 0) both stay visible, and a
 *  child is never wider than its parent. */
export function flattenDiff(root: DiffNode): FlatTree {
  const weight = (n: DiffNode) => (n.baseline_share + n.target_share) / 2;
  const baseline: number[] = [];
  const target: number[] = [];
  const tree = flattenWith(
    root,
    {
      name: (n) => n.name,
      total: weight,
      self: (n) => n.target_self,
      delta: (n) => n.target_share - n.baseline_share,
      merged: () => 0,
      children: (n) => n.children ?? [],
    },
    (i, n) => {
      baseline[i] = n.baseline_total;
      target[i] = n.target_total;
    },
  );
  tree.sides = { baseline: Float64Array.from(baseline), target: Float64Array.from(target) };
  return tree;
}

/** Rectangles of one layout, grouped by row so hit-testing is a binary
 *  search. x and width are in pixels. */
export interface Layout {
  zoom: number;
  width: number;
  rows: Array<{ nodes: number[]; x: number[]; w: number[] }>;
  /** Nodes drawn; the rest were narrower than `minWidth` (with subtrees). */
  drawn: number;
}

/**
 * Lays out the graph zoomed on `zoom`: its ancestors span the full width at
 * their depth, its subtree is scaled so `zoom` fills the width. Frames
 * narrower than `minWidth` px are skipped with their whole subtree.
 */
export function layout(tree: FlatTree, zoom: number, width: number, minWidth = 0.5): Layout {
  const rows: Layout['rows'] = [];
  for (let d = 0; d <= tree.maxDepth; d++) rows.push({ nodes: [], x: [], w: [] });
  let drawn = 0;
  for (let a = tree.parent[zoom]; a >= 0; a = tree.parent[a]) {
    const row = rows[tree.depth[a]];
    row.nodes.push(a);
    row.x.push(0);
    row.w.push(width);
    drawn++;
  }
  const zTotal = tree.total[zoom];
  const zStart = tree.start[zoom];
  const scale = zTotal > 0 ? width / zTotal : 0;
  const end = zoom + tree.size[zoom];
  for (let i = zoom; i < end; ) {
    const w = tree.total[i] * scale;
    if (w < minWidth) {
      i += tree.size[i];
      continue;
    }
    const row = rows[tree.depth[i]];
    row.nodes.push(i);
    row.x.push((tree.start[i] - zStart) * scale);
    row.w.push(w);
    drawn++;
    i++;
  }
  while (rows.length > 1 && rows[rows.length - 1].nodes.length === 0) rows.pop();
  return { zoom, width, rows, drawn };
}

/** The node under pixel x of row `depth`, or -1. */
export function hitTest(l: Layout, x: number, depth: number): number {
  const row = l.rows[depth];
  if (!row || x < 0) return -1;
  let lo = 0;
  let hi = row.x.length - 1;
  while (lo <= hi) {
    const mid = (lo + hi) >> 1;
    if (row.x[mid] > x) hi = mid - 1;
    else if (row.x[mid] + row.w[mid] <= x) lo = mid + 1;
    else return row.nodes[mid];
  }
  return -1;
}

/** Root first, ending with `node`: the breadcrumb and the copied stack. */
export function ancestry(tree: FlatTree, node: number): number[] {
  const path: number[] = [];
  for (let n = node; n >= 0; n = tree.parent[n]) path.push(n);
  return path.reverse();
}

/** Share of the root's weight, with the binomial standard error over
 *  `samples` draws (the error shown as ± in tooltips). */
export function shareOf(tree: FlatTree, node: number, samples: number): { share: number; stderr: number } {
  const root = tree.total[0];
  const share = root > 0 ? tree.total[node] / root : 0;
  const stderr = shareStderr(share, samples);
  return { share, stderr };
}

export interface SearchResult {
  /** 1 where the frame's name matches (never an `other` node: it stands
   *  for frames whose names are not known here). */
  matched: Uint8Array;
  matchCount: number;
  /** Weight under matching frames, each sample counted once even when a
   *  match sits inside another, over the root's weight. */
  share: number;
}

export function search(tree: FlatTree, pattern: RegExp): SearchResult {
  const matched = new Uint8Array(tree.count);
  let matchCount = 0;
  for (let i = 0; i < tree.count; i++) {
    if (tree.merged[i] > 0) continue;
    pattern.lastIndex = 0;
    if (pattern.test(tree.names[i])) {
      matched[i] = 1;
      matchCount++;
    }
  }
  let covered = 0;
  for (let i = 0; i < tree.count; ) {
    if (matched[i]) {
      covered += tree.total[i];
      i += tree.size[i];
    } else i++;
  }
  const root = tree.total[0];
  return { matched, matchCount, share: root > 0 ? covered / root : 0 };
}

/** Compiles a user's regex, or says why it is not one. */
export function parsePattern(text: string): RegExp | string {
  try {
    return new RegExp(text);
  } catch (e) {
    return (e as Error).message;
  }
}

/** First node (pre-order) named exactly `name`, or -1. */
export function findByName(tree: FlatTree, name: string): number {
  return tree.names.indexOf(name);
}

/** Lightest lightness (of saturation DARK_SATURATION) per hue 0..55 whose
 *  colour keeps light labels at 4.5:1 or more (luminance at most 0.15):
 *  yellows are brighter than reds at the same lightness. */
const DARK_SATURATION = 55;
const DARK_TOP = Array.from({ length: 56 }, (_, hue) => {
  let l = 50;
  while (l > 20 && luminance(hslToRgb(hue, DARK_SATURATION, l)) > 0.15) l--;
  return l;
});

/** A stable warm colour per function name (hash → hue 0..55). `dark` (a
 *  dark page) takes darker, less saturated ones that do not glare; both
 *  keep their labels (black on light, light on dark) at 4.5:1 contrast. */
export function frameColor(name: string, dark = false): string {
  let h = 2166136261;
  for (let i = 0; i < name.length; i++) {
    h ^= name.charCodeAt(i);
    h = Math.imul(h, 16777619);
  }
  const u = (h >>> 0) / 4294967295;
  const hue = Math.round(u * 55);
  const step = Math.round(((h >>> 8) & 0xff) / 25.5);
  return dark ? `hsl(${hue}, ${DARK_SATURATION}%, ${DARK_TOP[hue] - step}%)` : `hsl(${hue}, 85%, ${56 + step}%)`;
}

/** Diff colour: red where the target grew, blue where it shrank, saturating
 *  at `maxAbs` (the largest change in the graph). */
export function diffColor(delta: number, maxAbs: number): string {
  const t = maxAbs > 0 ? Math.min(1, Math.abs(delta) / maxAbs) : 0;
  const light = Math.round(95 - 45 * t);
  return delta >= 0 ? `hsl(0, 80%, ${light}%)` : `hsl(220, 80%, ${light}%)`;
}

export function maxAbsDelta(tree: FlatTree): number {
  let m = 0;
  for (let i = 0; i < tree.count; i++) m = Math.max(m, Math.abs(tree.delta[i]));
  return m;
}
