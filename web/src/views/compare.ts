// Compare: a baseline and a target (profiles or service aggregates) as a
// diff flame graph — red grew, blue shrank, shares normalized per side —
// and a table of the largest changes.

import { ApiError, get, type ProfilesPage, type ProfileView, type Schemas } from '../api';
import { FlameGraph } from '../flame/graph';
import { flattenDiff } from '../flame/layout';
import { h, localInputToIso, notice, pct, when } from '../format';
import { href, type Route, type ViewScope } from '../router';
import { searchBox } from './search';

const SIDE_FIELDS = ['service', 'since', 'until'] as const;

function sidePicker(side: 'baseline' | 'target', q: URLSearchParams, recent: ProfileView[]): HTMLElement {
  const current = q.get(side) ?? '';
  const options = recent.map((p) =>
    h('option', { value: p.id, selected: p.id === current }, `${p.service}@${p.host} ${when(p.created_at)} (${p.id.slice(0, 8)})`),
  );
  if (current && !recent.some((p) => p.id === current))
    options.unshift(h('option', { value: current, selected: true }, current));
  return h(
    'fieldset',
    { class: 'side' },
    h('legend', {}, side),
    h('label', {}, 'Profile ', h('select', { name: side, id: `${side}-profile` }, h('option', { value: '' }, '— or an aggregate below —'), ...options)),
    ...SIDE_FIELDS.map((f) =>
      h(
        'label',
        {},
        `${f} `,
        h('input', {
          name: `${side}_${f}`,
          type: f === 'service' ? 'text' : 'datetime-local',
          value: q.get(`${side}_${f}`) ?? '',
        }),
      ),
    ),
  );
}

export async function compareView(route: Route, scope: ViewScope): Promise<HTMLElement> {
  const q = route.query;
  const recent = (
    await get<ProfilesPage>('/api/v1/profiles', { status: 'finished', limit: 50 })
  ).profiles;
  const form = h(
    'form',
    {
      class: 'compare-form',
      onsubmit: (e: Event) => {
        e.preventDefault();
        const d = new FormData(form);
        const out: Record<string, string | undefined> = {};
        for (const [k, v] of d.entries()) out[k] = String(v).trim() || undefined;
        location.hash = href('compare', out);
      },
    },
    sidePicker('baseline', q, recent),
    sidePicker('target', q, recent),
    ...['include', 'exclude'].map((f) =>
      h('label', {}, `${f} `, h('input', { name: f, id: `compare-${f}`, value: q.get(f) ?? '', placeholder: 'regex' })),
    ),
    h('button', { type: 'submit', id: 'compare-submit' }, 'Compare'),
  );
  const result = h('div', { id: 'compare-result' });
  const page = h('section', { class: 'compare' }, h('h2', {}, 'Compare'), form, result);

  const query: Record<string, string> = {};
  for (const side of ['baseline', 'target'] as const) {
    if (q.get(side)) query[side] = q.get(side)!;
    else
      for (const f of SIDE_FIELDS) {
        const v = q.get(`${side}_${f}`);
        if (v) query[`${side}_${f}`] = f === 'service' ? v : localInputToIso(v);
      }
  }
  for (const f of ['include', 'exclude']) if (q.get(f)) query[f] = q.get(f)!;
  const ready = ['baseline', 'target'].every((s) => query[s] || query[`${s}_service`]);
  if (!ready) {
    result.replaceChildren(notice('info', 'Pick a baseline and a target: two profiles, or a service and time range for each.'));
    return page;
  }
  let diff: Schemas['DiffJson'];
  try {
    diff = await get<Schemas['DiffJson']>('/api/v1/diff', query);
  } catch (err) {
    const text =
      err instanceof ApiError && err.notAvailable
        ? 'Compare is not available on this server (no /api/v1/diff route).'
        : `Diff failed: ${(err as Error).message}`;
    result.replaceChildren(notice(err instanceof ApiError && err.notAvailable ? 'info' : 'error', text));
    return page;
  }
  const graph = new FlameGraph({ kind: 'diff', samples: diff.target.samples });
  scope.onLeave(() => graph.destroy());
  const changes = diff.changes.slice().sort((a, b) => Math.abs(b.delta_total_points) - Math.abs(a.delta_total_points));
  result.replaceChildren(
    h(
      'p',
      { class: 'muted' },
      `baseline: ${diff.baseline.label} (${diff.baseline.samples} samples) → target: ${diff.target.label} (${diff.target.samples} samples). `,
      h('span', { class: 'legend grew' }, 'grew'),
      ' ',
      h('span', { class: 'legend shrank' }, 'shrank'),
      ' (shares of each side’s samples)',
    ),
    searchBox(graph),
    graph.root,
    h('h3', {}, 'Largest changes (total share)'),
    h(
      'table',
      { class: 'grid', id: 'changes' },
      h('thead', {}, h('tr', {}, ...['function', 'baseline', 'target', 'change', 'self baseline', 'self target'].map((t) => h('th', {}, t)))),
      h(
        'tbody',
        {},
        ...changes.slice(0, 50).map((c) =>
          h(
            'tr',
            { class: c.delta_total_points >= 0 ? 'grew' : 'shrank', onclick: () => graph.select(c.function) },
            h('td', { class: 'fn' }, c.function),
            h('td', { class: 'num' }, pct(c.baseline_total_share)),
            h('td', { class: 'num' }, pct(c.target_total_share)),
            h('td', { class: 'num' }, `${c.delta_total_points >= 0 ? '+' : ''}${c.delta_total_points.toFixed(2)} pts`),
            h('td', { class: 'num' }, pct(c.baseline_self_share)),
            h('td', { class: 'num' }, pct(c.target_self_share)),
          ),
        ),
      ),
    ),
  );
  graph.setTree(flattenDiff(diff.root));
  return page;
}
