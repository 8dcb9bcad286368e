// The pieces of the runs pages: the runs table, a run's progress (time,
// members, ε reached against the stop rule's), its members with their
// profiles or why they have none, its strata, and the per-host table with
// the outliers marked.

import type { Schemas } from '../api';
import { strataCompareQuery } from '../comparefmt';
import { h, pct, when } from '../format';
import {
  chosenText,
  failedMembers,
  points,
  pValueText,
  runProgress,
  runStatusText,
  selectionText,
  stopRuleText,
  stratumText,
  type Run,
  type RunPrecision,
} from '../runfmt';
import { href } from '../router';
import { amount, type SampleUnit } from '../units';
import { requesterCell } from '../widgets/requester';

export function runStatusChip(run: Pick<Run, 'status'>, id?: string): HTMLElement {
  return h('span', { class: `status run-${run.status}`, id, 'data-status': run.status }, runStatusText(run.status));
}

/** Every run listed, newest first, each linking to its page. */
export function runsTable(runs: Run[], names: ReadonlyMap<string, string>): HTMLElement {
  const headers = ['run', 'service', 'status', 'hosts', 'asked for', 'stop rule', 'max duration', 'requested by', 'created', 'ended'];
  return h(
    'table',
    { class: 'grid', id: 'runs-table' },
    h('thead', {}, h('tr', {}, ...headers.map((t) => h('th', { class: t === 'max duration' ? 'num' : '' }, t)))),
    h(
      'tbody',
      {},
      ...runs.map((r) =>
        h(
          'tr',
          { 'data-run': r.id, 'data-status': r.status, 'data-service': r.service },
          h('td', {}, h('a', { href: `#/runs/${r.id}`, class: 'run-link' }, r.id.slice(0, 8))),
          h('td', {}, h('a', { href: `#/runs?service=${encodeURIComponent(r.service)}` }, r.service)),
          h('td', { class: 'run-status-cell' }, runStatusChip(r), r.status_reason ? h('div', { class: 'reason muted' }, r.status_reason) : null),
          h('td', {}, chosenText(r.selection)),
          h('td', {}, selectionText(r.hosts), r.stratify_by.length ? ` by ${r.stratify_by.join(', ')}` : ''),
          h('td', {}, stopRuleText(r.stop_when)),
          h('td', { class: 'num' }, `${r.duration_secs} s`),
          h('td', {}, requesterCell(r.requested_by, names)),
          h('td', {}, when(r.created_at)),
          h('td', {}, when(r.ended_at)),
        ),
      ),
    ),
  );
}

/** The run's strata: each combination of the stratifying labels with
 *  its eligible and chosen hosts, and, where hosts were chosen in more
 *  than one, a link comparing each with the first (a diff by label). */
export function strataTable(selection: Schemas['Selection'], runId?: string): HTMLElement | null {
  if (!selection.strata.length) return null;
  const chosen = selection.strata.filter((s) => s.chosen > 0);
  const first = chosen[0];
  const compareLink = (s: Schemas['Selection']['strata'][number]) =>
    runId && first && s !== first && s.chosen > 0 && chosen.length > 1
      ? h(
          'a',
          { class: 'stratum-compare', href: href('compare', strataCompareQuery(runId, first.labels, s.labels)) },
          `compare with ${stratumText(first.labels)}`,
        )
      : '';
  return h(
    'table',
    { class: 'grid compact', id: 'run-strata' },
    h('thead', {}, h('tr', {}, h('th', {}, 'stratum'), h('th', { class: 'num' }, 'eligible'), h('th', { class: 'num' }, 'chosen'), h('th', {}, ''))),
    h(
      'tbody',
      {},
      ...selection.strata.map((s) =>
        h(
          'tr',
          { 'data-stratum': stratumText(s.labels) },
          h('td', {}, stratumText(s.labels)),
          h('td', { class: 'num' }, String(s.eligible)),
          h('td', { class: 'num' }, String(s.chosen)),
          h('td', {}, compareLink(s)),
        ),
      ),
    ),
  );
}

/** Time against the maximum, the members, and the ε reached against the
 *  rule's with each top share's error (from `/precision`). */
export function progressPanel(run: Run, precision: RunPrecision | null, now = Date.now()): HTMLElement {
  const p = runProgress(run, precision, now);
  const top = precision?.decision.top ?? [];
  const rule = precision?.stop_when;
  return h(
    'div',
    { class: 'run-progress', id: 'run-progress', 'data-live': String(p.live) },
    h(
      'div',
      { class: 'progress-line' },
      h('progress', { id: 'run-time', max: 1, value: p.fraction.toFixed(3) }),
      h('span', { id: 'run-elapsed' }, p.live ? p.elapsedText : `took ${p.elapsedText}`),
      run.saved_secs ? h('span', { class: 'muted' }, ` · the stop rule saved ${Math.round(run.saved_secs)} s`) : null,
    ),
    h('p', { id: 'run-member-counts' }, `Members: ${p.membersText}`),
    h(
      'p',
      { id: 'run-precision', class: p.met ? 'met' : '' },
      'Precision: ',
      p.precisionText,
      precision?.decision.samples_used ? ` · ${precision.decision.samples_used} samples from ${precision.decision.hosts} ${precision.decision.hosts === 1 ? 'host' : 'hosts'}, ${precision.decision.method.replace('_', '-')} error` : '',
      precision?.decision.projected_samples && !p.met && p.live ? ` · about ${precision.decision.projected_samples} samples needed` : '',
    ),
    top.length && rule
      ? h(
          'table',
          { class: 'grid compact', id: 'run-precision-top' },
          h('thead', {}, h('tr', {}, h('th', {}, 'top share'), h('th', { class: 'num' }, 'share'), h('th', { class: 'num' }, `± error (want ≤ ${points(rule.max_stderr)} pts)`))),
          h(
            'tbody',
            {},
            ...top.map((s) =>
              h(
                'tr',
                { 'data-function': s.function, class: s.stderr <= rule.max_stderr ? 'met' : 'unmet' },
                h('td', { class: 'fn', title: s.function }, s.function),
                h('td', { class: 'num' }, pct(s.share)),
                h('td', { class: 'num' }, `± ${points(s.stderr)} pts`),
              ),
            ),
          ),
        )
      : null,
  );
}

/** Each chosen host's member: its status, its profile, or why it has none. */
export function membersTable(run: Run): HTMLElement {
  return h(
    'table',
    { class: 'grid', id: 'run-members' },
    h('thead', {}, h('tr', {}, ...['host', 'status', 'profile', 'reason'].map((t) => h('th', {}, t)))),
    h(
      'tbody',
      {},
      ...run.members.map((m) =>
        h(
          'tr',
          { 'data-host': m.host, 'data-status': m.status, class: m.status === 'failed' || m.status === 'expired' ? 'member-failed' : '' },
          h('td', {}, m.host),
          h('td', {}, h('span', { class: `status ${m.status}` }, m.status)),
          h('td', {}, m.profile_id ? h('a', { href: `#/profiles/${m.profile_id}`, class: 'member-profile' }, m.profile_id.slice(0, 8)) : '—'),
          h('td', { class: 'reason' }, m.reason ?? ''),
        ),
      ),
    ),
  );
}

/** The run's state in words for its header: what was asked, what was
 *  chosen, and every host without a profile with why. */
export function selectionSummary(run: Run): HTMLElement {
  const failed = failedMembers(run.members);
  return h(
    'div',
    { class: 'run-selection' },
    h(
      'p',
      { id: 'run-chosen' },
      h('b', {}, 'Hosts: '),
      chosenText(run.selection),
      ` · asked for ${selectionText(run.hosts)}`,
      run.stratify_by.length ? `, stratified by ${run.stratify_by.join(', ')}` : '',
      ` · seed ${run.seed}`,
      ` · stop rule: ${stopRuleText(run.stop_when)}`,
    ),
    failed.length
      ? h(
          'ul',
          { class: 'run-failures', id: 'run-failures' },
          ...failed.map((f) => h('li', { 'data-host': f.host }, h('b', {}, f.host), `: ${f.reason}`)),
        )
      : null,
  );
}

/** Every chosen host, most different first: labels, samples, hottest
 *  functions, the test against the other hosts, its profile; outliers
 *  marked. */
export function hostsTable(r: Schemas['RunHostsResponse']): HTMLElement {
  const unit: SampleUnit = r;
  const num = (t: string) => h('th', { class: 'num' }, t);
  return h(
    'div',
    {},
    h(
      'p',
      { class: 'muted', id: 'run-outliers' },
      r.outliers.length
        ? `${r.outliers.length} ${r.outliers.length === 1 ? 'outlier' : 'outliers'}: ${r.outliers.join(', ')}`
        : 'No outlier: every host’s function mix is within chance of the others’',
      ` (chi-square over the top ${r.options.top_k} functions, flagged below p = ${pValueText(r.threshold)}).`,
    ),
    h(
      'table',
      { class: 'grid', id: 'run-hosts' },
      h('thead', {}, h('tr', {}, h('th', {}, 'host'), h('th', {}, 'status'), num('samples'), h('th', {}, 'hottest'), num('distance'), num('p-value'), h('th', {}, 'moved most'), h('th', {}, 'profile'))),
      h(
        'tbody',
        {},
        ...r.hosts.map((x) =>
          h(
            'tr',
            { 'data-host': x.host, 'data-outlier': String(x.outlier), class: x.outlier ? 'outlier' : '' },
            h(
              'td',
              {},
              x.outlier ? h('b', { class: 'outlier-mark', title: 'its function mix differs from the other hosts’ more than chance allows' }, '⚠ ') : '',
              x.host,
              h('div', { class: 'labels' }, ...Object.keys(x.labels).sort().map((k) => h('span', { class: 'chip' }, `${k}=${x.labels[k]}`))),
            ),
            h('td', {}, h('span', { class: `status ${x.status}` }, x.status)),
            h('td', { class: 'num' }, String(x.samples), unit.unit === 'nanoseconds' ? h('div', { class: 'muted' }, amount(x.samples, unit)) : ''),
            h('td', { class: 'hottest' }, ...x.top.slice(0, 3).map((f) => h('div', { title: f.function }, h('code', {}, f.function), ` ${pct(f.self_share)}`))),
            h('td', { class: 'num' }, x.df ? pct(x.distance) : '—'),
            h('td', { class: 'num' }, x.df ? pValueText(x.p_value) : 'not tested'),
            h('td', {}, x.moved ? h('span', {}, h('code', {}, x.moved.function), ` ${pct(x.moved.host_share)} vs ${pct(x.moved.others_share)}`) : '—'),
            h('td', {}, x.profile_id ? h('a', { href: `#/profiles/${x.profile_id}`, class: 'host-profile' }, x.profile_id.slice(0, 8)) : '—'),
          ),
        ),
      ),
    ),
  );
}
