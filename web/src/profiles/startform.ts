// The start form, at the top of the profiles page behind its "Start a
// profile" button: a live host from the pick-list, the target by process
// name, PID, command line or cgroup, and how to sample. The answer shows
// right under the button the user pressed.

import { post, type ProfileView, type Schemas } from '../api';
import { h, notice } from '../format';
import { parseLabels } from '../labels';
import { EVENT_CHOICES, WAIT_EVENTS } from '../units';
import { hostPicker, targetPicker } from '../widgets/targetfields';

export function startForm(onStarted: (p: ProfileView) => void, initialHost = ''): HTMLElement {
  const field = (name: string, attrs: Record<string, string | number> = {}) =>
    h('input', { name, id: `start-${name}`, ...attrs });
  const choice = (name: string, options: Array<[string, string]>) =>
    h('select', { name, id: `start-${name}` }, ...options.map(([value, text]) => h('option', { value }, text)));
  const service = field('service', { placeholder: 'defaults to the process name', pattern: '[A-Za-z0-9._-]+' });
  const host = hostPicker('start', initialHost);
  const target = targetPicker('start', service);
  const result = h('div', { id: 'start-result', 'aria-live': 'polite' });
  const submit = h('button', { type: 'submit', id: 'start-submit' }, 'Start');
  const form = h(
    'form',
    {
      class: 'start-form',
      id: 'start-form',
      onsubmit: async (e: Event) => {
        e.preventDefault();
        const data = new FormData(form);
        const val = (k: string) => String(data.get(k) ?? '').trim();
        const refuse = (text: string) => result.replaceChildren(notice('error', text));
        let targetBody;
        try {
          targetBody = target.fields(val('service'));
        } catch (err) {
          return refuse(`Not started: ${(err as Error).message}.`);
        }
        if (!host.value()) return refuse('Not started: pick a host.');
        const body: Schemas['StartRequest'] = { host: host.value(), duration_secs: Number(val('duration_secs')), ...targetBody };
        if (val('service')) body.service = val('service');
        if (val('frequency_hz')) body.frequency_hz = Number(val('frequency_hz'));
        if (val('window_secs')) body.window_secs = Number(val('window_secs'));
        const options: Schemas['ProfileOptions'] = {};
        if (val('plugin')) options.plugin = val('plugin') as Schemas['ProfileOptions']['plugin'];
        if (val('event')) options.event = val('event') as Schemas['ProfileOptions']['event'];
        if (val('min_wait_us')) options.min_wait_us = Number(val('min_wait_us'));
        if (data.get('include_children')) options.include_children = true;
        if (Object.keys(options).length) body.options = options;
        try {
          const labels = parseLabels(val('labels'));
          if (Object.keys(labels).length) body.labels = labels;
        } catch (err) {
          return refuse(`Labels: ${(err as Error).message}`);
        }
        submit.disabled = true;
        result.replaceChildren(h('p', { class: 'muted' }, 'Starting…'));
        try {
          const p = await post<ProfileView>('/api/v1/profiles', body);
          result.replaceChildren(
            h(
              'div',
              { class: 'notice info', role: 'status' },
              `Started ${p.id} (${p.status}) on ${p.host}. `,
              h('a', { href: `#/profiles/${p.id}`, id: 'start-open' }, 'Open it'),
              ' — it is marked in the list below.',
            ),
          );
          onStarted(p);
        } catch (err) {
          refuse(`Start refused: ${(err as Error).message}`);
        } finally {
          submit.disabled = false;
        }
      },
    },
    host.root,
    ...target.root,
    h('label', {}, 'Service ', service),
    h('label', {}, 'Duration (s) ', field('duration_secs', { type: 'number', min: 1, max: 3600, value: 10 })),
    h('label', {}, 'Frequency (Hz) ', field('frequency_hz', { type: 'number', min: 1, max: 10000, value: 99 })),
    h('label', {}, 'Window (s) ', field('window_secs', { type: 'number', min: 1, max: 300 })),
    h('label', {}, 'Labels ', field('labels', { placeholder: 'env=prod, team=checkout', size: 28 })),
    h('label', {}, 'Plugin ', choice('plugin', [['', 'detect'], ['native', 'native'], ['python', 'python'], ['jvm', 'jvm']])),
    h('label', {}, 'Measure ', choice('event', EVENT_CHOICES)),
    h(
      'label',
      { title: `off-CPU and lock profiles: leave out shorter waits (${WAIT_EVENTS.join(', ')})` },
      'Min wait (µs) ',
      field('min_wait_us', { type: 'number', min: 0, max: 10_000_000, placeholder: 'every wait' }),
    ),
    h(
      'label',
      { title: 'PID targets: also profile the processes it forks, now and later' },
      field('include_children', { type: 'checkbox', value: 'on' }),
      ' With children',
    ),
    submit,
    result,
  );
  return form;
}
