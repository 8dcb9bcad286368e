// Whether a change between two profiles is more than sampling noise. Each
// side's share of a function is a binomial proportion over that side's
// samples, so its standard error is sqrt(p(1-p)/n); the change's is the
// two combined (independent sides). A change is coloured by how many of
// its standard errors it spans (z), not by its sign alone: a small change
// in a small profile stays grey, the same change in a large one does not.
// (The diff API reports shares and sample counts, not error bounds, so
// they are computed here, as the hot-leaf table's ± is.) Pure.

/** One binomial standard error of a share `p` of `n` samples. */
export function shareStderr(p: number, n: number): number {
  return n > 0 ? Math.sqrt(Math.max(p * (1 - p), 0) / n) : 0;
}

export interface Change {
  /** target − baseline share (fractions, not points). */
  delta: number;
  /** One standard error of `delta`. */
  stderr: number;
  /** delta / stderr; ±Infinity when exact (no error), 0 for no change. */
  z: number;
}

export function change(baselineShare: number, baselineSamples: number, targetShare: number, targetSamples: number): Change {
  const delta = targetShare - baselineShare;
  const stderr = Math.hypot(shareStderr(baselineShare, baselineSamples), shareStderr(targetShare, targetSamples));
  const z = delta === 0 ? 0 : stderr > 0 ? delta / stderr : delta > 0 ? Infinity : -Infinity;
  return { delta, stderr, z };
}

/** How sure a change is: below 2 standard errors it is noise (about 95 %
 *  of pure-noise changes stay inside ±2σ), from 3 it is clear. */
export type Significance = 'noise' | 'likely' | 'significant';

export const LIKELY_Z = 2;
export const SIGNIFICANT_Z = 3;

export function significance(z: number): Significance {
  const a = Math.abs(z);
  return a >= SIGNIFICANT_Z ? 'significant' : a >= LIKELY_Z ? 'likely' : 'noise';
}

/** The table's class of a change: `grew`/`shrank` with how sure, or
 *  `noise`. */
export function changeClass(c: Change): string {
  const s = significance(c.z);
  return s === 'noise' ? 'noise' : `${c.delta > 0 ? 'grew' : 'shrank'} ${s}`;
}

/**
 * The fill of a diff frame: hue by sign (red grew, blue shrank), strength
 * by size (up to the graph's largest change, `maxAbs`) once the change is
 * past noise; a change inside ±2σ is neutral grey. `dark` picks lightness
 * for a dark background (labels are drawn light there).
 */
export function significanceColor(c: Change, maxAbs: number, dark = false): string {
  const s = significance(c.z);
  if (s === 'noise') return dark ? 'hsl(220, 6%, 30%)' : 'hsl(220, 6%, 90%)';
  const size = maxAbs > 0 ? Math.min(1, Math.abs(c.delta) / maxAbs) : 1;
  // 'likely' stays paler than 'significant' of the same size.
  const t = s === 'significant' ? 0.35 + 0.65 * size : 0.15 + 0.35 * size;
  const hue = c.delta > 0 ? 0 : 220;
  const light = dark ? Math.round(24 + 22 * t) : Math.round(92 - 32 * t);
  return `hsl(${hue}, ${dark ? 65 : 80}%, ${light}%)`;
}

/** `+1.25 ± 0.40 pts` (points of total share). */
export function changeText(c: Change): string {
  const sign = c.delta >= 0 ? '+' : '−';
  return `${sign}${Math.abs(c.delta * 100).toFixed(2)} ± ${(c.stderr * 100).toFixed(2)} pts`;
}
