// Panels beside a flame graph: the hot-leaf table, detected issues, the
// timeline of samples per window and the target's runtime.

import { ApiError, get, type Issue, type ProfileView, type Schemas, type TopFunction } from '../api';
import { h, notice, pct, when } from '../format';
import { growthPoints, regressionDetail, regressionSummary, runtimeMatchText, type RegressionDetail } from '../rulefmt';
import { executableText, librariesByKind, optionsText, runtimeTitle } from '../runtimefmt';

type SortKey = 'function' | 'self_share' | 'total_share';

/** Sortable top-functions table; clicking a row calls `onPick`. */
export function hotLeafTable(functions: TopFunction[], onPick: (fn: string | null) => void): HTMLElement {
  let key: SortKey = 'self_share';
  let descending = true;
  let picked: string | null = null;
  const body = h('tbody', {});
  const draw = () => {
    const rows = functions.slice().sort((a, b) => {
      const c = key === 'function' ? a.function.localeCompare(b.function) : a[key] - b[key];
      return descending ? -c : c;
    });
    body.replaceChildren(
      ...rows.map((f) =>
        h(
          'tr',
          {
            class: f.function === picked ? 'picked' : '',
            'data-function': f.function,
            onclick: () => {
              picked = picked === f.function ? null : f.function;
              onPick(picked);
              draw();
            },
          },
          h('td', { class: 'fn', title: f.function }, f.function),
          h('td', { class: 'num' }, `${pct(f.self_share)} ± ${pct(f.self_share_stderr)}`),
          h('td', { class: 'num' }, pct(f.total_share)),
          h('td', { class: 'num' }, String(f.self_samples)),
        ),
      ),
    );
  };
  const header = (label: string, k: SortKey) =>
    h(
      'th',
      {
        class: 'sortable',
        'data-sort': k,
        onclick: () => {
          descending = key === k ? !descending : k !== 'function';
          key = k;
          draw();
        },
      },
      label,
    );
  draw();
  return h(
    'table',
    { class: 'grid hot-leaves', id: 'hot-leaves' },
    h(
      'thead',
      {},
      h('tr', {}, header('function', 'function'), header('self', 'self_share'), header('total', 'total_share'), h('th', {}, 'samples')),
    ),
    body,
  );
}

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

export function issuesPanel(issues: Issue[]): HTMLElement {
  if (!issues.length) return notice('info', 'No known issue detected in this profile.');
  return h(
    'ul',
    { class: 'issues', id: 'issues' },
    ...issues.map((i) => {
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
        h('p', {}, i.explanation),
        h('p', {}, h('i', {}, 'Suggestion: '), i.fix),
        i.link ? h('a', { href: i.link, target: '_blank', rel: 'noopener' }, 'More') : null,
      );
    }),
  );
}

/** A window's bar height: samples stand for 1/f s each at f Hz, so windows
 *  FDA sampled at different rates compare by time, not by raw count. */
export function timelineWeight(w: { samples: number; frequency_hz: number }): number {
  return w.frequency_hz > 0 ? w.samples / w.frequency_hz : w.samples;
}

/** Bars per window, as time sampled (FDA may change the frequency between
 *  windows), labelled with the frequency used. Says so when the server has
 *  no timeline. */
export async function timelinePanel(profileId: string): Promise<HTMLElement> {
  let windows: Schemas['TimelineWindow'][];
  try {
    windows = (await get<Schemas['TimelineJson']>(`/api/v1/profiles/${profileId}/timeline`)).windows;
  } catch (err) {
    if (err instanceof ApiError && err.status === 404)
      return notice('info', `Timeline not available on this server (${err.message}).`);
    return notice('error', (err as Error).message);
  }
  if (!windows.length) return notice('info', 'No windows stored yet.');
  const max = Math.max(...windows.map(timelineWeight), Number.MIN_VALUE);
  return h(
    'div',
    { class: 'timeline', id: 'timeline' },
    ...windows.map((w) =>
      h(
        'div',
        {
          class: 'tl-bar',
          title:
            `${w.host} ${when(w.window_start)} – ${when(w.window_end)}: ${w.samples} ${w.event} samples at ${w.frequency_hz} Hz` +
            (w.frequency_hz > 0 ? ` (${timelineWeight(w).toFixed(2)} s sampled)` : ''),
        },
        h('div', { class: 'tl-fill', style: `height:${Math.max(2, (timelineWeight(w) / max) * 80)}px` }),
        h('div', { class: 'tl-label' }, `${w.frequency_hz} Hz`),
      ),
    ),
  );
}

/** What the start asked for and what the agent found the target runs:
 *  runtime and version, executable and build id, flags, libraries (folded,
 *  there may be hundreds). */
export function runtimePanel(profile: ProfileView): HTMLElement {
  const r = profile.runtime;
  const title = runtimeTitle(r);
  const flags = r?.runtime?.flags ?? [];
  const groups = librariesByKind(r);
  const count = groups.reduce((n, [, libs]) => n + libs.length, 0);
  return h(
    'details',
    { class: 'runtime', id: 'runtime' },
    h('summary', {}, title ? `Runtime: ${title}` : 'Runtime: not reported yet', ` · options: ${optionsText(profile.options)}`),
    executableText(r) ? h('p', {}, h('i', {}, 'Executable: '), executableText(r)!) : null,
    flags.length ? h('p', { class: 'flags' }, h('i', {}, 'Flags: '), h('code', {}, flags.join(' '))) : null,
    count
      ? h(
          'div',
          { class: 'libraries' },
          h('i', {}, `Libraries (${count}${r?.runtime?.libraries_truncated ? ', cut at the agent\'s limit' : ''}):`),
          ...groups.map(([kind, libs]) => h('p', {}, h('b', {}, `${kind}: `), libs.join(', '))),
        )
      : null,
  );
}
