// The arithmetic of a function's trend chart (`/services/{name}/trend`):
// the series it draws, scales, round ticks on values and on time, SVG
// paths that leave steps without windows as gaps, the ±2 standard error
// band, the step under the pointer and the texts of axes and tooltip.
// Pure, so it unit-tests; aggregate/trendpanel.ts draws with it.

import type { Schemas } from './api';

export type TrendPoint = Schemas['TrendPoint'];
export type TrendResponse = Schemas['TrendResponse'];

/** Standard errors either side of a value the band spans (about 95 %). */
export const BAND_ERRORS = 2;

/** A value per step, null where the step has no samples (a gap). */
export type Values = Array<number | null>;

/** What the chart draws of a trend: x at each step's middle (Unix ms). */
export interface TrendSeries {
  x: number[];
  /** Shares (0..1), and the band around them clamped to 0..1. */
  share: Values;
  shareLow: Values;
  shareHigh: Values;
  /** Cores for CPU time, else the function's samples per second. */
  rate: Values;
  /** The band around the rate, null where no standard error is known. */
  rateLow: Values;
  rateHigh: Values;
  rateKind: RateKind;
}

export type RateKind = 'cores' | 'samples/s';

/** The rate a trend of `event` draws: cores for CPU time (cpu-clock
 *  samples are CPU nanoseconds), else samples per second. */
export function rateKind(event: TrendResponse['event']): RateKind {
  return event === 'cpu-clock' ? 'cores' : 'samples/s';
}

/** No window in the whole range: nothing to draw. */
export function isEmptyTrend(points: TrendPoint[]): boolean {
  return points.every((p) => p.windows === 0);
}

/** Whether a step has samples (one without leaves a gap). */
function filled(p: TrendPoint): boolean {
  return typeof p.share === 'number' && p.samples > 0;
}

const clamp01 = (v: number) => Math.min(1, Math.max(0, v));

export function trendSeries(trend: Pick<TrendResponse, 'event' | 'points'>): TrendSeries {
  const kind = rateKind(trend.event);
  const series: TrendSeries = { x: [], share: [], shareLow: [], shareHigh: [], rate: [], rateLow: [], rateHigh: [], rateKind: kind };
  for (const p of trend.points) {
    series.x.push((p.start_ms + p.end_ms) / 2);
    if (!filled(p)) {
      for (const v of [series.share, series.shareLow, series.shareHigh, series.rate, series.rateLow, series.rateHigh]) v.push(null);
      continue;
    }
    const share = p.share as number;
    const shareError = BAND_ERRORS * (p.share_stderr ?? 0);
    series.share.push(share);
    series.shareLow.push(clamp01(share - shareError));
    series.shareHigh.push(clamp01(share + shareError));
    const rate = kind === 'cores' ? p.cores ?? 0 : p.samples_per_second;
    const rateError = kind === 'cores' && typeof p.cores_stderr === 'number' ? BAND_ERRORS * p.cores_stderr : null;
    series.rate.push(rate);
    series.rateLow.push(rateError === null ? null : Math.max(0, rate - rateError));
    series.rateHigh.push(rateError === null ? null : rate + rateError);
  }
  return series;
}

/** Maps `domain` onto `range` linearly (a flat domain to the range's
 *  middle). */
export function linearScale([d0, d1]: [number, number], [r0, r1]: [number, number]): (v: number) => number {
  const span = d1 - d0;
  return (v) => (span === 0 ? (r0 + r1) / 2 : r0 + ((v - d0) / span) * (r1 - r0));
}

/** Removes the float noise of adding steps (0.30000000000000004). */
const tidy = (v: number) => Number(v.toPrecision(12));

/** Round values from below `min` to above `max`, in steps of 1, 2 or 5
 *  times a power of ten, about `count` steps; the last is the axis top.
 *  An empty span (all zero) gets the axis 0..1. */
export function niceTicks(min: number, max: number, count = 4): number[] {
  if (!(max > min)) max = min + 1;
  const raw = (max - min) / count;
  const power = 10 ** Math.floor(Math.log10(raw));
  const step = [1, 2, 5, 10].map((m) => m * power).find((s) => s >= raw * (1 - 1e-9)) as number;
  const first = Math.floor(tidy(min / step)) * step;
  const steps = Math.ceil(tidy((max - first) / step));
  return Array.from({ length: steps + 1 }, (_, i) => tidy(first + i * step));
}

/** Digits after the point that tell `ticks` apart. */
export function tickDigits(ticks: number[]): number {
  const step = ticks.length > 1 ? ticks[1] - ticks[0] : 1;
  return Math.max(0, -Math.floor(Math.log10(step) + 1e-9));
}

const SECOND = 1000;
const MINUTE = 60 * SECOND;
const HOUR = 60 * MINUTE;
const DAY = 24 * HOUR;

/** Spacings of time ticks, each a whole number of the next smaller. */
const TIME_STEPS = [
  10 * SECOND, 30 * SECOND, MINUTE, 2 * MINUTE, 5 * MINUTE, 10 * MINUTE, 15 * MINUTE, 30 * MINUTE,
  HOUR, 2 * HOUR, 3 * HOUR, 6 * HOUR, 12 * HOUR, DAY, 2 * DAY, 7 * DAY,
];

/** Time ticks inside [start, end] (Unix ms) on round UTC times, at most
 *  `count` of them, and their spacing. */
export function timeTicks(start: number, end: number, count = 6): { ticks: number[]; step: number } {
  const span = Math.max(end - start, 1);
  const step = TIME_STEPS.find((s) => span / s <= count) ?? Math.ceil(span / count / DAY) * DAY;
  const ticks: number[] = [];
  for (let t = Math.ceil(start / step) * step; t <= end; t += step) ticks.push(t);
  return { ticks, step };
}

const pad = (n: number) => String(n).padStart(2, '0');

/** A time tick's label (UTC): the date at midnight or for day steps,
 *  else the time of day, with seconds for steps under a minute. */
export function timeTickText(ms: number, step: number): string {
  const d = new Date(ms);
  if (step >= DAY || ms % DAY === 0) return `${pad(d.getUTCMonth() + 1)}-${pad(d.getUTCDate())}`;
  const time = `${pad(d.getUTCHours())}:${pad(d.getUTCMinutes())}`;
  return step < MINUTE ? `${time}:${pad(d.getUTCSeconds())}` : time;
}

/** `15 min`, `1 h`, `30 s`, `1 day`: a step's length. */
export function stepText(secs: number): string {
  if (secs % 86_400 === 0) return secs === 86_400 ? '1 day' : `${secs / 86_400} days`;
  if (secs % 3600 === 0) return `${secs / 3600} h`;
  if (secs % 60 === 0) return `${secs / 60} min`;
  return `${secs} s`;
}

const coord = (v: number) => String(Math.round(v * 10) / 10);

/** Runs of consecutive steps with a value: [first index, last index]. */
export function filledRuns(values: Values): Array<[number, number]> {
  const runs: Array<[number, number]> = [];
  values.forEach((v, i) => {
    if (v === null) return;
    const last = runs[runs.length - 1];
    if (last && last[1] === i - 1) last[1] = i;
    else runs.push([i, i]);
  });
  return runs;
}

/** An SVG path through the steps' (x, y), broken at each gap: one
 *  subpath per run of steps with a value (a lone step is a dot, drawn
 *  apart). */
export function linePath(xs: number[], ys: Values): string {
  return filledRuns(ys)
    .map(([from, to]) => {
      const at = (i: number) => `${coord(xs[i])} ${coord(ys[i] as number)}`;
      const rest = Array.from({ length: to - from }, (_, k) => ` L ${at(from + k + 1)}`).join('');
      return `M ${at(from)}${rest}`;
    })
    .join(' ');
}

/** An SVG path filling between `lows` and `highs` (y of each step), one
 *  closed shape per run of steps with both; a lone step is a bar
 *  `halfWidth` either side of its x. */
export function bandPath(xs: number[], lows: Values, highs: Values, halfWidth: number): string {
  const both: Values = lows.map((v, i) => (v === null || highs[i] === null ? null : v));
  return filledRuns(both)
    .map(([from, to]) => {
      const high = (i: number) => `${coord(xs[i])} ${coord(highs[i] as number)}`;
      const low = (i: number) => `${coord(xs[i])} ${coord(lows[i] as number)}`;
      if (from === to) {
        const [left, right] = [xs[from] - halfWidth, xs[from] + halfWidth].map(coord);
        const [top, bottom] = [highs[from] as number, lows[from] as number].map(coord);
        return `M ${left} ${top} L ${right} ${top} L ${right} ${bottom} L ${left} ${bottom} Z`;
      }
      const upper: string[] = [];
      const lower: string[] = [];
      for (let i = from; i <= to; i++) upper.push(high(i));
      for (let i = to; i >= from; i--) lower.push(low(i));
      return `M ${[...upper, ...lower].join(' L ')} Z`;
    })
    .join(' ');
}

/** The step whose x is nearest `x` (-1 without steps). */
export function nearestStep(xs: number[], x: number): number {
  let best = -1;
  for (let i = 0; i < xs.length; i++) if (best < 0 || Math.abs(xs[i] - x) < Math.abs(xs[best] - x)) best = i;
  return best;
}

/** `0.61`, `12.3`, `140`: a rate with three significant digits at most
 *  (no exponent). */
export function rateText(v: number): string {
  if (v === 0) return '0';
  const digits = Math.max(0, 2 - Math.floor(Math.log10(Math.abs(v))));
  return String(Number(v.toFixed(Math.min(digits, 6))));
}

const percent = (share: number) => `${(share * 100).toFixed(1)}%`;

/** The tooltip of a step: its time, the share and rate with one standard
 *  error, its samples, windows and hosts; a gap says so. */
export function pointLines(p: TrendPoint, kind: RateKind): string[] {
  // Seconds only for steps off whole minutes (10 s and 30 s steps).
  const length = p.start_ms % MINUTE || p.end_ms % MINUTE ? 19 : 16;
  const iso = (ms: number) => new Date(ms).toISOString().slice(0, length);
  const head = `${iso(p.start_ms).replace('T', ' ')} – ${iso(p.end_ms).slice(11)} UTC`;
  if (!filled(p)) return [head, 'no windows stored'];
  const rate =
    kind === 'cores'
      ? `cores ${rateText(p.cores ?? 0)}${typeof p.cores_stderr === 'number' ? ` ± ${rateText(p.cores_stderr)}` : ''}`
      : `samples/s ${rateText(p.samples_per_second)}`;
  return [
    head,
    `share ${percent(p.share as number)} ± ${percent(p.share_stderr ?? 0)}`,
    rate,
    `samples ${p.matched} of ${p.samples}`,
    `${p.hosts} ${p.hosts === 1 ? 'host' : 'hosts'}, ${p.windows} ${p.windows === 1 ? 'window' : 'windows'}`,
  ];
}

/** The regex of exactly one frame name (a flame graph's frame, a table's
 *  function): anchored, its metacharacters escaped. */
export function frameRegex(name: string): string {
  return `^${name.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}$`;
}
