// Profiles: list with filters and live status, the start form at the top
// (behind its button), stop buttons.

import { get, LIVE_STATUSES, post, type ProfilesPage, type ProfileView } from '../api';
import { hasRole, mayProfile } from '../auth';
import { h, localInputToIso, notice, when } from '../format';
import { href, replaceQuery, type Route, type ViewScope } from '../router';
import { labelFilter, type Labels } from '../labels';
import { durationText, rateText, scheduleIdOf, targetText } from '../profilefmt';
import { startForm } from './startform';
import { requesterCell, scheduleNames } from '../widgets/requester';
import { runIdOf } from '../runfmt';

const STATUSES = ['', 'requested', 'dispatched', 'running', 'finished', 'stopped', 'failed', 'expired'];

export function stopButton(p: ProfileView, after: () => void): HTMLElement | null {
  if (!LIVE_STATUSES.includes(p.status) || !mayProfile(p.service)) return null;
  return h(
    'button',
    {
      class: 'stop',
      onclick: async (e: Event) => {
        e.preventDefault();
        const b = e.currentTarget as HTMLButtonElement;
        b.disabled = true;
        try {
          await post(`/api/v1/profiles/${p.id}/stop`);
        } catch (err) {
          alert(`Stop failed: ${(err as Error).message}`);
        }
        after();
      },
    },
    'Stop',
  );
}

/** Labels as chips; each links to the list filtered on it. */
export function labelChips(labels: Labels | null | undefined, query: Record<string, string | undefined> = {}): HTMLElement {
  return h(
    'span',
    { class: 'labels' },
    ...Object.keys(labels ?? {})
      .sort()
      .map((k) =>
        h(
          'a',
          { class: 'chip', 'data-label': k, href: href('profiles', { ...query, labels: `${k}:${labels![k]}` }), title: `only profiles labelled ${k}=${labels![k]}` },
          `${k}=${labels![k]}`,
        ),
      ),
    ...(runIdOf({ labels: labels ?? {} })
      ? [h('a', { class: 'run-link', href: `#/runs/${labels!.run}`, title: 'the run this profile is a member of' }, '→ run')]
      : []),
  );
}

function row(
  p: ProfileView,
  refresh: () => void,
  query: Record<string, string | undefined>,
  names: ReadonlyMap<string, string>,
  marked: string | null,
): HTMLElement {
  return h(
    'tr',
    { 'data-profile': p.id, 'data-status': p.status, class: p.id === marked ? 'just-started' : '' },
    h('td', {}, h('a', { href: `#/profiles/${p.id}` }, p.id.slice(0, 8))),
    h('td', {}, p.service),
    h('td', {}, p.host),
    h('td', {}, targetText(p.target)),
    h('td', {}, h('span', { class: `status ${p.status}` }, p.status), p.status_reason ? ` ${p.status_reason}` : ''),
    h('td', {}, when(p.created_at)),
    h('td', { class: 'num' }, durationText(p)),
    h('td', { class: 'num' }, rateText(p)),
    h('td', {}, requesterCell(p.requested_by, names)),
    h('td', {}, labelChips(p.labels, query)),
    h('td', {}, stopButton(p, refresh)),
  );
}

export async function profilesView(route: Route, scope: ViewScope): Promise<HTMLElement> {
  const q = route.query;
  const filter = (name: string, attrs: Record<string, string> = {}) =>
    h('input', { name, id: `filter-${name}`, value: q.get(name) ?? '', ...attrs });
  const status = h(
    'select',
    { name: 'status', id: 'filter-status' },
    ...STATUSES.map((s) => h('option', { value: s, selected: s === (q.get('status') ?? '') }, s || 'any')),
  );
  const filters = h(
    'form',
    {
      class: 'filters',
      onsubmit: (e: Event) => {
        e.preventDefault();
        const d = new FormData(filters);
        const v = (k: string) => String(d.get(k) ?? '').trim() || undefined;
        let labels: string | undefined;
        try {
          labels = labelFilter(v('labels') ?? '');
        } catch (err) {
          message.replaceChildren(notice('error', `Labels filter: ${(err as Error).message}`));
          return;
        }
        location.hash = href('profiles', {
          service: v('service'),
          host: v('host'),
          status: v('status'),
          since: v('since'),
          until: v('until'),
          labels,
        });
      },
    },
    h('label', {}, 'Service ', filter('service')),
    h('label', {}, 'Host ', filter('host')),
    h('label', {}, 'Status ', status),
    h('label', {}, 'Since (UTC) ', filter('since', { type: 'datetime-local' })),
    h('label', {}, 'Until (UTC) ', filter('until', { type: 'datetime-local' })),
    h('label', {}, 'Labels ', filter('labels', { placeholder: 'env:prod,team:x', size: '20' })),
    h('button', { type: 'submit' }, 'Filter'),
  );
  const body = h('tbody', {});
  const more = h('div', {});
  const message = h('div', {});
  const query = (cursor?: string) => ({
    service: q.get('service'),
    host: q.get('host'),
    status: q.get('status'),
    since: localInputToIso(q.get('since') ?? ''),
    until: localInputToIso(q.get('until') ?? ''),
    labels: q.get('labels'),
    limit: 50,
    cursor,
  });
  let shown: ProfileView[] = [];
  let names: ReadonlyMap<string, string> = new Map();
  /** The profile the start form just started, marked in the list. */
  let marked: string | null = null;
  const current: Record<string, string | undefined> = {};
  for (const k of ['service', 'host', 'status', 'since', 'until']) current[k] = q.get(k) ?? undefined;
  const draw = () => body.replaceChildren(...shown.map((p) => row(p, () => void refresh(), current, names, marked)));
  const showMore = (cursor: string | null | undefined) =>
    more.replaceChildren(
      cursor
        ? h(
            'button',
            {
              onclick: async () => {
                const r = await get<ProfilesPage>('/api/v1/profiles', query(cursor));
                shown = shown.concat(r.profiles);
                draw();
                showMore(r.next_cursor);
              },
            },
            'More',
          )
        : '',
    );
  const refresh = async () => {
    try {
      const r = await get<ProfilesPage>('/api/v1/profiles', query());
      shown = r.profiles;
      const wanted = shown.map((p) => scheduleIdOf(p.requested_by)).filter((id): id is string => id !== null);
      if (wanted.length) names = await scheduleNames(wanted);
      draw();
      showMore(r.next_cursor);
      message.replaceChildren(shown.length ? '' : notice('info', 'No profiles match.'));
    } catch (err) {
      message.replaceChildren(notice('error', (err as Error).message));
    }
  };
  await refresh();
  // Live status: refresh while any listed profile is still running.
  scope.every(3000, () => {
    if (shown.some((p) => LIVE_STATUSES.includes(p.status))) void refresh();
  });
  const mayStart = hasRole('profiler');
  // The start form opens from the button, or from a link
  // (`#/profiles?start=<host>`, the hosts page's "Profile…").
  const startPanel = mayStart
    ? h(
        'section',
        { class: 'start-panel', id: 'start-panel', hidden: !q.has('start') },
        h('h3', {}, 'Start a profile'),
        startForm((p) => {
          marked = p.id;
          shown = [p, ...shown.filter((x) => x.id !== p.id)];
          draw();
          void refresh();
        }, q.get('start') && q.get('start') !== '1' ? q.get('start')! : ''),
      )
    : null;
  const toggle = startPanel
    ? h(
        'button',
        {
          id: 'start-toggle',
          class: 'primary',
          type: 'button',
          'aria-expanded': String(!startPanel.hidden),
          'aria-controls': 'start-panel',
          onclick: (e: Event) => {
            startPanel.hidden = !startPanel.hidden;
            (e.currentTarget as HTMLElement).setAttribute('aria-expanded', String(!startPanel.hidden));
            replaceQuery({ start: startPanel.hidden ? undefined : q.get('start') || '1' });
            if (!startPanel.hidden) startPanel.querySelector<HTMLElement>('select, input')?.focus();
          },
        },
        'Start a profile',
      )
    : null;
  return h(
    'section',
    { class: 'profiles' },
    h('div', { class: 'page-head' }, h('h2', {}, 'Profiles'), toggle),
    startPanel,
    filters,
    message,
    h(
      'table',
      { class: 'grid', id: 'profiles-table' },
      h(
        'thead',
        {},
        h(
          'tr',
          {},
          ...['id', 'service', 'host', 'target', 'status', 'created', 'duration', 'frequency', 'requested by', 'labels', ''].map(
            (t) => h('th', { class: t === 'duration' || t === 'frequency' ? 'num' : '' }, t),
          ),
        ),
      ),
      body,
    ),
    more,
  );
}
