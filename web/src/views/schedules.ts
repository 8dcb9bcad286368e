// Schedules: everyone may list them; admins create, enable/disable, edit
// the cron and delete. Says so when the server has no schedules API.

import { EVENT_CHOICES } from '../units';
import { ApiError, del, get, patch, post, type Schemas } from '../api';
import { hasRole } from '../auth';
import { h, notice, when } from '../format';
import { type ViewScope } from '../router';
import { targetText } from './profiles';

type Schedule = Schemas['Schedule'];
type ScheduleChange = Schemas['UpdateScheduleRequest'];

function createForm(message: HTMLElement, reload: () => void): HTMLElement {
  const input = (name: string, attrs: Record<string, string | number | boolean> = {}) =>
    h('input', { name, id: `schedule-${name}`, ...attrs });
  const form = h(
    'form',
    {
      class: 'schedule-form',
      id: 'schedule-create',
      onsubmit: async (e: Event) => {
        e.preventDefault();
        const d = new FormData(form);
        const v = (k: string) => String(d.get(k) ?? '').trim();
        const body: Schemas['CreateScheduleRequest'] = {
          name: v('name'),
          host: v('host'),
          cron: v('cron'),
          timezone: v('timezone') || 'UTC',
          duration_secs: Number(v('duration_secs')),
        };
        if (v('process_name')) body.process_name = v('process_name');
        if (v('pid')) body.pid = Number(v('pid'));
        if (v('service')) body.service = v('service');
        if (v('frequency_hz')) body.frequency_hz = Number(v('frequency_hz'));
        if (v('event')) body.options = { event: v('event') };
        try {
          await post('/api/v1/schedules', body);
          message.replaceChildren(notice('info', `Schedule ${body.name} created.`));
          reload();
        } catch (err) {
          message.replaceChildren(notice('error', (err as Error).message));
        }
      },
    },
    h('h3', {}, 'New schedule'),
    h('label', {}, 'Name ', input('name', { required: true })),
    h('label', {}, 'Host ', input('host', { required: true })),
    h('label', {}, 'Process name ', input('process_name')),
    h('label', {}, 'or PID ', input('pid', { type: 'number', min: 1 })),
    h('label', {}, 'Service ', input('service')),
    h('label', {}, 'Cron ', input('cron', { required: true, placeholder: '*/15 * * * * (UTC unless a zone is given)' })),
    h('label', {}, 'Time zone ', input('timezone', { value: 'UTC' })),
    h('label', {}, 'Duration (s) ', input('duration_secs', { type: 'number', min: 1, max: 3600, value: 30 })),
    h('label', {}, 'Frequency (Hz) ', input('frequency_hz', { type: 'number', min: 1, max: 10000, value: 99 })),
    h(
      'label',
      {},
      'Measure ',
      h('select', { name: 'event', id: 'schedule-event' }, ...EVENT_CHOICES.map(([value, text]) => h('option', { value }, text))),
    ),
    h('button', { type: 'submit' }, 'Create'),
  );
  return form;
}

export async function schedulesView(_route: unknown, scope: ViewScope): Promise<HTMLElement> {
  const admin = hasRole('admin');
  const message = h('div', {});
  const list = h('div', {});
  const page = h('section', { class: 'schedules' }, h('h2', {}, 'Schedules'), message, list);
  const act = async (what: Promise<unknown>, done: string) => {
    try {
      await what;
      message.replaceChildren(notice('info', done));
    } catch (err) {
      message.replaceChildren(notice('error', (err as Error).message));
    }
    await load();
  };
  const actions = (s: Schedule) => {
    if (!admin) return null;
    return h(
      'span',
      { class: 'schedule-actions' },
      h(
        'button',
        { onclick: () => void act(patch(`/api/v1/schedules/${s.id}`, { enabled: !s.enabled } satisfies ScheduleChange), `${s.name} ${s.enabled ? 'disabled' : 'enabled'}.`) },
        s.enabled ? 'Disable' : 'Enable',
      ),
      h(
        'button',
        {
          onclick: () => {
            const cron = prompt(`New cron for ${s.name}`, s.cron);
            if (cron) void act(patch(`/api/v1/schedules/${s.id}`, { cron } satisfies ScheduleChange), `${s.name} now runs at "${cron}".`);
          },
        },
        'Edit cron',
      ),
      h(
        'button',
        { onclick: () => confirm(`Delete schedule ${s.name}?`) && void act(del(`/api/v1/schedules/${s.id}`), `${s.name} deleted.`) },
        'Delete',
      ),
    );
  };
  const load = async () => {
    if (!scope.active) return;
    let schedules: Schedule[];
    try {
      const r = await get<Schemas['SchedulesResponse'] | Schedule[]>('/api/v1/schedules');
      schedules = Array.isArray(r) ? r : r.schedules;
    } catch (err) {
      const unavailable = err instanceof ApiError && err.notAvailable;
      list.replaceChildren(
        notice(unavailable ? 'info' : 'error', unavailable ? 'Schedules are not available on this server.' : (err as Error).message),
      );
      return false;
    }
    list.replaceChildren(
      schedules.length
        ? h(
            'table',
            { class: 'grid', id: 'schedules-table' },
            h(
              'thead',
              {},
              h('tr', {}, ...['name', 'target', 'cron', 'zone', 'duration', 'enabled', 'next run', 'last run', ''].map((t) => h('th', {}, t))),
            ),
            h(
              'tbody',
              {},
              ...schedules.map((s) =>
                h(
                  'tr',
                  { 'data-schedule': s.name, 'data-enabled': String(s.enabled) },
                  h('td', {}, s.name),
                  h('td', {}, `${s.service}: ${targetText(s.target)} on ${s.host}`),
                  h('td', {}, h('code', {}, s.cron)),
                  h('td', {}, s.timezone),
                  h('td', { class: 'num' }, `${s.duration_secs} s @ ${s.frequency_hz} Hz`),
                  h('td', {}, s.enabled ? 'yes' : 'no'),
                  h('td', {}, when(s.next_run_at)),
                  h('td', {}, when(s.last_run_at)),
                  h('td', {}, actions(s)),
                ),
              ),
            ),
          )
        : notice('info', 'No schedules yet.'),
    );
    return true;
  };
  const available = await load();
  if (admin && available) page.append(createForm(message, () => void load()));
  return page;
}
