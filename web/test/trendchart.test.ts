import { describe, expect, it } from 'vitest';
import {
  bandPath,
  filledRuns,
  frameRegex,
  isEmptyTrend,
  linearScale,
  linePath,
  nearestStep,
  niceTicks,
  pointLines,
  rateKind,
  rateText,
  stepText,
  tickDigits,
  timeTicks,
  timeTickText,
  trendSeries,
  type TrendPoint,
} from '../src/trendchart';

const T0 = Date.UTC(2026, 10, 28, 12, 0, 0);
const MIN = 60_000;

/** A step of `samples` samples, `matched` of them the function's. */
function point(i: number, samples: number, matched: number, extra: Partial<TrendPoint> = {}): TrendPoint {
  const share = samples ? matched / samples : null;
  return {
    start_ms: T0 + i * 15 * MIN,
    end_ms: T0 + (i + 1) * 15 * MIN,
    windows: samples ? 3 : 0,
    hosts: samples ? 2 : 0,
    samples,
    matched,
    share,
    share_stderr: share === null ? null : Math.sqrt((share * (1 - share)) / samples),
    samples_per_second: matched / 900,
    cores: matched / 900 / 100,
    cores_stderr: samples ? 0.01 : 0,
    ...extra,
  };
}

describe('trend series', () => {
  it('draws cores for CPU time and samples per second for other events', () => {
    expect(rateKind('cpu-clock')).toBe('cores');
    expect(rateKind('wall')).toBe('samples/s');
    expect(rateKind(null)).toBe('samples/s');
  });

  it('puts each step at its middle, leaves a step without samples as a gap and clamps the band to 0..1', () => {
    const s = trendSeries({ event: 'cpu-clock', points: [point(0, 100, 60), point(1, 0, 0), point(2, 4, 4, { share_stderr: 0.1 })] });
    expect(s.x).toEqual([T0 + 7.5 * MIN, T0 + 22.5 * MIN, T0 + 37.5 * MIN]);
    expect(s.share).toEqual([0.6, null, 1]);
    const e = Math.sqrt(0.24 / 100);
    expect(s.shareLow[0]).toBeCloseTo(0.6 - 2 * e, 12);
    expect(s.shareHigh[0]).toBeCloseTo(0.6 + 2 * e, 12);
    expect([s.shareLow[1], s.shareHigh[1]]).toEqual([null, null]);
    expect([s.shareLow[2], s.shareHigh[2]]).toEqual([0.8, 1]);
    // Cores ± 2 × 0.01, none below zero; the gap has no rate (not 0).
    expect(s.rate).toEqual([60 / 900 / 100, null, 4 / 900 / 100]);
    expect(s.rateHigh[0]).toBeCloseTo(60 / 900 / 100 + 0.02, 12);
    expect(s.rateLow[0]).toBe(0);
    expect(s.rateKind).toBe('cores');
  });

  it('has no rate band for samples per second', () => {
    const s = trendSeries({ event: 'wall', points: [point(0, 100, 30, { cores: null, cores_stderr: null })] });
    expect(s.rate).toEqual([30 / 900]);
    expect([s.rateLow, s.rateHigh]).toEqual([[null], [null]]);
  });

  it('is empty when no step has a window', () => {
    expect(isEmptyTrend([point(0, 0, 0), point(1, 0, 0)])).toBe(true);
    expect(isEmptyTrend([])).toBe(true);
    expect(isEmptyTrend([point(0, 0, 0), point(1, 10, 0)])).toBe(false);
  });
});

describe('scales and ticks', () => {
  it('maps a domain onto a range, reversed ranges too, and a flat domain to the middle', () => {
    const y = linearScale([0, 50], [200, 0]);
    expect([y(0), y(25), y(50)]).toEqual([200, 100, 0]);
    expect(linearScale([3, 3], [0, 10])(3)).toBe(5);
  });

  it('chooses round ticks of 1, 2 or 5 times a power of ten that cover the values', () => {
    expect(niceTicks(0, 62)).toEqual([0, 20, 40, 60, 80]);
    expect(niceTicks(0, 95)).toEqual([0, 50, 100]);
    expect(niceTicks(0, 0.3)).toEqual([0, 0.1, 0.2, 0.3]);
    expect(niceTicks(0, 0.013)).toEqual([0, 0.005, 0.01, 0.015]);
    expect(niceTicks(0, 0)).toEqual([0, 0.5, 1]);
  });

  it('gives tick labels the digits that tell them apart', () => {
    expect(tickDigits([0, 20, 40])).toBe(0);
    expect(tickDigits([0, 0.5, 1])).toBe(1);
    expect(tickDigits([0, 0.005, 0.01])).toBe(3);
  });

  it('puts time ticks on round UTC times, at most `count` of them', () => {
    const day = timeTicks(T0 - 24 * 60 * MIN + 7 * MIN, T0 + 7 * MIN);
    expect(day.step).toBe(6 * 60 * MIN);
    expect(day.ticks.map((t) => timeTickText(t, day.step))).toEqual(['18:00', '11-28', '06:00', '12:00']);
    const minutes = timeTicks(T0 + 20_000, T0 + 2 * MIN);
    expect(minutes.step).toBe(30_000);
    expect(minutes.ticks.map((t) => timeTickText(t, minutes.step))).toEqual(['12:00:30', '12:01:00', '12:01:30', '12:02:00']);
    const month = timeTicks(T0, T0 + 30 * 24 * 60 * MIN);
    expect(month.step).toBe(7 * 24 * 60 * MIN);
    expect(timeTickText(month.ticks[0], month.step)).toMatch(/^\d\d-\d\d$/);
  });

  it('names a step', () => {
    expect([stepText(10), stepText(900), stepText(3600), stepText(6 * 3600), stepText(86_400), stepText(7 * 86_400)]).toEqual([
      '10 s',
      '15 min',
      '1 h',
      '6 h',
      '1 day',
      '7 days',
    ]);
  });
});

describe('paths with gaps', () => {
  const xs = [0, 10, 20, 30, 40, 50];

  it('finds the runs of steps with a value', () => {
    expect(filledRuns([1, 2, null, 3, null, null])).toEqual([
      [0, 1],
      [3, 3],
    ]);
    expect(filledRuns([null, null])).toEqual([]);
  });

  it('breaks the line at each gap', () => {
    expect(linePath(xs, [5, 6.25, null, 7, 8, null])).toBe('M 0 5 L 10 6.3 M 30 7 L 40 8');
    expect(linePath(xs, [null, null, null, null, null, null])).toBe('');
  });

  it('closes one band shape per run, and draws a lone step as a bar', () => {
    const lows = [4, 5, null, 6, null, null];
    const highs = [6, 7, null, 9, null, null];
    expect(bandPath(xs, lows, highs, 2)).toBe('M 0 6 L 10 7 L 10 5 L 0 4 Z M 28 9 L 32 9 L 32 6 L 28 6 Z');
  });

  it('finds the step nearest the pointer', () => {
    expect(nearestStep(xs, 14)).toBe(1);
    expect(nearestStep(xs, 16)).toBe(2);
    expect(nearestStep(xs, 99)).toBe(5);
    expect(nearestStep([], 3)).toBe(-1);
  });
});

describe('texts', () => {
  it('writes rates with three significant digits at most', () => {
    expect([rateText(0), rateText(0.6123), rateText(12.34), rateText(140.2), rateText(0.000412)]).toEqual([
      '0',
      '0.612',
      '12.3',
      '140',
      '0.000412',
    ]);
  });

  it('tells a step: its time, share and cores with one standard error, samples, hosts and windows', () => {
    expect(pointLines(point(0, 400, 240, { cores_stderr: 0.0123 }), 'cores')).toEqual([
      '2026-11-28 12:00 – 12:15 UTC',
      'share 60.0% ± 2.4%',
      'cores 0.00267 ± 0.0123',
      'samples 240 of 400',
      '2 hosts, 3 windows',
    ]);
    expect(pointLines(point(1, 0, 0), 'cores')).toEqual(['2026-11-28 12:15 – 12:30 UTC', 'no windows stored']);
    const tenSeconds = point(0, 10, 1, { start_ms: T0 + 10_000, end_ms: T0 + 20_000, hosts: 1, windows: 1 });
    expect(pointLines(tenSeconds, 'samples/s')).toEqual([
      '2026-11-28 12:00:10 – 12:00:20 UTC',
      'share 10.0% ± 9.5%',
      'samples/s 0.00111',
      'samples 1 of 10',
      '1 host, 1 window',
    ]);
  });

  it('makes a regex of exactly one frame name', () => {
    expect(frameRegex('demo_hot')).toBe('^demo_hot$');
    const name = 'std::vector<int>::push_back(int const&) [clone .isra.0]';
    const re = new RegExp(frameRegex(name));
    expect(re.test(name)).toBe(true);
    expect(re.test(`x${name}`)).toBe(false);
    expect(frameRegex('a.b*c$')).toBe('^a\\.b\\*c\\$$');
  });
});
