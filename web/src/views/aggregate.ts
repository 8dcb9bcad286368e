// Service aggregate: one flame graph across every host and profile of a
// service in a time range, with the per-host breakdown.

import { ApiError, flameTreeQuery, get, type Schemas } from '../api';
import { FlameGraph } from '../flame/graph';
import { flatten } from '../flame/layout';
import { h, isoToLocalInput, localInputToIso, notice, pct } from '../format';
import { href, type Route, type ViewScope } from '../router';
import { frameMenu } from './profile';
import { searchBox } from './search';
import { amount, EVENT_CHOICES, isTimed, totalText } from '../units';

const FIELDS = ['service', 'since', 'until', 'host', 'thread', 'include', 'exclude', 'event'] as const;

export async function aggregateView(route: Route, scope: ViewScope): Promise<HTMLElement> {
  const q = route.query;
  const now = new Date();
  const defaults: Record<string, string> = {
    since: isoToLocalInput(new Date(now.getTime() - 24 * 3600_000)),
    // The input holds whole minutes: round up so profiles of the current
    // minute are inside the default range.
    until: isoToLocalInput(new Date(now.getTime() + 60_000)),
  };
  const value = (f: string) => q.get(f) ?? defaults[f] ?? '';
  const form = h(
    'form',
    {
      class: 'filters',
      onsubmit: (e: Event) => {
        e.preventDefault();
        const d = new FormData(form);
        const out: Record<string, string | undefined> = {};
        for (const f of FIELDS) out[f] = String(d.get(f) ?? '').trim() || undefined;
        location.hash = href('aggregate', out);
      },
    },
    ...FIELDS.map((f) =>
      h(
        'label',
        {},
        `${f} `,
        f === 'event'
          ? h(
              'select',
              { name: f, id: `agg-${f}` },
              ...EVENT_CHOICES.map(([v, text]) =>
                h('option', { value: v || '', selected: v === value(f) }, v ? text : 'any (one event in the range)'),
              ),
            )
          : h('input', {
          name: f,
          id: `agg-${f}`,
          value: value(f),
          type: f === 'since' || f === 'until' ? 'datetime-local' : 'text',
          placeholder: ['thread', 'include', 'exclude'].includes(f) ? 'regex' : '',
          required: f === 'service',
        }),
      ),
    ),
    h('button', { type: 'submit' }, 'Show'),
  );
  const result = h('div', { id: 'aggregate-result' });
  const page = h('section', { class: 'aggregate' }, h('h2', {}, 'Service aggregate'), form, result);
  if (!q.get('service')) {
    result.replaceChildren(notice('info', 'Choose a service and a time range (UTC).'));
    return page;
  }
  const query: Record<string, string> = {};
  for (const f of FIELDS) {
    const v = value(f);
    if (v) query[f] = f === 'since' || f === 'until' ? localInputToIso(v) : v;
  }
  const aggregate = (focus: string[] = []) => get<Schemas['AggregateJson']>('/api/v1/aggregate', flameTreeQuery(query, focus));
  let agg: Schemas['AggregateJson'];
  try {
    agg = await aggregate();
  } catch (err) {
    const unavailable = err instanceof ApiError && err.notAvailable;
    result.replaceChildren(
      notice(
        unavailable ? 'info' : 'error',
        unavailable ? 'Service aggregates are not available on this server (no /api/v1/aggregate route).' : (err as Error).message,
      ),
    );
    return page;
  }
  const graph = new FlameGraph({
    kind: 'samples',
    samples: agg.samples,
    unit: agg,
    menuItems: frameMenu([]),
    loadFocus: async (focus) => flatten((await aggregate(focus)).root),
  });
  scope.onLeave(() => graph.destroy());
  result.replaceChildren(
    h('p', { class: 'muted' }, `${totalText(agg.samples, agg)} from ${agg.profiles} profiles on ${agg.hosts.length} hosts`),
    h(
      'table',
      { class: 'grid', id: 'agg-hosts' },
      h('thead', {}, h('tr', {}, h('th', {}, 'host'), h('th', {}, 'samples'), h('th', {}, 'share'), h('th', {}, 'profiles'))),
      h(
        'tbody',
        {},
        ...agg.hosts.map((x) =>
          h(
            'tr',
            {},
            h('td', {}, x.host),
            h('td', { class: 'num' }, String(x.samples), isTimed(agg) ? ` (${amount(x.samples, agg)})` : ''),
            h('td', { class: 'num' }, pct(agg.samples ? x.samples / agg.samples : 0)),
            h('td', { class: 'num' }, String(x.profiles)),
          ),
        ),
      ),
    ),
    searchBox(graph),
    agg.samples ? graph.root : notice('info', 'No samples in this range.'),
  );
  graph.setTree(flatten(agg.root));
  return page;
}
