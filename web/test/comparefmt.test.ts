import { describe, expect, it } from 'vitest';
import { flipSides, presetRange, sideQuery, strataCompareQuery } from '../src/comparefmt';

const now = new Date('2026-03-10T12:00:00Z');

describe('compare address', () => {
  it('turns presets into ranges ending now', () => {
    expect(presetRange('1h', now)).toEqual({ since: '2026-03-10T11:00:00.000Z', until: '2026-03-10T12:00:00.000Z' });
    expect(presetRange('24h', now)?.since).toBe('2026-03-09T12:00:00.000Z');
    expect(presetRange('7d', now)?.since).toBe('2026-03-03T12:00:00.000Z');
    expect(presetRange('', now)).toBeNull();
    expect(presetRange('2y', now)).toBeNull();
  });

  it('builds each side as a profile, a preset range or dates', () => {
    const q = new URLSearchParams('baseline=abc&target_service=checkout&target_range=1h&target_since=2026-01-01T00:00');
    expect(sideQuery(q, 'baseline', now)).toEqual({ baseline: 'abc' });
    expect(sideQuery(q, 'target', now)).toEqual({
      target_service: 'checkout',
      target_since: '2026-03-10T11:00:00.000Z',
      target_until: '2026-03-10T12:00:00.000Z',
    });
    const dates = new URLSearchParams('baseline_service=s&baseline_since=2026-01-01T00:00&baseline_until=2026-01-02T00:00');
    expect(sideQuery(dates, 'baseline', now)).toEqual({
      baseline_service: 's',
      baseline_since: '2026-01-01T00:00:00.000Z',
      baseline_until: '2026-01-02T00:00:00.000Z',
    });
    expect(sideQuery(new URLSearchParams(), 'target', now)).toEqual({});
  });

  it('takes a run, or one stratum of its hosts, as a side', () => {
    const q = new URLSearchParams('baseline_run=r1&baseline_labels=zone:a&target_run=r1&target_labels=zone:b&target_service=ignored');
    expect(sideQuery(q, 'baseline', now)).toEqual({ baseline_run: 'r1', baseline_labels: 'zone:a' });
    expect(sideQuery(q, 'target', now)).toEqual({ target_run: 'r1', target_labels: 'zone:b' });
    expect(sideQuery(new URLSearchParams('target_run=r2'), 'target', now)).toEqual({ target_run: 'r2' });
    expect(strataCompareQuery('r1', { zone: 'a', version: 'v1' }, { version: 'v2', zone: 'a' })).toEqual({
      baseline_run: 'r1',
      baseline_labels: 'version:v1,zone:a',
      target_run: 'r1',
      target_labels: 'version:v2,zone:a',
    });
    // Flipping swaps the runs' strata too.
    expect(flipSides(new URLSearchParams('baseline_run=r&baseline_labels=zone:a&target_run=r&target_labels=zone:b')).toString()).toBe(
      'target_run=r&target_labels=zone%3Aa&baseline_run=r&baseline_labels=zone%3Ab',
    );
  });

  it('flips baseline and target, keeping the rest', () => {
    const q = new URLSearchParams('baseline=a&target_service=s&target_range=24h&include=x&zoom=main');
    expect(flipSides(q).toString()).toBe('target=a&baseline_service=s&baseline_range=24h&include=x&zoom=main');
    expect(flipSides(flipSides(q)).toString()).toBe(
      new URLSearchParams('baseline=a&target_service=s&target_range=24h&include=x&zoom=main').toString(),
    );
  });
});
