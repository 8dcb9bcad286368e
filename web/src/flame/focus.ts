// Flame graphs cut to a node budget: the server (`max_nodes`) keeps the
// heaviest nodes and stands each parent's lighter children for one `other`
// node, every total exact. Zooming into a cut subtree asks again with
// `focus`, the path of frame names to the node to open; these helpers say
// which nodes are cut, build that path, find the node in the answer, and
// keep the answers so going back does not fetch again.

import type { FlatTree } from './layout';

/** The server's separator of `focus` path names. */
const FOCUS_SEPARATOR = ';';

/** An `other` node: children the budget cut, merged into one box. */
export function isMerged(tree: FlatTree, node: number): boolean {
  return tree.merged[node] > 0;
}

/** Whether the subtree of `node` (itself included) lost nodes to the
 *  budget: it is an `other` node or holds one. A complete subtree zooms
 *  locally; a cut one is fetched again, focused. */
export function isCut(tree: FlatTree, node: number): boolean {
  const end = node + tree.size[node];
  for (let i = node; i < end; i++) if (tree.merged[i] > 0) return true;
  return false;
}

/** The node a zoom into `node` opens: an `other` node's parent (the
 *  frames it stands for are that parent's children), else `node`. */
export function zoomTarget(tree: FlatTree, node: number): number {
  return isMerged(tree, node) && tree.parent[node] >= 0 ? tree.parent[node] : node;
}

/** The `focus` path of `node`: frame names from the root's child down to
 *  `node` ([] for the root, which is the unfocused tree), or null when a
 *  name is empty or holds the separator and so cannot be asked for. */
export function focusPath(tree: FlatTree, node: number): string[] | null {
  const path: string[] = [];
  for (let n = node; n > 0; n = tree.parent[n]) {
    const name = tree.names[n];
    if (isMerged(tree, n) || name === '' || name.includes(FOCUS_SEPARATOR)) return null;
    path.push(name);
  }
  return path.reverse();
}

/** The `focus` query value of a path. */
export function focusParam(path: string[]): string {
  return path.join(FOCUS_SEPARATOR);
}

export function samePath(a: string[], b: string[]): boolean {
  return a.length === b.length && a.every((name, i) => name === b[i]);
}

/** The real (not `other`) node at `path` below the root, or -1. */
export function nodeAtPath(tree: FlatTree, path: string[]): number {
  let at = 0;
  for (const name of path) {
    const end = at + tree.size[at];
    let found = -1;
    for (let c = at + 1; c < end; c += tree.size[c]) {
      if (tree.names[c] === name && !isMerged(tree, c)) {
        found = c;
        break;
      }
    }
    if (found < 0) return -1;
    at = found;
  }
  return at;
}

/**
 * Trees by focus path, fetched once: a second zoom into the same subtree,
 * the breadcrumb and Reset are answered from here. The unfocused tree ([])
 * is always kept; focused ones beyond `capacity` go, least recently used
 * first. A request under way is shared; a failed one is forgotten.
 */
export class FocusCache {
  private readonly trees = new Map<string, FlatTree>();
  private readonly pending = new Map<string, Promise<FlatTree>>();

  constructor(
    unfocused: FlatTree,
    private readonly capacity = 16,
  ) {
    this.trees.set(focusParam([]), unfocused);
  }

  /** The tree at `path` if it is here. */
  get(path: string[]): FlatTree | undefined {
    const key = focusParam(path);
    const tree = this.trees.get(key);
    if (tree && key !== '') {
      // Most recently used last.
      this.trees.delete(key);
      this.trees.set(key, tree);
    }
    return tree;
  }

  /** The tree at `path`, fetched with `fetchTree` unless here or under way. */
  load(path: string[], fetchTree: () => Promise<FlatTree>): Promise<FlatTree> {
    const cached = this.get(path);
    if (cached) return Promise.resolve(cached);
    const key = focusParam(path);
    let request = this.pending.get(key);
    if (!request) {
      request = fetchTree().then(
        (tree) => {
          this.pending.delete(key);
          this.put(key, tree);
          return tree;
        },
        (err: unknown) => {
          this.pending.delete(key);
          throw err;
        },
      );
      this.pending.set(key, request);
    }
    return request;
  }

  /** Focused trees held (the unfocused one not counted). */
  get size(): number {
    return this.trees.size - 1;
  }

  private put(key: string, tree: FlatTree): void {
    this.trees.set(key, tree);
    for (const oldest of this.trees.keys()) {
      if (this.trees.size - 1 <= this.capacity) break;
      if (oldest !== '') this.trees.delete(oldest);
    }
  }
}
