// How the profile view words a profile's sample coverage: the samples its
// target earned (CPU time × rate), those stored, those lost and why. A
// profile without an expected count (wall, off-CPU, Python, JVM) only says
// what it holds: with nothing to compare against, a percentage would lie.
// No DOM here, so it unit-tests.

import { pct } from './format';
import type { Schemas } from './api';

export type SampleCoverage = Schemas['SampleCoverage'];
export type LostSamples = Schemas['LostSamples'];
export type TimelineWindow = Schemas['TimelineWindow'];

/** More missing than this share of expected is flagged (the server warns
 *  about profiles past the same line). */
export const MISSING_WARNING_SHARE = 0.02;

/** Each reason samples are lost, in plain words, in the server's order. */
export const LOSS_REASONS: ReadonlyArray<readonly [keyof LostSamples, string]> = [
  ['overflow', 'lost by the sampler (full ring buffers, failed reads)'],
  ['throttled', 'throttled by the kernel'],
  ['paused', 'paused by cost control'],
  ['undiscovered', 'before the agent found the process'],
  ['transport', "dropped by the agent's spool"],
];

/** "150 paused by cost control", one per reason with samples lost. */
export function lostParts(lost: LostSamples | null | undefined): string[] {
  if (!lost) return [];
  return LOSS_REASONS.filter(([key]) => lost[key] > 0).map(([key, words]) => `${lost[key]} ${words}`);
}

function lostTotal(lost: LostSamples | null | undefined): number {
  return lost ? LOSS_REASONS.reduce((n, [key]) => n + lost[key], 0) : 0;
}

/** All samples a coverage reports lost, whatever the reason. */
export function lostSamples(c: SampleCoverage): number {
  return lostTotal(c.lost);
}

/** "captured 800 of 1000 expected (80.0%)"; "800 samples" without an
 *  expected count. The share is the server's (1 − missing_share), which
 *  counts only windows that measured their CPU time; a target that earned
 *  nothing (expected 0) gets no share. */
export function capturedText(c: SampleCoverage): string {
  if (c.expected === null || c.expected === undefined) return `${c.captured} samples`;
  const share = typeof c.missing_share === 'number' ? ` (${pct(1 - c.missing_share)})` : '';
  return `captured ${c.captured} of ${c.expected} expected${share}`;
}

/** The parts of the coverage line: what was captured, what was lost by
 *  reason, and, with an expected count, the gap no reason explains. */
export function coverageParts(c: SampleCoverage): string[] {
  const parts = [capturedText(c), ...lostParts(c.lost)];
  // Small negative gaps are sampling noise, not samples found.
  if (c.expected !== null && c.expected !== undefined && (c.unaccounted ?? 0) > 0)
    parts.push(`${c.unaccounted} unaccounted`);
  return parts;
}

/** "captured 800 of 1000 expected (80.0%) · 150 paused by cost control". */
export function coverageText(c: SampleCoverage): string {
  return coverageParts(c).join(' · ');
}

/** The server's warning, shown as one when more than 2% of expected is
 *  missing; null when there is none (or it is blank). */
export function coverageWarning(c: SampleCoverage | null | undefined): string | null {
  const text = c?.warning?.trim();
  return text ? text : null;
}

/** The share of a window's expected samples it lacks; null when the window
 *  has no expected count (or earned nothing). */
export function windowMissingShare(w: Pick<TimelineWindow, 'expected' | 'samples'>): number | null {
  if (typeof w.expected !== 'number' || w.expected <= 0) return null;
  return Math.max(0, (w.expected - w.samples) / w.expected);
}

/** Whether a window captured less than its expected samples by more than
 *  the warning line. */
export function windowIsShort(w: Pick<TimelineWindow, 'expected' | 'samples'>): boolean {
  return (windowMissingShare(w) ?? 0) > MISSING_WARNING_SHARE;
}

/** A window's coverage for its tooltip: "captured 80 of 100 expected
 *  (80.0%); 15 paused by cost control, 5 unaccounted"; lost samples only
 *  without an expected count; null when there is nothing to say. */
export function windowCoverageText(w: Pick<TimelineWindow, 'expected' | 'samples' | 'lost'>): string | null {
  const lost = lostParts(w.lost);
  const missing = windowMissingShare(w);
  if (missing === null) return lost.length ? lost.join(', ') : null;
  const unaccounted = (w.expected as number) - w.samples - lostTotal(w.lost);
  if (unaccounted > 0) lost.push(`${unaccounted} unaccounted`);
  const head = `captured ${w.samples} of ${w.expected} expected (${pct(1 - missing)})`;
  return lost.length ? `${head}; ${lost.join(', ')}` : head;
}
