import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { flatten, type FlameNode } from '../src/flame/layout';
import { setSourceUrlTemplate, sourceText, sourceUrl, sourceUrlTemplate } from '../src/settings';
import { frameMenu, viewSource } from '../src/widgets/framemenu';

/** localStorage as the browser keeps it (the tests run in node). */
function memoryStorage(): Storage {
  const items = new Map<string, string>();
  return {
    get length() {
      return items.size;
    },
    clear: () => items.clear(),
    getItem: (k) => items.get(k) ?? null,
    key: (i) => [...items.keys()][i] ?? null,
    removeItem: (k) => void items.delete(k),
    setItem: (k, v) => void items.set(k, String(v)),
  };
}

const GITHUB = 'https://github.com/org/repo/blob/main/{file}#L{line}';

describe('source URL templates', () => {
  it('fill in the file and line', () => {
    expect(sourceUrl({ file: 'app/hot_python.py', line: 15 }, GITHUB)).toBe('https://github.com/org/repo/blob/main/app/hot_python.py#L15');
    expect(sourceUrl({ file: 'a.py', line: 3 }, 'https://src/{file}?l={line}&again={file}')).toBe('https://src/a.py?l=3&again=a.py');
  });

  it('encode each path segment and drop a leading slash, leaving an unknown line empty', () => {
    expect(sourceUrl({ file: '/srv/my app/x#1.py', line: 2 }, GITHUB)).toBe('https://github.com/org/repo/blob/main/srv/my%20app/x%231.py#L2');
    expect(sourceUrl({ file: '<frozen site>', line: null }, 'https://src/{file}#L{line}')).toBe('https://src/%3Cfrozen%20site%3E#L');
  });

  it('give no link without a template', () => {
    expect(sourceUrl({ file: 'a.py', line: 1 }, '')).toBeNull();
    expect(sourceUrl({ file: 'a.py', line: 1 }, '   ')).toBeNull();
  });

  it('write a location as file:line, or the file alone', () => {
    expect(sourceText({ file: 'hot_python.py', line: 15 })).toBe('hot_python.py:15');
    expect(sourceText({ file: 'hot_python.py' })).toBe('hot_python.py');
  });
});

describe('"View source" in the frame menu', () => {
  beforeEach(() => vi.stubGlobal('localStorage', memoryStorage()));
  afterEach(() => vi.unstubAllGlobals());

  it('opens the template link of a frame with a file, showing file:line', () => {
    const item = viewSource('crunch_numbers', { file: 'hot_python.py', line: 15 }, GITHUB);
    expect(item).toEqual({ label: 'View source hot_python.py:15', href: 'https://github.com/org/repo/blob/main/hot_python.py#L15' });
  });

  it('copies file:line without a template', () => {
    const item = viewSource('crunch_numbers', { file: 'hot_python.py', line: 15 }, '');
    expect(item.label).toBe('View source hot_python.py:15');
    expect(item.href).toBeUndefined();
    expect(item.copy).toEqual({ text: 'hot_python.py:15', what: 'source location' });
    expect(item.title).toMatch(/Settings/);
  });

  it('searches code for the name of a frame without a file', () => {
    const item = viewSource('demo_hot', undefined, GITHUB);
    expect(item).toEqual({ label: 'View source', href: 'https://github.com/search?type=code&q=demo_hot' });
  });

  it('follows the template kept in the settings', () => {
    const menu = frameMenu([]);
    const source = { file: 'hot_python.py', line: 15 };
    expect(menu('crunch_numbers', ['main', 'crunch_numbers'], source)[0].copy?.text).toBe('hot_python.py:15');
    setSourceUrlTemplate(`  ${GITHUB} `);
    expect(sourceUrlTemplate()).toBe(GITHUB);
    expect(menu('crunch_numbers', ['main', 'crunch_numbers'], source)[0].href).toBe(
      'https://github.com/org/repo/blob/main/hot_python.py#L15',
    );
    setSourceUrlTemplate('');
    expect(sourceUrlTemplate()).toBe('');
  });
});

describe('flattened flame graphs', () => {
  const node = (name: string, children: FlameNode[], file?: string, line?: number): FlameNode => ({
    name,
    total: children.reduce((s, c) => s + c.total, 0) || 1,
    self_count: children.length ? 0 : 1,
    children,
    ...(file ? { file, line } : {}),
  });

  it("keep each node's file and line where the API sent them", () => {
    // A py-spy profile: <module> and crunch_numbers have files, the root
    // and a native frame do not.
    const root = node('all', [node('<module>', [node('crunch_numbers', [], 'hot_python.py', 15), node('memcpy', [])], 'hot_python.py', 41)]);
    const tree = flatten(root);
    const at = (name: string) => tree.names.indexOf(name);
    expect(tree.sources?.[at('<module>')]).toEqual({ file: 'hot_python.py', line: 41 });
    expect(tree.sources?.[at('crunch_numbers')]).toEqual({ file: 'hot_python.py', line: 15 });
    expect(tree.sources?.[at('memcpy')]).toBeUndefined();
    expect(tree.sources?.[at('all')]).toBeUndefined();
  });

  it('carry no sources when no node has a file', () => {
    expect(flatten(node('all', [node('main', [])])).sources).toBeUndefined();
  });
});
