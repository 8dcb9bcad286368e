// Services: every defined service with its target and owning team, the
// live hosts running it with the labels their agents report (read again
// every few seconds), whether it is profiled always, and its triggers;
// "Run…" opens the run form on it, and admins define and delete services,
// turn their continuous profiles on, change them and turn them off, and
// create, turn off and delete their triggers.

import { ApiError, del, get, post, type Schemas } from '../api';
import { hasRole, mayProfile } from '../auth';
import { h, notice, reportChange, when } from '../format';
import { href, type ViewScope } from '../router';
import { targetFields, targetText, TARGET_KINDS, type TargetKind } from '../profilefmt';
import { runErrorField, type Service, type ServiceHost } from '../runfmt';
import type { ContinuousProfile } from '../continuousfmt';
import { triggersByService, type Trigger } from '../triggerfmt';
import { continuousCell, continuousPanel, type ContinuousActions } from './continuous';
import { triggerPanel, triggersCell, type TriggerActions } from './triggers';

/** Hosts listed per service before "show all". */
const HOSTS_SHOWN = 8;

function hostList(hosts: ServiceHost[], liveWithin: number, all: boolean, showAll: () => void): HTMLElement {
  if (!hosts.length)
    return h('span', { class: 'muted' }, `no live host (none reported it in the last ${liveWithin} s)`);
  const sorted = hosts.slice().sort((a, b) => a.host.localeCompare(b.host));
  const listed = all ? sorted : sorted.slice(0, HOSTS_SHOWN);
  return h(
    'div',
    { class: 'service-hosts' },
    h('div', { class: 'muted' }, `${hosts.length} live ${hosts.length === 1 ? 'host' : 'hosts'}`),
    h(
      'ul',
      {},
      ...listed.map((x) =>
        h(
          'li',
          { 'data-host': x.host, title: `agent ${x.agent_id}, last seen ${when(x.last_seen)}` },
          h('b', {}, x.host),
          ' ',
          ...Object.keys(x.labels)
            .sort()
            .map((k) => h('span', { class: 'chip', 'data-label': k }, `${k}=${x.labels[k]}`)),
        ),
      ),
    ),
    listed.length < sorted.length
      ? h('button', { type: 'button', class: 'hosts-more', onclick: showAll }, `show all ${sorted.length}`)
      : null,
  );
}

/** A service's row; its hosts cell fills in (and refreshes) on its own. */
function serviceRow(s: Service, continuous: HTMLElement, triggers: HTMLElement, actions: HTMLElement): { row: HTMLElement; reload: () => Promise<void> } {
  const cell = h('td', { class: 'hosts' }, h('span', { class: 'muted' }, 'listing…'));
  let all = false;
  let last: Schemas['ServiceHostsResponse'] | null = null;
  const paint = () => last && cell.replaceChildren(hostList(last.hosts, last.live_within_secs, all, () => ((all = true), paint())));
  const reload = async () => {
    try {
      last = await get<Schemas['ServiceHostsResponse']>(`/api/v1/services/${encodeURIComponent(s.name)}/hosts`);
      cell.dataset.hosts = String(last.hosts.length);
      paint();
    } catch (err) {
      cell.replaceChildren(h('span', { class: 'muted' }, `hosts: ${(err as Error).message}`));
    }
  };
  const row = h(
    'tr',
    { 'data-service': s.name },
    h('td', {}, h('b', {}, s.name), s.description ? h('div', { class: 'muted' }, s.description) : null),
    h('td', {}, targetText(s.target)),
    h('td', {}, s.owner_team || h('span', { class: 'muted' }, '—')),
    cell,
    continuous,
    triggers,
    h('td', { class: 'service-actions' }, actions),
  );
  return { row, reload };
}

/** The define form (admins): a name and its processes on each host. */
function createForm(message: HTMLElement, reload: () => void): HTMLElement {
  const input = (name: string, attrs: Record<string, string | number | boolean> = {}) => h('input', { name, id: `service-${name}`, ...attrs });
  const kinds = TARGET_KINDS.filter((k) => k.by !== 'pid');
  const by = h('select', { name: 'target_by', id: 'service-target-by' }, ...kinds.map((k) => h('option', { value: k.by }, k.label)));
  const target = input('target', { size: 28, placeholder: kinds[0].placeholder });
  by.addEventListener('change', () => (target.placeholder = kinds.find((k) => k.by === by.value)!.placeholder));
  const result = h('div', { id: 'service-create-result' });
  const form: HTMLFormElement = h(
    'form',
    {
      class: 'service-form',
      id: 'service-create',
      onsubmit: async (e: Event) => {
        e.preventDefault();
        const d = new FormData(form);
        const v = (k: string) => String(d.get(k) ?? '').trim();
        for (const el of form.querySelectorAll('[aria-invalid]')) el.removeAttribute('aria-invalid');
        let fields;
        try {
          fields = targetFields(by.value as TargetKind, v('target'), v('name'));
        } catch (err) {
          result.replaceChildren(notice('error', `Not defined: ${(err as Error).message}.`));
          target.setAttribute('aria-invalid', 'true');
          return;
        }
        const body: Schemas['CreateServiceRequest'] = { name: v('name'), ...fields };
        if (v('owner_team')) body.owner_team = v('owner_team');
        if (v('description')) body.description = v('description');
        try {
          await post<Service>('/api/v1/services', body);
          result.replaceChildren(notice('info', `Service ${body.name} defined: its agents report it within a heartbeat or two.`));
          message.replaceChildren();
          form.reset();
          reload();
        } catch (err) {
          const text = (err as Error).message;
          result.replaceChildren(notice('error', `Not defined: ${text}`));
          const field = runErrorField(text);
          const el = field === 'name' || /name/.test(text) ? form.querySelector('[name="name"]') : field ? target : null;
          el?.setAttribute('aria-invalid', 'true');
        }
      },
    },
    h('h3', {}, 'Define a service'),
    h('label', {}, 'Name ', input('name', { required: true, pattern: '[A-Za-z0-9._-]+', placeholder: 'checkout' })),
    h('label', {}, 'Processes by ', by),
    h('label', {}, 'Target ', target),
    h('label', {}, 'Owning team ', input('owner_team', { placeholder: 'payments' })),
    h('label', {}, 'Description ', input('description', { size: 30 })),
    h('button', { type: 'submit', id: 'service-create-submit' }, 'Define'),
    result,
  );
  return form;
}

/** What `list` read, by service; the server's refusal as text (after
 *  `what`) when it could not list them, and null when it has no such
 *  route (a server from before them). */
async function listed<T>(list: () => Promise<Map<string, T>>, what: string): Promise<Map<string, T> | string | null> {
  try {
    return await list();
  } catch (err) {
    return err instanceof ApiError && err.notAvailable ? null : `${what}: ${(err as Error).message}`;
  }
}

/** Each service's continuous profile. */
const continuousByService = () =>
  listed(async () => {
    const { continuous } = await get<Schemas['ContinuousProfilesResponse']>('/api/v1/continuous');
    return new Map(continuous.map((c) => [c.service, c]));
  }, 'always on');

/** Each service's triggers. */
const triggersOfServices = () =>
  listed(async () => triggersByService((await get<Schemas['TriggersResponse']>('/api/v1/triggers')).triggers), 'triggers');

export async function servicesView(_route: unknown, scope: ViewScope): Promise<HTMLElement> {
  const admin = hasRole('admin');
  const message = h('div', { id: 'services-message' });
  const list = h('div', {});
  let reloads: Array<() => Promise<void>> = [];
  const act = (change: Promise<unknown>, done: string) => reportChange(message, change, done, load);
  const saved = (done: string) => {
    message.replaceChildren(notice('info', done));
    void load();
  };
  const panel = admin ? continuousPanel(saved) : null;
  const triggerForm = admin ? triggerPanel(saved) : null;
  // A row's change makes what a form was opened on stale: it closes. One
  // form is open at a time.
  const closeForms = () => (panel?.close(), triggerForm?.close());
  const continuousActions: ContinuousActions | null = panel && {
    open: (service, current) => (triggerForm?.close(), panel.open(service, current)),
    act: (change, done) => (closeForms(), act(change, done)),
  };
  const triggerActions: TriggerActions | null = triggerForm && {
    open: (service) => (panel?.close(), triggerForm.open(service)),
    act: (change, done) => (closeForms(), act(change, done)),
  };
  const continuous = (s: Service, known: Map<string, ContinuousProfile> | string | null) =>
    known === null || typeof known === 'string'
      ? h('td', { class: 'continuous muted' }, known ?? '')
      : continuousCell(s.name, known.get(s.name) ?? null, continuousActions);
  const triggers = (s: Service, known: Map<string, Trigger[]> | string | null) =>
    known === null || typeof known === 'string'
      ? h('td', { class: 'triggers muted' }, known ?? '')
      : triggersCell(s.name, known.get(s.name) ?? [], triggerActions);
  const actions = (s: Service) =>
    h(
      'span',
      {},
      mayProfile(s.name) ? h('a', { class: 'run-service', role: 'button', href: href('runs', { start: s.name }) }, 'Run…') : null,
      ' ',
      h('a', { href: href('runs', { service: s.name }) }, 'Runs'),
      ' · ',
      h('a', { href: href('aggregate', { service: s.name }) }, 'Aggregate'),
      ' ',
      admin
        ? h(
            'button',
            {
              class: 'service-delete',
              onclick: () =>
                confirm(`Delete service ${s.name}? Its runs are kept.`) &&
                void act(del(`/api/v1/services/${encodeURIComponent(s.name)}`), `${s.name} deleted.`),
            },
            'Delete',
          )
        : null,
    );
  const load = async (): Promise<boolean> => {
    let services: Service[];
    const known = continuousByService();
    const knownTriggers = triggersOfServices();
    try {
      services = (await get<Schemas['ServicesResponse']>('/api/v1/services')).services;
    } catch (err) {
      const unavailable = err instanceof ApiError && err.notAvailable;
      list.replaceChildren(notice(unavailable ? 'info' : 'error', unavailable ? 'Services are not available on this server.' : (err as Error).message));
      return false;
    }
    const continuousOf = await known;
    const triggersOf = await knownTriggers;
    const rows = services
      .slice()
      .sort((a, b) => a.name.localeCompare(b.name))
      .map((s) => serviceRow(s, continuous(s, continuousOf), triggers(s, triggersOf), actions(s)));
    reloads = rows.map((r) => r.reload);
    list.replaceChildren(
      rows.length
        ? h(
            'table',
            { class: 'grid', id: 'services-table' },
            h('thead', {}, h('tr', {}, ...['service', 'processes', 'owning team', 'live hosts and their labels', 'profiled always', 'triggers', ''].map((t) => h('th', {}, t)))),
            h('tbody', {}, ...rows.map((r) => r.row)),
          )
        : notice('info', admin ? 'No service defined yet: define one below.' : 'No service defined yet (admins define them).'),
    );
    await Promise.all(reloads.map((r) => r()));
    return true;
  };
  const available = await load();
  // Hosts come and go: read them again while the page is shown.
  scope.every(5000, () => void Promise.all(reloads.map((r) => r())));
  return h(
    'section',
    { class: 'services' },
    h('div', { class: 'page-head' }, h('h2', {}, 'Services'), h('a', { href: '#/runs' }, 'Runs')),
    h(
      'p',
      { class: 'muted' },
      'A service is its processes on every host; agents report which of their hosts run it. A run profiles it on all, K or P% of those hosts at once.',
    ),
    message,
    list,
    available ? panel?.root : null,
    available ? triggerForm?.root : null,
    admin && available ? createForm(message, () => void load()) : null,
  );
}
