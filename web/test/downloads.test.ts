import { describe, expect, it } from 'vitest';
import { DOWNLOAD_FORMATS, downloadName, downloadUrl } from '../src/widgets/downloads';

describe('downloads', () => {
  it('offers the four formats the stack routes render', () => {
    expect(DOWNLOAD_FORMATS.map((f) => f.format)).toEqual(['svg', 'pprof', 'speedscope', 'folded']);
  });

  it("asks for the view's stacks with its filters, not its JSON budget or focus", () => {
    expect(
      downloadUrl('/api/v1/profiles/p1/flamegraph', { include: 'demo_warm', exclude: '', max_nodes: '8192', focus: 'main' }, 'pprof'),
    ).toBe('/api/v1/profiles/p1/flamegraph?include=demo_warm&format=pprof');
    expect(downloadUrl('/api/v1/aggregate', { service: 'x', since: '2026-01-01T00:00:00.000Z' }, 'svg')).toBe(
      '/api/v1/aggregate?service=x&since=2026-01-01T00%3A00%3A00.000Z&format=svg',
    );
  });

  it('asks for SVGs the way up the screen draws them', () => {
    expect(downloadUrl('/api/v1/profiles/p1/flamegraph', {}, 'svg', 'icicle')).toBe(
      '/api/v1/profiles/p1/flamegraph?format=svg&orientation=icicle',
    );
    expect(downloadUrl('/api/v1/profiles/p1/flamegraph', {}, 'pprof', 'icicle')).toBe(
      '/api/v1/profiles/p1/flamegraph?format=pprof',
    );
    expect(downloadUrl('/api/v1/diff', { a: '1' }, 'svg')).toBe('/api/v1/diff?a=1&format=svg');
  });

  it('names files by the view and the format', () => {
    expect(downloadName('profile-p1', 'svg')).toBe('profile-p1.svg');
    expect(downloadName('profile-p1', 'pprof')).toBe('profile-p1.pb.gz');
    expect(downloadName('aggregate-x', 'speedscope')).toBe('aggregate-x.speedscope.json');
    expect(downloadName('aggregate-x', 'folded')).toBe('aggregate-x.folded.txt');
  });
});
