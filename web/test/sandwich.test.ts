import { describe, expect, it } from 'vitest';
import { flatten, type FlameNode } from '../src/flame/layout';
import { functionTotals, outermostOccurrences, sandwich } from '../src/flame/sandwich';

const leaf = (name: string, total: number): FlameNode => ({ name, total, self_count: total, children: [] });
const node = (name: string, children: FlameNode[], self = 0): FlameNode => ({
  name,
  total: children.reduce((s, c) => s + c.total, 0) + self,
  self_count: self,
  children,
});

/** A node's child by name, for reading expected shapes. */
const kid = (n: FlameNode, name: string) => n.children!.find((c) => c.name === name)!;
const shape = (n: FlameNode): unknown => [n.name, n.total, n.self_count, ...(n.children ?? []).map(shape)];

// all(100)
//   main(100)
//     handle(70) → parse(40) → memcpy(10), log(30) → memcpy(20), 
//     idle(20) → memcpy(5), (self 15)
//     memcpy(10)
const tree = flatten(
  node('all', [
    node('main', [
      node('handle', [node('parse', [leaf('memcpy', 10)], 30), node('log', [leaf('memcpy', 20)], 10)]),
      node('idle', [leaf('memcpy', 5)], 15),
      leaf('memcpy', 10),
    ]),
  ]),
);

describe('sandwich', () => {
  it('merges every call of a leaf: callers inverted above, no callees', () => {
    const s = sandwich(tree, 'memcpy')!;
    expect(s.occurrences).toBe(4);
    expect(s.total).toBe(45);
    expect(s.self).toBe(45);
    // Callers: memcpy ← parse ← handle ← main, ← log ← handle ← main,
    // ← idle ← main, ← main.
    expect(s.callers.total).toBe(45);
    expect(s.callers.children!.map((c) => [c.name, c.total])).toEqual([
      ['idle', 5],
      ['log', 20],
      ['main', 10],
      ['parse', 10],
    ]);
    expect(shape(kid(s.callers, 'parse'))).toEqual(['parse', 10, 0, ['handle', 10, 0, ['main', 10, 10]]]);
    // The stacks end at main, the outermost caller below the root.
    expect(kid(s.callers, 'main').self_count).toBe(10);
    expect(shape(s.callees)).toEqual(['memcpy', 45, 45]);
  });

  it('merges the callees of a function called from several places', () => {
    const twice = flatten(
      node('all', [
        node('a', [node('f', [leaf('x', 3), leaf('y', 1)], 2)]),
        node('b', [node('f', [leaf('x', 4), node('z', [leaf('x', 1)])])]),
      ]),
    );
    const s = sandwich(twice, 'f')!;
    expect(s.total).toBe(6 + 5);
    expect(s.self).toBe(2);
    expect(shape(s.callees)).toEqual(['f', 11, 2, ['x', 7, 7], ['y', 1, 1], ['z', 1, 0, ['x', 1, 1]]]);
    expect(shape(s.callers)).toEqual(['f', 11, 0, ['a', 6, 6], ['b', 5, 5]]);
  });

  it('counts a recursive function once per stack, its inner calls among the callees', () => {
    // all → main → f(10) → g(10) → f(6) → h(6)
    const rec = flatten(node('all', [node('main', [node('f', [node('g', [node('f', [leaf('h', 6)])], 4)])])]));
    expect(outermostOccurrences(rec, 'f')).toHaveLength(1);
    const s = sandwich(rec, 'f')!;
    expect(s.total).toBe(10);
    expect(shape(s.callees)).toEqual(['f', 10, 0, ['g', 10, 4, ['f', 6, 0, ['h', 6, 6]]]]);
    expect(shape(s.callers)).toEqual(['f', 10, 0, ['main', 10, 10]]);
  });

  it('has no callers for a child of the root, and keeps other boxes among the callees', () => {
    const cut = flatten(
      node('all', [node('main', [leaf('a', 5), { name: 'other', total: 3, self_count: 3, merged: 2, children: [] }])]),
    );
    const s = sandwich(cut, 'main')!;
    expect(shape(s.callers)).toEqual(['main', 8, 8]);
    expect(s.callees.children!.map((c) => [c.name, c.total, c.merged ?? 0])).toEqual([
      ['a', 5, 0],
      ['other', 3, 2],
    ]);
    // `other` is not a function.
    expect(sandwich(cut, 'other')).toBeNull();
    expect(sandwich(cut, 'nope')).toBeNull();
  });

  it("names each merged node's smallest file and line, as the server does", () => {
    const at = (n: FlameNode, file: string, line?: number): FlameNode => ({ ...n, file, line });
    // A Python profile: work called from two places, at lines 12 and 9 of
    // app.py, calling hash at one line; run has no line.
    const located = flatten(
      node('all', [
        at(node('main', [at(node('work', [at(leaf('hash', 3), 'app.py', 30)]), 'app.py', 12)]), 'app.py', 40),
        at(node('serve', [at(node('work', [at(leaf('hash', 2), 'app.py', 31)]), 'app.py', 9)]), 'srv.py', 5),
        at(leaf('run', 1), 'threading.py'),
      ]),
    );
    const s = sandwich(located, 'work')!;
    expect([s.callers.file, s.callers.line]).toEqual(['app.py', 9]);
    expect([kid(s.callers, 'main').file, kid(s.callers, 'main').line]).toEqual(['app.py', 40]);
    expect([kid(s.callers, 'serve').file, kid(s.callers, 'serve').line]).toEqual(['srv.py', 5]);
    expect([s.callees.file, s.callees.line]).toEqual(['app.py', 9]);
    expect([kid(s.callees, 'hash').file, kid(s.callees, 'hash').line]).toEqual(['app.py', 30]);
    // Back through the layout, as the sandwich's graphs get them.
    const callees = flatten(s.callees);
    expect(callees.sources?.[callees.names.indexOf('hash')]).toEqual({ file: 'app.py', line: 30 });
    expect(sandwich(located, 'run')!.callees.file).toBe('threading.py');
    // Without files, nodes name none.
    expect(sandwich(tree, 'memcpy')!.callers.file).toBeUndefined();
  });

  it('takes deep stacks without recursion overflowing', () => {
    let deep: FlameNode = leaf('leaf', 1);
    for (let i = 0; i < 20_000; i++) deep = node(i % 2 ? 'even' : 'odd', [deep]);
    const s = sandwich(flatten(node('all', [deep])), 'leaf')!;
    expect(s.total).toBe(1);
    expect(s.occurrences).toBe(1);
  });
});

describe('function totals', () => {
  it('sums self over every occurrence and total once per stack', () => {
    const rows = functionTotals(tree);
    expect(rows[0]).toEqual({ function: 'memcpy', self: 45, total: 45 });
    const byName = Object.fromEntries(rows.map((r) => [r.function, r]));
    expect(byName.main).toEqual({ function: 'main', self: 0, total: 100 });
    expect(byName.parse).toEqual({ function: 'parse', self: 30, total: 40 });
    expect(byName.idle).toEqual({ function: 'idle', self: 15, total: 20 });
    expect(byName.all).toBeUndefined();
  });

  it('does not count recursion twice and leaves other boxes out', () => {
    const rec = flatten(
      node('all', [node('f', [node('g', [node('f', [leaf('h', 6)])], 4), { name: 'other', total: 2, self_count: 2, merged: 3, children: [] }])]),
    );
    const byName = Object.fromEntries(functionTotals(rec).map((r) => [r.function, r]));
    expect(byName.f.total).toBe(12);
    expect(byName.g.total).toBe(10);
    expect(byName.h).toEqual({ function: 'h', self: 6, total: 6 });
    expect(byName.other).toBeUndefined();
  });
});
