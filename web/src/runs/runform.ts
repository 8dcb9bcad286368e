// The run form (the runs page's "Start a run", or a service's "Run…"):
// a defined service from the pick-list, which of its live hosts (all, K,
// or P%), the labels its hosts report to stratify by, the seed, what and
// how long each member samples, and the stop rule (the top N shares to
// ±ε). The server's refusal shows under the form with its field marked.

import { get, post, type Schemas } from '../api';
import { h, notice } from '../format';
import { FormError, labelKeys, labelValues, runErrorField, runRequest, type Run, type RunFormFields, type ServiceHost } from '../runfmt';
import { EVENT_CHOICES } from '../units';

type Attrs = Record<string, string | number | boolean | undefined>;

function mark(form: HTMLFormElement, field: string | null): void {
  for (const el of form.querySelectorAll('[aria-invalid]')) el.removeAttribute('aria-invalid');
  if (!field) return;
  const el = form.querySelector<HTMLElement>(`[data-field="${field}"]`) ?? form.querySelector<HTMLElement>(`[name="${field}"]`);
  if (!el) return;
  el.setAttribute('aria-invalid', 'true');
  (el.matches('input, select') ? el : el.querySelector<HTMLElement>('input, select'))?.focus();
}

/** The stratify checkboxes for a service's live hosts: each label they
 *  report, with the values seen. */
function stratifyChoices(box: HTMLElement, hosts: ServiceHost[], ticked: Set<string>): void {
  const keys = labelKeys(hosts);
  if (!keys.length) {
    box.replaceChildren(h('span', { class: 'muted' }, hosts.length ? 'its hosts report no labels' : 'no live host reports labels yet'));
    return;
  }
  box.replaceChildren(
    ...keys.map((k) => {
      const values = labelValues(hosts, k);
      const shown = values.length > 3 ? `${values.slice(0, 3).join(', ')}, … (${values.length})` : values.join(', ');
      return h(
        'label',
        { class: 'stratify-choice', title: `values: ${values.join(', ')}` },
        h('input', { type: 'checkbox', name: 'stratify_by', value: k, id: `run-stratify-${k}`, checked: ticked.has(k) }),
        ` ${k} `,
        h('span', { class: 'muted' }, `(${shown})`),
      );
    }),
  );
}

/** The run form; `initial` is the service chosen first, `onStarted` gets
 *  the run the server started. */
export function runForm(initial: string, onStarted: (run: Run) => void): HTMLElement {
  const input = (name: string, attrs: Attrs = {}) => h('input', { name, id: `run-${name}`, ...attrs });
  const service = h('select', { name: 'service', id: 'run-service', required: true }, h('option', { value: '' }, 'listing services…'));
  const live = h('span', { class: 'muted', id: 'run-live' });
  const stratify = h('span', { class: 'stratify', id: 'run-stratify', 'data-field': 'stratify_by' });
  const result = h('div', { id: 'run-result', 'aria-live': 'polite' });
  const submit = h('button', { type: 'submit', id: 'run-submit', class: 'primary' }, 'Start run');
  const radios = new Map<string, HTMLInputElement>();
  const radio = (value: string, text: string, extra: HTMLElement | null = null) => {
    const r = h('input', { type: 'radio', name: 'hosts', value, id: `run-hosts-${value}`, checked: value === 'all' });
    radios.set(value, r);
    return h('label', {}, r, ` ${text}`, extra ? ' ' : '', extra);
  };
  const count = input('count', { type: 'number', min: 1, value: 1, size: 5, 'aria-label': 'number of hosts' });
  const percent = input('percent', { type: 'number', min: 0.01, max: 100, step: 'any', value: 10, size: 5, 'aria-label': 'percent of hosts' });
  // Typing a number picks its choice.
  count.addEventListener('input', () => radios.get('count') && (radios.get('count')!.checked = true));
  percent.addEventListener('input', () => radios.get('percent') && (radios.get('percent')!.checked = true));
  const stop = input('stop', { type: 'checkbox', value: 'on', checked: true });
  const top = input('top', { type: 'number', min: 1, value: 3, size: 4, 'aria-label': 'top shares' });
  const epsilon = input('max_stderr', { type: 'number', min: 0.01, max: 99, step: 'any', value: 1, size: 5, 'aria-label': 'epsilon in percentage points' });
  const syncStop = () => {
    top.disabled = !stop.checked;
    epsilon.disabled = !stop.checked;
  };
  stop.addEventListener('change', syncStop);

  let hostsToken = 0;
  const loadHosts = async () => {
    const name = service.value;
    const mine = ++hostsToken;
    const ticked = new Set(Array.from(stratify.querySelectorAll<HTMLInputElement>('input:checked'), (c) => c.value));
    if (!name) {
      live.textContent = '';
      stratify.replaceChildren();
      return;
    }
    live.textContent = 'listing its live hosts…';
    try {
      const r = await get<Schemas['ServiceHostsResponse']>(`/api/v1/services/${encodeURIComponent(name)}/hosts`);
      if (mine !== hostsToken) return;
      live.textContent = `${r.hosts.length} live ${r.hosts.length === 1 ? 'host runs' : 'hosts run'} it`;
      live.dataset.hosts = String(r.hosts.length);
      stratifyChoices(stratify, r.hosts, ticked);
    } catch (err) {
      if (mine !== hostsToken) return;
      live.textContent = `its hosts: ${(err as Error).message}`;
      stratify.replaceChildren();
    }
  };
  service.addEventListener('change', () => void loadHosts());
  void get<Schemas['ServicesResponse']>('/api/v1/services').then(
    (r) => {
      const names = r.services.map((s) => s.name).sort();
      service.replaceChildren(
        h('option', { value: '', disabled: true }, names.length ? 'pick a service' : 'no service defined yet'),
        ...names.map((n) => h('option', { value: n }, n)),
      );
      service.value = names.includes(initial) ? initial : names.length === 1 ? names[0] : '';
      void loadHosts();
    },
    (err: Error) => service.replaceChildren(h('option', { value: '' }, `services: ${err.message}`)),
  );

  const form: HTMLFormElement = h(
    'form',
    {
      class: 'run-form',
      id: 'run-form',
      onsubmit: async (e: Event) => {
        e.preventDefault();
        const data = new FormData(form);
        const fields: RunFormFields = {};
        for (const [k, v] of data.entries()) if (k !== 'stratify_by') (fields as Record<string, string>)[k] = String(v);
        const stratifyBy = data.getAll('stratify_by').map(String);
        let body;
        try {
          body = runRequest(fields, stratifyBy);
        } catch (err) {
          result.replaceChildren(notice('error', `Not started: ${(err as Error).message}.`));
          mark(form, err instanceof FormError ? err.field : null);
          return;
        }
        mark(form, null);
        submit.disabled = true;
        result.replaceChildren(h('p', { class: 'muted' }, 'Choosing hosts and starting…'));
        try {
          const run = await post<Run>('/api/v1/runs', body);
          result.replaceChildren(
            h('div', { class: 'notice info', role: 'status' }, `Run ${run.id} started (${run.status}). `, h('a', { href: `#/runs/${run.id}`, id: 'run-open' }, 'Open it')),
          );
          onStarted(run);
        } catch (err) {
          const message = (err as Error).message;
          result.replaceChildren(notice('error', `Run refused: ${message}`));
          mark(form, runErrorField(message));
        } finally {
          submit.disabled = false;
        }
      },
    },
    h('label', {}, 'Service ', service, ' ', live),
    h(
      'fieldset',
      { class: 'run-hosts', 'data-field': 'hosts' },
      h('legend', {}, 'Hosts'),
      radio('all', 'all live hosts'),
      radio('count', 'K hosts:', count),
      radio('percent', 'P% of them:', percent),
      h('label', { title: 'refuse (422) rather than take every host when K is more than the live hosts' }, input('strict', { type: 'checkbox', value: 'on' }), ' strict'),
    ),
    h('fieldset', { class: 'run-stratify' }, h('legend', {}, 'Stratify by (the labels its hosts report)'), stratify),
    h('label', {}, 'Seed ', input('seed', { type: 'number', min: 0, step: 1, placeholder: 'random, recorded', size: 12 })),
    h('label', {}, 'Max duration (s) ', input('duration_secs', { type: 'number', min: 1, max: 3600, value: 30, required: true })),
    h('label', {}, 'Frequency (Hz) ', input('frequency_hz', { type: 'number', min: 1, max: 10000, value: 99 })),
    h('label', {}, 'Window (s) ', input('window_secs', { type: 'number', min: 1, max: 300, placeholder: 'default' })),
    h(
      'label',
      {},
      'Plugin ',
      h('select', { name: 'plugin', id: 'run-plugin' }, ...[['', 'detect'], ['native', 'native'], ['python', 'python'], ['jvm', 'jvm']].map(([v, t]) => h('option', { value: v }, t))),
    ),
    h('label', {}, 'Measure ', h('select', { name: 'event', id: 'run-event' }, ...EVENT_CHOICES.map(([v, t]) => h('option', { value: v }, t)))),
    h(
      'fieldset',
      { class: 'run-stop' },
      h('legend', {}, 'Stop rule'),
      h('label', {}, stop, ' stop once the top '),
      top,
      h('label', { for: 'run-max_stderr' }, ' shares each have a standard error of at most ±'),
      epsilon,
      h('span', {}, ' percentage points'),
    ),
    submit,
    result,
  );
  syncStop();
  return form;
}
