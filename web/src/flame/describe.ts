// The tooltip of a flame graph box: samples (or time) and share with its
// error for a profile, both sides and the change with its ± for a diff.

import { escapeHtml, pct } from '../format';
import { amount, isTimed, wholeOf, type SampleUnit } from '../units';
import { isMerged } from './focus';
import { shareOf, type FlatTree } from './layout';
import { change, changeSignificance, changeText, shareStderr, type Change } from './significance';

export interface DescribeContext {
  kind: 'samples' | 'diff';
  /** Samples behind the shares (a diff: the target's). */
  samples: number;
  /** A diff's baseline samples. */
  baselineSamples?: number;
  unit?: SampleUnit;
  /** The weight shares are of (a sandwich's: the whole profile's, not its
   *  root's); the tree's root when absent. */
  whole?: number;
  /** Whether a click on this (`other`) box fetches frames not shown. */
  opens: boolean;
}

/** A diff node's change: its layout weight is the mean of both sides'
 *  shares and its delta their difference, so each side's share follows. */
export function diffChange(tree: FlatTree, n: number, baselineSamples: number, targetSamples: number): Change {
  const mean = tree.total[n];
  const d = tree.delta[n];
  return change(mean - d / 2, baselineSamples, mean + d / 2, targetSamples);
}

const SIGNIFICANCE_TEXT = {
  noise: 'within sampling noise (under 2σ)',
  likely: 'likely real (2–3σ)',
  significant: 'significant (3σ or more)',
};

function shareOfWhole(weight: number, whole: number, samples: number): { share: number; stderr: number } {
  const share = whole > 0 ? weight / whole : 0;
  return { share, stderr: shareStderr(share, samples) };
}

export function describeNode(tree: FlatTree, n: number, ctx: DescribeContext): string {
  const name = escapeHtml(tree.names[n]);
  if (ctx.kind === 'diff') {
    const b = tree.sides?.baseline[n] ?? 0;
    const t = tree.sides?.target[n] ?? 0;
    const c = diffChange(tree, n, ctx.baselineSamples ?? 0, ctx.samples);
    return `<b>${name}</b><br>baseline ${b} samples · target ${t} samples<br>` +
      `change ${changeText(c)} of total share: ${SIGNIFICANCE_TEXT[changeSignificance(c)]}`;
  }
  const { share, stderr } = ctx.whole
    ? shareOfWhole(tree.total[n], ctx.whole, ctx.samples)
    : shareOf(tree, n, ctx.samples);
  const unit = ctx.unit ?? {};
  const whole = wholeOf(unit);
  const total = isTimed(unit) ? `${amount(tree.total[n], unit)} (${tree.total[n]} samples)` : `${tree.total[n]} samples`;
  if (isMerged(tree, n)) {
    const frames = tree.merged[n] === 1 ? '1 smaller frame' : `${tree.merged[n]} smaller frames`;
    return `<b>${name}</b>: ${frames} merged${ctx.opens ? '; click to open' : ''}<br>` +
      `${total}<br>${pct(share, 2)} ± ${pct(stderr, 2)} of ${whole}`;
  }
  const line = isTimed(unit)
    ? `${amount(tree.total[n], unit)} (${amount(tree.self[n], unit)} self, ${tree.total[n]} samples)`
    : `${tree.total[n]} samples (${tree.self[n]} self)`;
  return `<b>${name}</b><br>${line}<br>` + `${pct(share, 2)} ± ${pct(stderr, 2)} of ${whole}`;
}
