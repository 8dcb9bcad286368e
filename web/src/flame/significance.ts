// Whether a change between two profiles is more than sampling noise. Each
// side's share of a function is a binomial proportion over that side's
// samples, so its standard error is sqrt(p(1-p)/n); the change's is the
// two combined (independent sides). A change is coloured by how many of
// its standard errors it spans (z), not by its sign alone: a small change
// in a small profile stays grey, the same change in a large one does not.
// The diff API reports each listed change's standard error
// (`delta_total_stderr_points`) and whether it is significant
// (`significant`, 3σ or more), which the changes table uses as given; the
// graph's nodes, which the API gives shares and counts only, get theirs
// computed here the same way, as the hot-leaf table's ± is. Pure.

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
  /** The diff API's verdict (its `significant`), where it gave one. */
  significant?: boolean;
}

export function change(baselineShare: number, baselineSamples: number, targetShare: number, targetSamples: number): Change {
  const delta = targetShare - baselineShare;
  const stderr = Math.hypot(shareStderr(baselineShare, baselineSamples), shareStderr(targetShare, targetSamples));
  const z = delta === 0 ? 0 : stderr > 0 ? delta / stderr : delta > 0 ? Infinity : -Infinity;
  return { delta, stderr, z };
}

/** One listed change of the diff API: its delta, standard error and
 *  significance as the server computed them, or, from a server that did
 *  not report them, computed here from the shares and the sides' samples. */
export function reportedChange(
  c: {
    baseline_total_share: number;
    target_total_share: number;
    delta_total_points: number;
    delta_total_stderr_points?: number | null;
    significant?: boolean;
  },
  baselineSamples: number,
  targetSamples: number,
): Change {
  const significant = c.significant;
  if (c.delta_total_stderr_points == null) {
    return { ...change(c.baseline_total_share, baselineSamples, c.target_total_share, targetSamples), significant };
  }
  const delta = c.delta_total_points / 100;
  const stderr = c.delta_total_stderr_points / 100;
  const z = delta === 0 ? 0 : stderr > 0 ? delta / stderr : delta > 0 ? Infinity : -Infinity;
  return { delta, stderr, z, significant };
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

/** How sure a change is: the API's verdict decides `significant` where it
 *  gave one (a change it does not call significant is at most `likely`,
 *  the UI's paler tier between 2 and 3σ); else its z alone. */
export function changeSignificance(c: Change): Significance {
  const fromZ = significance(c.z);
  if (c.significant === undefined) return fromZ;
  if (c.significant) return 'significant';
  return fromZ === 'noise' ? 'noise' : 'likely';
}

/** The table's class of a change: `grew`/`shrank` with how sure, or
 *  `noise`. */
export function changeClass(c: Change): string {
  const s = changeSignificance(c);
  return s === 'noise' ? 'noise' : `${c.delta > 0 ? 'grew' : 'shrank'} ${s}`;
}

/**
 * The fill of a diff frame: hue by sign (red grew, blue shrank), strength
 * by size (up to the graph's largest change, `maxAbs`) once the change is
 * past noise; a change inside ±2σ is neutral grey. `dark` picks lightness
 * for a dark background (labels are drawn light there).
 */
export function significanceColor(c: Change, maxAbs: number, dark = false): string {
  const s = changeSignificance(c);
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
