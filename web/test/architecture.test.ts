import ts from 'typescript';
import { describe, expect, it } from 'vitest';

// The shape of web/src: one folder per feature (its views), shared code in
// widgets/, flame/ and the top-level modules. A feature imports shared code
// only, never another feature; shared code imports no feature; only main.ts,
// which routes to the features' views, imports them all. No module imports
// itself through others (type-only imports count: they couple as much).

const SRC = new URL('../src/', import.meta.url).pathname;
/** Folders of src every feature may import; every other folder is a feature. */
const SHARED_FOLDERS = new Set(['widgets', 'flame']);
/** The module that may import features. */
const APP = 'main.ts';

/** Modules (paths under src) and the modules each imports. */
type Graph = Map<string, string[]>;

/** The module a relative import names, as a path under src; null for what
 *  is not a module (the stylesheet). */
function resolve(from: string, specifier: string): string | null {
  const target = new URL(specifier, `file://${SRC}${from}`).pathname;
  if (ts.sys.fileExists(target)) return target.endsWith('.ts') ? target.slice(SRC.length) : null;
  for (const file of [`${target}.ts`, `${target}/index.ts`]) if (ts.sys.fileExists(file)) return file.slice(SRC.length);
  throw new Error(`${from}: cannot resolve import '${specifier}'`);
}

/** Every module of src with the modules it imports (static, re-exported,
 *  type-only and dynamic imports; packages are left out). */
function sourceGraph(): Graph {
  const graph: Graph = new Map();
  for (const file of ts.sys.readDirectory(SRC, ['.ts']).sort()) {
    const module = file.slice(SRC.length);
    const { importedFiles } = ts.preProcessFile(ts.sys.readFile(file)!, true, true);
    const imports = importedFiles
      .map((f) => f.fileName)
      .filter((specifier) => specifier.startsWith('.'))
      .map((specifier) => resolve(module, specifier))
      .filter((m): m is string => m !== null);
    graph.set(module, [...new Set(imports)]);
  }
  return graph;
}

/** The feature a module belongs to, or null for shared code. */
function featureOf(module: string): string | null {
  const parts = module.split('/');
  return parts.length > 1 && !SHARED_FOLDERS.has(parts[0]) ? parts[0] : null;
}

/** Imports of a feature by another feature or by shared code. */
function featureViolations(graph: Graph): string[] {
  const violations: string[] = [];
  for (const [from, imports] of graph) {
    if (from === APP) continue;
    for (const to of imports) {
      const feature = featureOf(to);
      if (feature !== null && feature !== featureOf(from)) violations.push(`${from} → ${to}`);
    }
  }
  return violations;
}

/** The import cycles: each strongly connected component of more than one
 *  module, or of one that imports itself (Tarjan's algorithm). */
function importCycles(graph: Graph): string[][] {
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const cycles: string[][] = [];
  const visit = (module: string) => {
    index.set(module, index.size);
    low.set(module, index.get(module)!);
    stack.push(module);
    onStack.add(module);
    for (const next of graph.get(module) ?? []) {
      if (!index.has(next)) {
        visit(next);
        low.set(module, Math.min(low.get(module)!, low.get(next)!));
      } else if (onStack.has(next)) {
        low.set(module, Math.min(low.get(module)!, index.get(next)!));
      }
    }
    if (low.get(module) !== index.get(module)) return;
    const component: string[] = [];
    let member: string;
    do {
      member = stack.pop()!;
      onStack.delete(member);
      component.push(member);
    } while (member !== module);
    if (component.length > 1 || graph.get(module)?.includes(module)) cycles.push(component.sort());
  };
  for (const module of graph.keys()) if (!index.has(module)) visit(module);
  return cycles;
}

describe('the checks themselves', () => {
  const graph: Graph = new Map([
    ['main.ts', ['runs/runs.ts', 'profiles/profiles.ts']],
    ['format.ts', []],
    ['widgets/panel.ts', ['format.ts', 'runs/runs.ts']],
    ['profiles/profiles.ts', ['profiles/profile.ts', 'widgets/panel.ts']],
    ['profiles/profile.ts', ['runs/run.ts', 'profiles/profiles.ts']],
    ['runs/runs.ts', ['format.ts']],
    ['runs/run.ts', ['runs/run.ts']],
  ]);

  it('find a feature imported by another feature or by shared code, not by main.ts or itself', () => {
    expect(featureViolations(graph)).toEqual(['widgets/panel.ts → runs/runs.ts', 'profiles/profile.ts → runs/run.ts']);
  });

  it('find each import cycle, a module importing itself included', () => {
    expect(importCycles(graph)).toEqual([['runs/run.ts'], ['profiles/profile.ts', 'profiles/profiles.ts']]);
  });
});

describe('web/src', () => {
  const graph = sourceGraph();

  it('is read whole: main.ts imports the features it routes to', () => {
    expect(graph.get(APP)).toEqual(expect.arrayContaining(['profiles/profiles.ts', 'runs/run.ts']));
    expect(new Set([...graph.keys()].map(featureOf))).toEqual(
      new Set([null, 'aggregate', 'channels', 'compare', 'hosts', 'profiles', 'rules', 'runs', 'schedules', 'services']),
    );
  });

  it('has no feature importing another feature', () => {
    expect(featureViolations(graph), 'move what several features share to widgets/').toEqual([]);
  });

  it('has no import cycle', () => {
    expect(importCycles(graph)).toEqual([]);
  });
});
