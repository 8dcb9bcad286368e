// Service aggregate: one flame graph across every host and profile of a
// service in a time range (with downloads and the sandwich view), a
// function's trend over the range, its top functions, the per-host
// breakdown and the profiles it merged.

import { ApiError, flameTreeQuery, get, type ProfilesPage, type Schemas } from '../api';
import { FlameGraph } from '../flame/graph';
import { flatten } from '../flame/layout';
import { functionTotals } from '../flame/sandwich';
import { h, isoToLocalInput, localInputToIso, notice, pct, when } from '../format';
import { href, type Route, type ViewScope } from '../router';
import { durationText } from '../profilefmt';
import { lostSamples } from '../coveragefmt';
import { downloadBar } from '../widgets/downloads';
import { FlamePanel } from '../widgets/flamepanel';
import { coverageBlock } from '../widgets/coverage';
import { hotLeafTable, topRows } from '../widgets/hotleaves';
import { frameMenu } from '../widgets/framemenu';
import { amount, EVENT_CHOICES, isTimed, totalText } from '../units';
import { frameRegex } from '../trendchart';
import { TrendPanel } from './trendpanel';

/** Profiles listed under the aggregate (the API's page limit). */
const MERGED_LIMIT = 100;

/** The profiles an aggregate merged: the service's profiles created in the
 *  range (as the aggregate picks them), on the chosen host when one. */
async function mergedProfiles(query: Record<string, string>, event: string | null | undefined, listHref: string): Promise<HTMLElement> {
  let page: ProfilesPage;
  try {
    page = await get<ProfilesPage>('/api/v1/profiles', {
      service: query.service,
      since: query.since,
      until: query.until,
      host: query.host && !query.host.includes(',') ? query.host : undefined,
      limit: MERGED_LIMIT,
    });
  } catch (err) {
    return notice('error', `Profiles: ${(err as Error).message}`);
  }
  // A range of several events needs one chosen: the others were not merged.
  const rows = page.profiles.filter((p) => !event || !p.event || p.event === event);
  if (!rows.length) return notice('info', 'No profiles listed for this range.');
  return h(
    'div',
    {},
    h(
      'table',
      { class: 'grid', id: 'agg-profiles' },
      h(
        'thead',
        {},
        h('tr', {}, ...['profile', 'host', 'created', 'status', 'event'].map((t) => h('th', {}, t)), h('th', { class: 'num' }, 'duration')),
      ),
      h(
        'tbody',
        {},
        ...rows.map((p) =>
          h(
            'tr',
            { 'data-profile': p.id },
            h('td', {}, h('a', { href: `#/profiles/${p.id}` }, p.id.slice(0, 8))),
            h('td', {}, p.host),
            h('td', {}, when(p.created_at)),
            h('td', {}, h('span', { class: `status ${p.status}` }, p.status)),
            h('td', {}, p.event ?? '—'),
            h('td', { class: 'num' }, durationText(p)),
          ),
        ),
      ),
    ),
    page.next_cursor ? h('p', {}, h('a', { href: listHref }, `More in the profiles list…`)) : null,
  );
}

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
  // The trend's function, kept when the filters change.
  let trendFunction = () => q.get('trend') ?? '';
  const form = h(
    'form',
    {
      class: 'filters',
      onsubmit: (e: Event) => {
        e.preventDefault();
        const d = new FormData(form);
        const out: Record<string, string | undefined> = {};
        for (const f of FIELDS) out[f] = String(d.get(f) ?? '').trim() || undefined;
        out.trend = trendFunction() || undefined;
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
              // A start's default ('') is CPU; here '' is any event, and
              // CPU is asked for by its name.
              ...[['', 'any (one event in the range)'], ['cpu-clock', 'CPU'], ...EVENT_CHOICES.filter(([v]) => v)].map(
                ([v, text]) => h('option', { value: v, selected: v === (value(f) ?? '') }, text),
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
  const trend = new TrendPanel(
    {
      service: query.service,
      since: query.since,
      until: query.until,
      host: query.host,
      thread: query.thread,
      event: query.event || agg.event,
      stacksFiltered: !!(query.include || query.exclude),
    },
    q.get('trend') ?? '',
    scope,
  );
  trendFunction = () => trend.function;
  const showTrend = (fn: string) => trend.show(frameRegex(fn));
  const menuItems = frameMenu([], showTrend);
  const graph = new FlameGraph({
    kind: 'samples',
    samples: agg.samples,
    unit: agg,
    menuItems,
    loadFocus: async (focus) => flatten((await aggregate(focus)).root),
  });
  scope.onLeave(() => graph.destroy());
  const stem = `aggregate-${query.service}-${query.since.slice(0, 16)}`.replace(/[^A-Za-z0-9._-]/g, '-');
  const panel = new FlamePanel({
    graph,
    query: q,
    scope,
    sandwich: { samples: agg.samples, unit: agg, menuItems },
    tools: [downloadBar('/api/v1/aggregate', query, stem)],
  });
  const tree = flatten(agg.root);
  const top = topRows(functionTotals(tree).slice(0, 50), agg.samples, tree.total[0]);
  const listHref = href('profiles', { service: value('service'), since: value('since'), until: value('until'), host: q.get('host') ?? undefined });
  const merged = h('div', { id: 'agg-merged' }, h('p', { class: 'muted' }, 'Listing the profiles…'));
  void mergedProfiles(query, query.event || agg.event, listHref).then((el) => merged.replaceChildren(el));
  const num = (text: string) => h('th', { class: 'num' }, text);
  result.replaceChildren(
    h(
      'p',
      { class: 'muted' },
      `${totalText(agg.samples, agg)} from ${agg.profiles} profiles on ${agg.hosts.length} hosts, ${when(agg.since)} – ${when(agg.until)} · `,
      h('a', { href: listHref, id: 'agg-profiles-link' }, 'the profiles merged'),
    ),
    // What the merged profiles' targets earned and what was lost: only when
    // there is something to say beyond the total above.
    ...(agg.coverage && (typeof agg.coverage.expected === 'number' || lostSamples(agg.coverage) > 0)
      ? [coverageBlock(agg.coverage, 'agg')]
      : []),
    agg.samples ? panel.root : notice('info', 'No samples in this range.'),
    trend.root,
    h(
      'div',
      { class: 'panels' },
      h(
        'div',
        {},
        h('h3', {}, 'Top functions (self time)'),
        agg.samples
          ? hotLeafTable(top, (fn) => panel.select(fn), {
              id: 'agg-top',
              picked: panel.selected,
              onSandwich: (fn) => panel.openSandwich(fn),
              onTrend: showTrend,
            })
          : notice('info', 'No samples.'),
        tree.merged.some((m) => m > 0)
          ? h('p', { class: 'muted' }, 'From the graph as drawn: samples in merged (grey) boxes are not counted.')
          : null,
      ),
      h(
        'div',
        {},
        h('h3', {}, 'Hosts'),
        h(
          'table',
          { class: 'grid', id: 'agg-hosts' },
          h('thead', {}, h('tr', {}, h('th', {}, 'host'), num('samples'), num('share'), num('profiles'))),
          h(
            'tbody',
            {},
            ...agg.hosts.map((x) =>
              h(
                'tr',
                { 'data-host': x.host },
                h('td', {}, h('a', { href: href('profiles', { service: value('service'), host: x.host, since: value('since'), until: value('until') }) }, x.host)),
                h('td', { class: 'num' }, String(x.samples), isTimed(agg) ? ` (${amount(x.samples, agg)})` : ''),
                h('td', { class: 'num' }, pct(agg.samples ? x.samples / agg.samples : 0)),
                h('td', { class: 'num' }, String(x.profiles)),
              ),
            ),
          ),
        ),
        h('h3', {}, 'Profiles merged'),
        merged,
      ),
    ),
  );
  panel.show(tree);
  return page;
}
