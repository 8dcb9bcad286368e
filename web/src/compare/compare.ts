// Compare: a baseline and a target (profiles or service aggregates over a
// preset or chosen time range) as a diff flame graph and a table of the
// largest changes, each coloured by how sure it is (its ± from both sides'
// sample counts), not by its sign alone; a button flips the sides.

import { ApiError, get, type ProfilesPage, type ProfileView, type Schemas } from '../api';
import { flipSides, RANGE_PRESETS, sideQuery, type Side } from '../comparefmt';
import { FlameGraph } from '../flame/graph';
import { flattenDiff } from '../flame/layout';
import { changeClass, changeSignificance, changeText, reportedChange } from '../flame/significance';
import { h, notice, pct, when } from '../format';
import { href, type Route, type ViewScope } from '../router';
import { downloadBar } from '../widgets/downloads';
import { FlamePanel } from '../widgets/flamepanel';

const DATE_FIELDS = ['since', 'until'] as const;
/** What a side may measure (`event`), as the API names it. */
const DIFF_EVENTS = ['cpu-clock', 'cycles', 'off-cpu', 'wall', 'lock', 'alloc-bytes', 'heap-bytes'];

function sidePicker(side: Side, q: URLSearchParams, recent: ProfileView[]): HTMLElement {
  const current = q.get(side) ?? '';
  const options = recent.map((p) =>
    h('option', { value: p.id, selected: p.id === current }, `${p.service}@${p.host} ${when(p.created_at)} (${p.id.slice(0, 8)})`),
  );
  if (current && !recent.some((p) => p.id === current))
    options.unshift(h('option', { value: current, selected: true }, current));
  // A preset unless dates were given; the dates only for "custom".
  const hasDates = DATE_FIELDS.some((f) => q.get(`${side}_${f}`));
  const range = q.get(`${side}_range`) ?? (hasDates ? '' : '24h');
  const dates = h(
    'span',
    { class: 'dates', hidden: range !== '' },
    ...DATE_FIELDS.map((f) =>
      h(
        'label',
        {},
        `${f} (UTC) `,
        h('input', { name: `${side}_${f}`, id: `${side}-${f}`, type: 'datetime-local', value: q.get(`${side}_${f}`) ?? '' }),
      ),
    ),
  );
  const preset = h(
    'select',
    {
      name: `${side}_range`,
      id: `${side}-range`,
      onchange: (e: Event) => (dates.hidden = (e.target as HTMLSelectElement).value !== ''),
    },
    ...RANGE_PRESETS.map((p) => h('option', { value: p.value, selected: p.value === range }, p.label)),
    h('option', { value: '', selected: range === '' }, 'custom dates…'),
  );
  return h(
    'fieldset',
    { class: 'side', id: `${side}-side` },
    h('legend', {}, side),
    h('label', {}, 'Profile ', h('select', { name: side, id: `${side}-profile` }, h('option', { value: '' }, '— or a service below —'), ...options)),
    h('label', {}, 'service ', h('input', { name: `${side}_service`, id: `${side}-service`, value: q.get(`${side}_service`) ?? '' })),
    h('label', {}, 'range ', preset),
    dates,
  );
}

/** The table of largest changes: each with its ±, coloured by how sure. */
function changesTable(diff: Schemas['DiffJson'], graph: FlameGraph): HTMLElement {
  const nb = diff.baseline.samples ?? 0;
  const nt = diff.target.samples ?? 0;
  const rows = diff.changes
    .map((c) => ({ c, d: reportedChange(c, nb, nt) }))
    .sort((a, b) => Math.abs(b.d.delta) - Math.abs(a.d.delta));
  return h(
    'table',
    { class: 'grid', id: 'changes' },
    h(
      'thead',
      {},
      h(
        'tr',
        {},
        h('th', {}, 'function'),
        ...['baseline', 'target', 'change ± 1σ', 'σ', 'self baseline', 'self target'].map((t) => h('th', { class: 'num' }, t)),
      ),
    ),
    h(
      'tbody',
      {},
      ...rows.slice(0, 50).map(({ c, d }) =>
        h(
          'tr',
          { class: changeClass(d), 'data-function': c.function, 'data-significance': changeSignificance(d), onclick: () => graph.select(c.function) },
          h('td', { class: 'fn', title: c.function }, c.function),
          h('td', { class: 'num' }, pct(c.baseline_total_share)),
          h('td', { class: 'num' }, pct(c.target_total_share)),
          h('td', { class: 'num change' }, changeText(d)),
          h('td', { class: 'num' }, Number.isFinite(d.z) ? Math.abs(d.z).toFixed(1) : '∞'),
          h('td', { class: 'num' }, pct(c.baseline_self_share)),
          h('td', { class: 'num' }, pct(c.target_self_share)),
        ),
      ),
    ),
  );
}

export async function compareView(route: Route, scope: ViewScope): Promise<HTMLElement> {
  const q = route.query;
  const recent = (await get<ProfilesPage>('/api/v1/profiles', { status: 'finished', limit: 50 })).profiles;
  const form = h(
    'form',
    {
      class: 'compare-form',
      onsubmit: (e: Event) => {
        e.preventDefault();
        const d = new FormData(form);
        const out: Record<string, string | undefined> = {};
        for (const [k, v] of d.entries()) out[k] = String(v).trim() || undefined;
        // A preset makes the dates moot.
        for (const side of ['baseline', 'target'])
          if (out[`${side}_range`]) for (const f of DATE_FIELDS) delete out[`${side}_${f}`];
        location.hash = href('compare', out);
      },
    },
    sidePicker('baseline', q, recent),
    h(
      'button',
      {
        type: 'button',
        id: 'compare-flip',
        title: 'Swap baseline and target',
        onclick: () => (location.hash = `#/compare?${flipSides(q).toString()}`),
      },
      '⇄ Flip',
    ),
    sidePicker('target', q, recent),
    ...['include', 'exclude'].map((f) =>
      h('label', {}, `${f} `, h('input', { name: f, id: `compare-${f}`, value: q.get(f) ?? '', placeholder: 'regex' })),
    ),
    h(
      'label',
      { title: 'Needed when a service range holds profiles of several events' },
      'event ',
      h(
        'select',
        { name: 'event', id: 'compare-event' },
        h('option', { value: '' }, 'any (one event per side)'),
        ...DIFF_EVENTS.map((e) => h('option', { value: e, selected: e === q.get('event') }, e)),
      ),
    ),
    h('button', { type: 'submit', id: 'compare-submit' }, 'Compare'),
  );
  const result = h('div', { id: 'compare-result' });
  const page = h('section', { class: 'compare' }, h('h2', {}, 'Compare'), form, result);

  const now = new Date();
  const query: Record<string, string> = { ...sideQuery(q, 'baseline', now), ...sideQuery(q, 'target', now) };
  for (const f of ['include', 'exclude', 'event']) if (q.get(f)) query[f] = q.get(f)!;
  const ready = ['baseline', 'target'].every((s) => query[s] || query[`${s}_service`] || query[`${s}_run`]);
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
  const graph = new FlameGraph({ kind: 'diff', samples: diff.target.samples ?? 0, baselineSamples: diff.baseline.samples ?? 0 });
  scope.onLeave(() => graph.destroy());
  const panel = new FlamePanel({
    graph,
    query: q,
    scope,
    tools: [downloadBar('/api/v1/diff', query, 'diff', ['svg'], false)],
  });
  result.replaceChildren(
    h(
      'p',
      { class: 'muted' },
      `baseline: ${diff.baseline.label} (${diff.baseline.samples} samples) → target: ${diff.target.label} (${diff.target.samples} samples). `,
      h('span', { class: 'legend grew significant' }, 'grew'),
      ' ',
      h('span', { class: 'legend shrank significant' }, 'shrank'),
      ' (3σ or more; paler: 2–3σ) ',
      h('span', { class: 'legend noise' }, 'within noise'),
      ' (under 2σ). Shares of each side’s samples; σ from both sides’ sample counts.',
    ),
    panel.root,
    h('h3', {}, 'Largest changes (total share)'),
    changesTable(diff, graph),
  );
  panel.show(flattenDiff(diff.root));
  return page;
}
