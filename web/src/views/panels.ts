// Panels beside a flame graph: the hot-leaf table, detected issues, the
// timeline of samples per window, the profile's sample coverage and the
// target's runtime.

import { ApiError, get, LIVE_STATUSES, type Issue, type ProfileView, type Schemas, type TopFunction } from '../api';
import type { FunctionTotals } from '../flame/sandwich';
import { coverageText, coverageWarning, MISSING_WARNING_SHARE, type SampleCoverage, windowCoverageText, windowIsShort } from '../coveragefmt';
import { isImported } from '../profilefmt';
import { h, notice, pct, when } from '../format';
import { growthPoints, regressionDetail, regressionSummary, runtimeMatchText, type RegressionDetail } from '../rulefmt';
import { executableText, librariesByKind, optionsText, runtimeTitle } from '../runtimefmt';

type SortKey = 'function' | 'self_share' | 'total_share';

export interface HotLeafOptions {
  /** The row marked at first (the highlight in the address). */
  picked?: string | null;
  /** Adds a "sandwich" button to each row. */
  onSandwich?: (fn: string) => void;
  id?: string;
}

/** Sortable top-functions table; clicking a row calls `onPick` (the
 *  function to highlight, or null when clicked again). */
export function hotLeafTable(
  functions: TopFunction[],
  onPick: (fn: string | null) => void,
  options: HotLeafOptions = {},
): HTMLElement {
  let key: SortKey = 'self_share';
  let descending = true;
  let picked: string | null = options.picked ?? null;
  const sandwichButton = (fn: string) =>
    h(
      'button',
      {
        type: 'button',
        class: 'sandwich-open',
        title: `Callers and callees of ${fn}`,
        onclick: (e: Event) => {
          e.stopPropagation();
          options.onSandwich!(fn);
        },
      },
      'sandwich',
    );
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
          options.onSandwich ? h('td', {}, sandwichButton(f.function)) : null,
        ),
      ),
    );
  };
  const header = (label: string, k: SortKey, numeric = false) =>
    h(
      'th',
      {
        class: numeric ? 'sortable num' : 'sortable',
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
    { class: 'grid hot-leaves', id: options.id ?? 'hot-leaves' },
    h(
      'thead',
      {},
      h(
        'tr',
        {},
        header('function', 'function'),
        header('self', 'self_share', true),
        header('total', 'total_share', true),
        h('th', { class: 'num' }, 'samples'),
        options.onSandwich ? h('th', {}, '') : null,
      ),
    ),
    body,
  );
}

/** Top-function rows from a flame tree's totals (a view with no `/top`),
 *  shares of `whole` samples with their binomial error. */
export function topRows(totals: FunctionTotals[], samples: number, whole: number): TopFunction[] {
  return totals.map((t) => {
    const selfShare = whole > 0 ? t.self / whole : 0;
    return {
      function: t.function,
      self_samples: t.self,
      total_samples: t.total,
      self_share: selfShare,
      total_share: whole > 0 ? t.total / whole : 0,
      self_share_stderr: samples > 0 ? Math.sqrt((selfShare * (1 - selfShare)) / samples) : 0,
    };
  });
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

/** The y axis of the timeline: time when every window has a rate, else
 *  raw samples (imported profiles have no rate). */
export function timelineAxis(windows: Array<{ frequency_hz: number }>): { label: string; unit: string } {
  return windows.every((w) => w.frequency_hz > 0)
    ? { label: 'time sampled per window', unit: 's' }
    : { label: 'samples per window', unit: '' };
}

/** Bars per window, as time sampled (FDA may change the frequency between
 *  windows), labelled with the frequency used, on labelled axes: time
 *  sampled up, windows in time order across. Says so when the server has
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
  const axis = timelineAxis(windows);
  const weight = (w: Schemas['TimelineWindow']) => (axis.unit ? timelineWeight(w) : w.samples);
  const max = Math.max(...windows.map(weight), Number.MIN_VALUE);
  const tick = (v: number) => (axis.unit ? `${Number(v.toPrecision(3))} ${axis.unit}` : String(Math.round(v)));
  const short = windows.filter(windowIsShort).length;
  const bars = h(
    'div',
    { class: 'timeline', id: 'timeline' },
    ...windows.map((w) => {
      const coverage = windowCoverageText(w);
      return h(
        'div',
        {
          class: windowIsShort(w) ? 'tl-bar tl-short' : 'tl-bar',
          title:
            `${w.host} ${when(w.window_start)} – ${when(w.window_end)}: ${w.samples} ${w.event} samples` +
            (w.frequency_hz > 0 ? ` at ${w.frequency_hz} Hz (${timelineWeight(w).toFixed(2)} s sampled)` : ' (rate not recorded)') +
            (coverage ? `\n${coverage}` : ''),
        },
        h('div', { class: 'tl-fill', style: `height:${Math.max(2, (weight(w) / max) * 80)}px` }),
        h('div', { class: 'tl-label' }, w.frequency_hz > 0 ? `${w.frequency_hz} Hz` : 'n/a'),
      );
    }),
  );
  return h(
    'figure',
    { class: 'timeline-chart', id: 'timeline-chart' },
    h('div', { class: 'tl-y-title', id: 'timeline-y' }, `${axis.label}${axis.unit ? ` (${axis.unit})` : ''}`),
    h('div', { class: 'tl-y-ticks' }, h('span', {}, tick(max)), h('span', {}, tick(0))),
    bars,
    h(
      'div',
      { class: 'tl-x-ticks' },
      h('span', {}, when(windows[0].window_start)),
      h('span', {}, when(windows[windows.length - 1].window_end)),
    ),
    h('figcaption', { class: 'tl-x-title', id: 'timeline-x' }, 'windows in time order (UTC), each labelled with its sampling rate'),
    short
      ? h(
          'p',
          { class: 'tl-short-note', id: 'timeline-short' },
          `${short} of ${windows.length} ${windows.length === 1 ? 'window' : 'windows'} (hatched) captured less than ` +
            `${100 - MISSING_WARNING_SHARE * 100}% of the samples their target earned; hover for why.`,
        )
      : null,
  );
}

/** The profile's samples against what its target earned, lost samples by
 *  reason, and a warning when more than 2% are missing. None for imported
 *  profiles: the file's samples are all there is, nothing was earned. */
export function coveragePanel(profile: ProfileView): HTMLElement | null {
  const c = profile.coverage;
  if (!c || isImported(profile)) return null;
  return coverageBlock(c, 'profile');
}

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
    h(
      'summary',
      {},
      title
        ? `Runtime: ${title}`
        : isImported(profile)
          ? `Runtime: none recorded (imported from a ${(profile.target as { value: string }).value} file)`
          : LIVE_STATUSES.includes(profile.status)
            ? 'Runtime: not reported yet'
            : 'Runtime: not reported',
      isImported(profile) ? '' : ` · options: ${optionsText(profile.options)}`,
    ),
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
