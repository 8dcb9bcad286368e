// What the detection rules found, as the profile and run pages list it.

import type { Issue } from '../api';
import { h, notice } from '../format';
import { growthPoints, regressionDetail, regressionSummary, runtimeMatchText, type RegressionDetail } from '../rulefmt';

/** A regression's grown functions (self share now, the previous runs'
 *  mean, growth in points) and the rules hit for the first time. */
function regressionParts(d: RegressionDetail): Array<HTMLElement | null> {
  return [
    d.functions.length
      ? h(
          'table',
          { class: 'grid regression-functions' },
          h('thead', {}, h('tr', {}, ...['grown function', 'self share', 'previous mean', 'growth'].map((t) => h('th', {}, t)))),
          h(
            'tbody',
            {},
            ...d.functions.map((f) =>
              h(
                'tr',
                { 'data-function': f.function },
                h('td', { class: 'fn', title: f.function }, f.function),
                h('td', { class: 'num' }, `${f.share_pct.toFixed(1)}%`),
                h('td', { class: 'num' }, `${f.baseline_pct.toFixed(1)}%`),
                h('td', { class: 'num' }, growthPoints(f.growth_points)),
              ),
            ),
          ),
        )
      : null,
    d.new_rules.length
      ? h(
          'p',
          { class: 'new-rules' },
          'New since the previous runs: ',
          ...d.new_rules.map((id) => h('a', { class: 'chip', href: '#/rules', 'data-rule': id }, id)),
        )
      : null,
  ];
}

/** What the detection rules found: a profile's issues, or a run's (with
 *  `extra` adding the hosts where each is highest). */
export function issuesPanel(
  issues: Issue[],
  empty = 'No known issue detected in this profile.',
  extra: (issue: Issue, index: number) => HTMLElement | null = () => null,
): HTMLElement {
  if (!issues.length) return notice('info', empty);
  return h(
    'ul',
    { class: 'issues', id: 'issues' },
    ...issues.map((i, index) => {
      // `share` is a percentage of samples, or for a regression its growth
      // in points.
      const regression = i.kind === 'share_regression' ? regressionDetail(i.detail) : null;
      // Library and runtime rules match the whole profile: what they found
      // says more than a share that is always 100%.
      const runtime = runtimeMatchText(i.kind, i.detail);
      return h(
        'li',
        { 'data-rule': i.rule_id, 'data-kind': i.kind },
        h('b', {}, i.title),
        regression
          ? ` — ${regressionSummary(i.share, regression)} (threshold ${i.threshold_pct} points)`
          : runtime
            ? ` — ${runtime}`
            : ` — ${i.share.toFixed(2)}% of samples (threshold ${i.threshold_pct}%)`,
        ...(regression ? regressionParts(regression) : []),
        extra(i, index),
        h('p', {}, i.explanation),
        h('p', {}, h('i', {}, 'Suggestion: '), i.fix),
        i.link ? h('a', { href: i.link, target: '_blank', rel: 'noopener' }, 'More') : null,
      );
    }),
  );
}
