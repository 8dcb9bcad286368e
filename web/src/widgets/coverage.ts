// A profile's or an aggregate's sample coverage: the samples against what
// the targets earned, and a warning when too many are missing.

import { coverageText, coverageWarning, type SampleCoverage } from '../coveragefmt';
import { h, notice } from '../format';

/** The coverage line and its warning, with ids `${prefix}-coverage` and
 *  `${prefix}-coverage-warning` (the profile page and the aggregate page
 *  show the same). */
export function coverageBlock(c: SampleCoverage, prefix: string): HTMLElement {
  const measured = c.expected !== null && c.expected !== undefined;
  const warningText = coverageWarning(c);
  const warning = warningText ? notice('warning', warningText) : null;
  if (warning) warning.id = `${prefix}-coverage-warning`;
  return h(
    'div',
    { class: 'coverage', id: prefix === 'profile' ? 'coverage' : `${prefix}-coverage-block` },
    h(
      'p',
      {
        class: 'muted',
        id: `${prefix}-coverage`,
        title: measured
          ? "Expected: the samples the targets' CPU time earned at the sampling rate."
          : "No expected count: these samples do not follow CPU time.",
      },
      `Coverage: ${coverageText(c)}`,
    ),
    warning,
  );
}
