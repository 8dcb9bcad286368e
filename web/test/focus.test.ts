import { describe, expect, it } from 'vitest';
import { flameTreeQuery, FLAME_MAX_NODES, withQuery } from '../src/api';
import {
  FocusCache,
  focusParam,
  focusPath,
  isCut,
  isMerged,
  nodeAtPath,
  samePath,
  zoomTarget,
} from '../src/flame/focus';
import { findByName, flatten, type FlameNode, type FlatTree } from '../src/flame/layout';

const leaf = (name: string, total: number): FlameNode => ({ name, total, self_count: total, children: [] });
const other = (total: number, merged: number): FlameNode => ({ name: 'other', total, self_count: total, merged, children: [] });
const node = (name: string, children: FlameNode[]): FlameNode => ({
  name,
  total: children.reduce((s, c) => s + c.total, 0),
  self_count: 0,
  children,
});

// all → main → { handle → { parse, other(4) }, idle, other(2) }, as the
// server cuts it to a node budget.
const cut = flatten(
  node('all', [node('main', [node('handle', [leaf('parse', 45), other(15, 4)]), leaf('idle', 25), other(15, 2)])]),
);
const at = (tree: FlatTree, name: string, nth = 0) => tree.names.map((n, i) => (n === name ? i : -1)).filter((i) => i >= 0)[nth];

describe('cut subtrees', () => {
  it('an other node and every ancestor of one are cut; complete subtrees are not', () => {
    expect(isMerged(cut, at(cut, 'other'))).toBe(true);
    expect(isMerged(cut, at(cut, 'handle'))).toBe(false);
    for (const name of ['all', 'main', 'handle']) expect(isCut(cut, at(cut, name)), name).toBe(true);
    for (const name of ['parse', 'idle']) expect(isCut(cut, at(cut, name)), name).toBe(false);
    expect(isCut(cut, at(cut, 'other', 0))).toBe(true);
    expect(isCut(cut, at(cut, 'other', 1))).toBe(true);
  });

  it('a tree within the budget has nothing cut', () => {
    const whole = flatten(node('all', [node('main', [leaf('a', 1), leaf('b', 2)])]));
    for (let i = 0; i < whole.count; i++) expect(isCut(whole, i)).toBe(false);
  });

  it('zooming into an other node opens its parent', () => {
    expect(cut.names[zoomTarget(cut, at(cut, 'other', 0))]).toBe('handle');
    expect(cut.names[zoomTarget(cut, at(cut, 'other', 1))]).toBe('main');
    expect(zoomTarget(cut, at(cut, 'parse'))).toBe(at(cut, 'parse'));
  });
});

describe('focus paths', () => {
  it('are the frame names below the root down to the node', () => {
    expect(focusPath(cut, at(cut, 'handle'))).toEqual(['main', 'handle']);
    expect(focusPath(cut, zoomTarget(cut, at(cut, 'other', 0)))).toEqual(['main', 'handle']);
    expect(focusPath(cut, zoomTarget(cut, at(cut, 'other', 1)))).toEqual(['main']);
    expect(focusPath(cut, 0)).toEqual([]);
    expect(focusParam(['main', 'handle'])).toBe('main;handle');
  });

  it('cannot be asked for through an other node or a name holding the separator', () => {
    expect(focusPath(cut, at(cut, 'other'))).toBeNull();
    const odd = flatten(node('all', [node('a;b', [leaf('c', 1)])]));
    expect(focusPath(odd, findByName(odd, 'c'))).toBeNull();
  });

  it('find the focused node in the answer, skipping other nodes of the same name', () => {
    // The server's answer to focus=main;handle: handle's siblings merged.
    const focused = flatten(
      node('all', [node('main', [other(40, 2), node('handle', [leaf('parse', 45), leaf('lex', 15)])])]),
    );
    expect(focused.names[nodeAtPath(focused, ['main', 'handle'])]).toBe('handle');
    expect(nodeAtPath(focused, [])).toBe(0);
    expect(nodeAtPath(focused, ['main', 'other'])).toBe(-1);
    expect(nodeAtPath(focused, ['main', 'nope'])).toBe(-1);
    // A real frame named `other` is a frame like any other.
    const named = flatten(node('all', [node('other', [leaf('x', 1)])]));
    expect(named.names[nodeAtPath(named, ['other', 'x'])]).toBe('x');
    expect(isMerged(named, 1)).toBe(false);
  });

  it('compare name by name', () => {
    expect(samePath(['a', 'b'], ['a', 'b'])).toBe(true);
    expect(samePath(['a'], ['a', 'b'])).toBe(false);
    expect(samePath([], [])).toBe(true);
  });

  it('go to the server with the node budget from one constant', () => {
    expect(FLAME_MAX_NODES).toBe(8192);
    expect(withQuery('/api/v1/aggregate', flameTreeQuery({ service: 'api' }))).toBe(
      '/api/v1/aggregate?service=api&max_nodes=8192',
    );
    expect(withQuery('/f', flameTreeQuery({ format: 'json', include: '' }, ['main', 'handle']))).toBe(
      '/f?format=json&max_nodes=8192&focus=main%3Bhandle',
    );
  });
});

describe('FocusCache', () => {
  const tree = (name: string) => flatten(leaf(name, 1));

  it('always holds the unfocused tree and fetches a focus once', async () => {
    const unfocused = tree('all');
    const cache = new FocusCache(unfocused);
    expect(cache.get([])).toBe(unfocused);
    let fetches = 0;
    const fetchTree = async () => {
      fetches++;
      return tree('main');
    };
    const [a, b] = await Promise.all([cache.load(['main'], fetchTree), cache.load(['main'], fetchTree)]);
    expect(a).toBe(b);
    expect(await cache.load(['main'], fetchTree)).toBe(a);
    expect(cache.get(['main'])).toBe(a);
    expect(fetches).toBe(1);
  });

  it('forgets a failed fetch so the next zoom asks again', async () => {
    const cache = new FocusCache(tree('all'));
    await expect(cache.load(['gone'], () => Promise.reject(new Error('404')))).rejects.toThrow('404');
    expect(cache.get(['gone'])).toBeUndefined();
    const again = tree('gone');
    expect(await cache.load(['gone'], async () => again)).toBe(again);
  });

  it('drops the least recently used focus beyond its capacity, never the unfocused tree', async () => {
    const unfocused = tree('all');
    const cache = new FocusCache(unfocused, 2);
    await cache.load(['a'], async () => tree('a'));
    await cache.load(['b'], async () => tree('b'));
    cache.get(['a']); // a is now the most recent
    await cache.load(['c'], async () => tree('c'));
    expect(cache.size).toBe(2);
    expect(cache.get(['b'])).toBeUndefined();
    expect(cache.get(['a'])).toBeDefined();
    expect(cache.get(['c'])).toBeDefined();
    expect(cache.get([])).toBe(unfocused);
  });
});
