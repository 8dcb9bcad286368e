import { describe, expect, it } from 'vitest';
import {
  ancestry,
  diffColor,
  findByName,
  flatten,
  flattenDiff,
  hitTest,
  layout,
  maxAbsDelta,
  parsePattern,
  search,
  shareOf,
  type DiffNode,
  type FlameNode,
} from '../src/flame/layout';

// all(100) → main(100) → { demo_hot(60) → memcpy(20), demo_warm(30), demo_cool(10) }
const profile: FlameNode = {
  name: 'all',
  total: 100,
  self_count: 0,
  children: [
    {
      name: 'main',
      total: 100,
      self_count: 0,
      children: [
        { name: 'demo_hot', total: 60, self_count: 40, children: [{ name: 'memcpy', total: 20, self_count: 20, children: [] }] },
        { name: 'demo_warm', total: 30, self_count: 30, children: [] },
        { name: 'demo_cool', total: 10, self_count: 10, children: [] },
      ],
    },
  ],
};

describe('flatten', () => {
  it('orders nodes pre-order with subtree sizes, depths and left edges', () => {
    const t = flatten(profile);
    expect(t.names).toEqual(['all', 'main', 'demo_hot', 'memcpy', 'demo_warm', 'demo_cool']);
    expect(Array.from(t.size)).toEqual([6, 5, 2, 1, 1, 1]);
    expect(Array.from(t.depth)).toEqual([0, 1, 2, 3, 2, 2]);
    expect(Array.from(t.parent)).toEqual([-1, 0, 1, 2, 1, 1]);
    expect(Array.from(t.start)).toEqual([0, 0, 0, 0, 60, 90]);
    expect(t.maxDepth).toBe(3);
  });

  it('handles stacks deeper than the JS call stack allows recursively', () => {
    let node: FlameNode = { name: 'leaf', total: 1, self_count: 1, children: [] };
    for (let d = 0; d < 50_000; d++) node = { name: `f${d}`, total: 1, self_count: 0, children: [node] };
    const t = flatten(node);
    expect(t.count).toBe(50_001);
    expect(t.maxDepth).toBe(50_000);
    expect(t.size[0]).toBe(50_001);
  });
});

describe('layout', () => {
  it('scales the root to the full width', () => {
    const t = flatten(profile);
    const l = layout(t, 0, 1000);
    expect(l.rows[0]).toEqual({ nodes: [0], x: [0], w: [1000] });
    expect(l.rows[2].nodes.map((n) => t.names[n])).toEqual(['demo_hot', 'demo_warm', 'demo_cool']);
    expect(l.rows[2].x).toEqual([0, 600, 900]);
    expect(l.rows[2].w).toEqual([600, 300, 100]);
    expect(l.drawn).toBe(6);
  });

  it('zooming makes the frame fill the width and keeps ancestors full width', () => {
    const t = flatten(profile);
    const warm = findByName(t, 'demo_warm');
    const l = layout(t, warm, 900);
    expect(l.rows[0].w).toEqual([900]);
    expect(l.rows[1].w).toEqual([900]);
    expect(l.rows[2]).toEqual({ nodes: [warm], x: [0], w: [900] });
    // Siblings of the zoomed frame and deeper rows are not drawn.
    expect(l.rows.length).toBe(3);
  });

  it('zooming on a frame not at the left edge offsets its children to 0', () => {
    const t = flatten(profile);
    const hot = findByName(t, 'demo_hot');
    const l = layout(t, hot, 300);
    expect(l.rows[3].x).toEqual([0]);
    expect(l.rows[3].w[0]).toBeCloseTo(100);
  });

  it('prunes frames narrower than the minimum width with their subtrees', () => {
    const t = flatten(profile);
    const l = layout(t, 0, 40, 5);
    // demo_cool is 4 px, memcpy 8 px, demo_warm 12 px.
    const names = l.rows.flatMap((r) => r.nodes.map((n) => t.names[n]));
    expect(names).not.toContain('demo_cool');
    expect(names).toContain('memcpy');
    expect(l.drawn).toBe(5);
  });
});

// A tree cut to a node budget, as the server sends it: `other` nodes carry
// `merged` and the exact total of the children they stand for.
// all(100) → main(100) → { handle(60) → { parse(45), other(15, 4 merged) },
//                          idle(25), other(15, 2 merged) }
const cut: FlameNode = {
  name: 'all',
  total: 100,
  self_count: 0,
  children: [
    {
      name: 'main',
      total: 100,
      self_count: 0,
      children: [
        {
          name: 'handle',
          total: 60,
          self_count: 0,
          children: [
            { name: 'parse', total: 45, self_count: 45, children: [] },
            { name: 'other', total: 15, self_count: 15, merged: 4, children: [] },
          ],
        },
        { name: 'idle', total: 25, self_count: 25, children: [] },
        { name: 'other', total: 15, self_count: 15, merged: 2, children: [] },
      ],
    },
  ],
};

const diffLeaf: DiffNode = {
  name: 'leaf',
  baseline_total: 1,
  baseline_self: 1,
  target_total: 1,
  target_self: 1,
  baseline_share: 1,
  target_share: 1,
  children: [],
};

describe('other nodes', () => {
  it('keep how many frames they merged; real frames have 0', () => {
    const t = flatten(cut);
    expect(t.names).toEqual(['all', 'main', 'handle', 'parse', 'other', 'idle', 'other']);
    expect(Array.from(t.merged)).toEqual([0, 0, 0, 0, 4, 0, 2]);
    expect(Array.from(flattenDiff({ ...diffLeaf, children: [diffLeaf] }).merged)).toEqual([0, 0]);
  });

  it('are laid out by their totals, so widths stay proportional', () => {
    const t = flatten(cut);
    const l = layout(t, 0, 1000);
    expect(l.rows[2].nodes.map((n) => t.names[n])).toEqual(['handle', 'idle', 'other']);
    expect(l.rows[2].x).toEqual([0, 600, 850]);
    expect(l.rows[2].w).toEqual([600, 250, 150]);
    expect(l.rows[3].w).toEqual([450, 150]);
    // Children (no self time) fill their parent exactly.
    expect(l.rows[3].w.reduce((a, b) => a + b, 0)).toBe(l.rows[2].w[0]);
    expect(t.merged[hitTest(l, 900, 2)]).toBe(2);
    expect(t.merged[hitTest(l, 500, 3)]).toBe(4);
  });

  it('scale with their parent when it is zoomed', () => {
    const t = flatten(cut);
    const handle = findByName(t, 'handle');
    const l = layout(t, handle, 600);
    expect(l.rows[3].x).toEqual([0, 450]);
    expect(l.rows[3].w).toEqual([450, 150]);
  });

  it('never match a search: their frames are not known here', () => {
    const t = flatten(cut);
    const r = search(t, /other|parse/);
    expect(r.matchCount).toBe(1);
    expect(r.share).toBeCloseTo(0.45);
  });
});

describe('hitTest', () => {
  it('finds the frame under a pixel by binary search, or -1 in gaps', () => {
    const t = flatten(profile);
    const l = layout(t, 0, 1000);
    expect(t.names[hitTest(l, 0, 2)]).toBe('demo_hot');
    expect(t.names[hitTest(l, 599.9, 2)]).toBe('demo_hot');
    expect(t.names[hitTest(l, 600, 2)]).toBe('demo_warm');
    expect(t.names[hitTest(l, 950, 2)]).toBe('demo_cool');
    expect(hitTest(l, 700, 3)).toBe(-1); // nothing above demo_warm
    expect(hitTest(l, 10, 9)).toBe(-1);
    expect(hitTest(l, -1, 0)).toBe(-1);
  });
});

describe('search and shares', () => {
  it('highlights matches and counts nested matches once', () => {
    const t = flatten(profile);
    const r = search(t, /demo_|memcpy/);
    expect(r.matchCount).toBe(4);
    expect(r.share).toBeCloseTo(1.0); // memcpy sits inside demo_hot
    expect(Array.from(r.matched)).toEqual([0, 0, 1, 1, 1, 1]);
    expect(search(t, /warm|cool/).share).toBeCloseTo(0.4);
    expect(search(t, /nothing/).share).toBe(0);
  });

  it('a global regex does not skip matches through lastIndex', () => {
    const t = flatten(profile);
    expect(search(t, /demo/g).matchCount).toBe(3);
  });

  it('reports bad patterns instead of throwing', () => {
    expect(parsePattern('demo_(')).toEqual(expect.any(String));
    expect(parsePattern('demo_.*')).toBeInstanceOf(RegExp);
  });

  it('computes share with the binomial standard error', () => {
    const t = flatten(profile);
    const { share, stderr } = shareOf(t, findByName(t, 'demo_hot'), 100);
    expect(share).toBeCloseTo(0.6);
    expect(stderr).toBeCloseTo(Math.sqrt(0.24 / 100));
  });

  it('gives the ancestry root first', () => {
    const t = flatten(profile);
    expect(ancestry(t, findByName(t, 'memcpy')).map((n) => t.names[n])).toEqual([
      'all',
      'main',
      'demo_hot',
      'memcpy',
    ]);
  });
});

describe('diff layout', () => {
  const node = (name: string, b: number, tg: number, children: DiffNode[] = []): DiffNode => ({
    name,
    baseline_total: b * 10,
    baseline_self: 0,
    target_total: tg * 10,
    target_self: 0,
    baseline_share: b,
    target_share: tg,
    children,
  });
  const diff = node('all', 1, 1, [node('grew', 0.2, 0.6), node('shrank', 0.5, 0.1), node('gone', 0.3, 0)]);

  it('weights by the mean share so vanished frames stay visible', () => {
    const t = flattenDiff(diff);
    const l = layout(t, 0, 1000);
    expect(l.rows[1].nodes.map((n) => t.names[n])).toEqual(['grew', 'shrank', 'gone']);
    expect(l.rows[1].w[0]).toBeCloseTo(400);
    expect(l.rows[1].w[2]).toBeCloseTo(150);
  });

  it('colours growth red and shrinkage blue, saturating at the largest change', () => {
    const t = flattenDiff(diff);
    expect(maxAbsDelta(t)).toBeCloseTo(0.4);
    expect(diffColor(0.4, 0.4)).toBe('hsl(0, 80%, 50%)');
    expect(diffColor(-0.4, 0.4)).toBe('hsl(220, 80%, 50%)');
    expect(diffColor(0, 0.4)).toBe('hsl(0, 80%, 95%)');
  });
});
