// Profiles: list with filters and live status, start and stop forms.

import { EVENT_CHOICES, WAIT_EVENTS } from '../units';
import { get, LIVE_STATUSES, post, type ProfilesPage, type ProfileView, type Schemas } from '../api';
import { hasRole, mayProfile } from '../auth';
import { h, localInputToIso, notice, when } from '../format';
import { href, type Route, type ViewScope } from '../router';
import { labelFilter, parseLabels, type Labels } from '../labels';

const STATUSES = ['', 'requested', 'dispatched', 'running', 'finished', 'stopped', 'failed', 'expired'];

export function targetText(target: Schemas['Target'] | null | undefined): string {
  if (target?.by === 'pid') return `pid ${target.value}`;
  if (target?.by === 'process_name') return target.value;
  if (target?.by) return `${target.by} ${target.value}`;
  return JSON.stringify(target ?? '');
}

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
  );
}

function row(p: ProfileView, refresh: () => void, query: Record<string, string | undefined>): HTMLElement {
  return h(
    'tr',
    { 'data-profile': p.id, 'data-status': p.status },
    h('td', {}, h('a', { href: `#/profiles/${p.id}` }, p.id.slice(0, 8))),
    h('td', {}, p.service),
    h('td', {}, p.host),
    h('td', {}, targetText(p.target)),
    h('td', {}, h('span', { class: `status ${p.status}` }, p.status), p.status_reason ? ` ${p.status_reason}` : ''),
    h('td', {}, when(p.created_at)),
    h('td', { class: 'num' }, `${p.duration_ms / 1000} s`),
    h('td', { class: 'num' }, `${p.frequency_hz} Hz`),
    h('td', {}, p.requested_by),
    h('td', {}, labelChips(p.labels, query)),
    h('td', {}, stopButton(p, refresh)),
  );
}

function startForm(onStarted: () => void): HTMLElement {
  const field = (name: string, attrs: Record<string, string | number> = {}) =>
    h('input', { name, id: `start-${name}`, ...attrs });
  const choice = (name: string, options: Array<[string, string]>) =>
    h('select', { name, id: `start-${name}` }, ...options.map(([value, text]) => h('option', { value }, text)));
  const hostInput = field('host', { required: 'required', list: 'known-hosts' });
  const hosts = h('datalist', { id: 'known-hosts' });
  void get<Schemas['HostsResponse']>('/api/v1/hosts')
    .then((r) => hosts.replaceChildren(...r.agents.filter((a) => a.live).map((a) => h('option', { value: a.host }))))
    .catch(() => undefined);
  const result = h('div', {});
  const form = h(
    'form',
    {
      class: 'start-form',
      onsubmit: async (e: Event) => {
        e.preventDefault();
        const data = new FormData(form);
        const val = (k: string) => String(data.get(k) ?? '').trim();
        const body: Schemas['StartRequest'] = { host: val('host'), duration_secs: Number(val('duration_secs')) };
        if (val('service')) body.service = val('service');
        if (val('pid')) body.pid = Number(val('pid'));
        if (val('process_name')) body.process_name = val('process_name');
        if (val('frequency_hz')) body.frequency_hz = Number(val('frequency_hz'));
        if (val('window_secs')) body.window_secs = Number(val('window_secs'));
        const options: Schemas['ProfileOptions'] = {};
        if (val('plugin')) options.plugin = val('plugin');
        if (val('event')) options.event = val('event');
        if (val('min_wait_us')) options.min_wait_us = Number(val('min_wait_us'));
        if (Object.keys(options).length) body.options = options;
        try {
          const labels = parseLabels(val('labels'));
          if (Object.keys(labels).length) body.labels = labels;
        } catch (err) {
          result.replaceChildren(notice('error', `Labels: ${(err as Error).message}`));
          return;
        }
        try {
          const p = await post<ProfileView>('/api/v1/profiles', body);
          result.replaceChildren(
            notice('info', `Started ${p.id} (${p.status}). `),
            h('a', { href: `#/profiles/${p.id}` }, 'Open it'),
          );
          onStarted();
        } catch (err) {
          result.replaceChildren(notice('error', `Start refused: ${(err as Error).message}`));
        }
      },
    },
    h('h3', {}, 'Start a profile'),
    h('label', {}, 'Host ', hostInput, hosts),
    h('label', {}, 'Process name ', field('process_name', { placeholder: 'e.g. cpu-split' })),
    h('label', {}, 'or PID ', field('pid', { type: 'number', min: 1 })),
    h('label', {}, 'Service ', field('service', { placeholder: 'defaults to the process name' })),
    h('label', {}, 'Duration (s) ', field('duration_secs', { type: 'number', min: 1, max: 3600, value: 10 })),
    h('label', {}, 'Frequency (Hz) ', field('frequency_hz', { type: 'number', min: 1, max: 10000, value: 99 })),
    h('label', {}, 'Window (s) ', field('window_secs', { type: 'number', min: 1, max: 300 })),
    h('label', {}, 'Labels ', field('labels', { placeholder: 'env=prod, team=checkout', size: 28 })),
    h('label', {}, 'Plugin ', choice('plugin', [['', 'detect'], ['native', 'native'], ['python', 'python'], ['jvm', 'jvm']])),
    h(
      'label',
      {},
      'Measure ',
      choice('event', EVENT_CHOICES),
    ),
    h(
      'label',
      { title: `off-CPU and lock profiles: leave out shorter waits (${WAIT_EVENTS.join(', ')})` },
      'Min wait (µs) ',
      field('min_wait_us', { type: 'number', min: 0, max: 10_000_000, placeholder: 'every wait' }),
    ),
    h('button', { type: 'submit', id: 'start-submit' }, 'Start'),
    result,
  );
  return form;
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
  const current: Record<string, string | undefined> = {};
  for (const k of ['service', 'host', 'status', 'since', 'until']) current[k] = q.get(k) ?? undefined;
  const draw = () => body.replaceChildren(...shown.map((p) => row(p, () => void refresh(), current)));
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
  return h(
    'section',
    { class: 'profiles' },
    h('h2', {}, 'Profiles'),
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
            (t) => h('th', {}, t),
          ),
        ),
      ),
      body,
    ),
    more,
    hasRole('profiler') ? startForm(() => void refresh()) : null,
  );
}
