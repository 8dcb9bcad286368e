// Schedules: everyone may list them and read each one's run history
// (failures with their reasons); admins create (targets by process name,
// PID, command line or cgroup), enable/disable, edit the cron and delete.
// Says so when the server has no schedules API.

import { EVENT_CHOICES } from '../units';
import { ApiError, del, get, patch, post, type Schemas } from '../api';
import { hasRole } from '../auth';
import { h, notice, reportChange, when } from '../format';
import { href, type ViewScope } from '../router';
import { selectionText } from '../runfmt';
import { targetText } from '../profilefmt';
import { historyCell, historyTable } from './schedulehistory';
import { hostPicker, targetPicker } from '../widgets/targetfields';

type Schedule = Schemas['Schedule'];
type ScheduleChange = Schemas['UpdateScheduleRequest'];

function createForm(message: HTMLElement, reload: () => void): HTMLElement {
  const input = (name: string, attrs: Record<string, string | number | boolean> = {}) =>
    h('input', { name, id: `schedule-${name}`, ...attrs });
  const service = input('service', { pattern: '[A-Za-z0-9._-]+' });
  const host = hostPicker('schedule');
  const target = targetPicker('schedule', service);
  const form = h(
    'form',
    {
      class: 'schedule-form',
      id: 'schedule-create',
      onsubmit: async (e: Event) => {
        e.preventDefault();
        const d = new FormData(form);
        const v = (k: string) => String(d.get(k) ?? '').trim();
        let targetBody;
        try {
          targetBody = target.fields(v('service'));
        } catch (err) {
          message.replaceChildren(notice('error', `Not created: ${(err as Error).message}.`));
          return;
        }
        const body: Schemas['CreateScheduleRequest'] = {
          name: v('name'),
          host: host.value(),
          cron: v('cron'),
          timezone: v('timezone') || 'UTC',
          duration_secs: Number(v('duration_secs')),
          ...targetBody,
        };
        if (v('service')) body.service = v('service');
        if (v('frequency_hz')) body.frequency_hz = Number(v('frequency_hz'));
        if (v('event')) body.options = { event: v('event') as NonNullable<Schemas['ProfileOptions']['event']> };
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
    host.root,
    ...target.root,
    h('label', {}, 'Service ', service),
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

/** A schedule's row and its (hidden until asked) history row. */
function scheduleRows(s: Schedule, actions: HTMLElement | null, columns: number): HTMLElement[] {
  const cell = h('td', { class: 'history' }, historyCell(null, null));
  const detail = h('tr', { class: 'history-detail', 'data-history': s.name, hidden: true }, h('td', { colspan: columns }));
  const toggle = h(
    'button',
    {
      type: 'button',
      class: 'history-toggle',
      'aria-expanded': 'false',
      onclick: () => {
        detail.hidden = !detail.hidden;
        toggle.setAttribute('aria-expanded', String(!detail.hidden));
        toggle.textContent = detail.hidden ? 'History' : 'Hide history';
      },
    },
    'History',
  );
  void get<Schemas['ScheduleWithRuns']>(`/api/v1/schedules/${s.id}`).then(
    (r) => {
      cell.replaceChildren(historyCell(r.runs, null), ' ', r.runs.length ? toggle : '');
      detail.firstElementChild!.replaceChildren(historyTable(r.runs));
    },
    (err: Error) => cell.replaceChildren(historyCell(null, err.message)),
  );
  const row = h(
    'tr',
    { 'data-schedule': s.name, 'data-enabled': String(s.enabled), 'data-id': s.id },
    h('td', {}, s.name),
    h(
      'td',
      {},
      s.run
        ? h(
            'span',
            { class: 'run-schedule' },
            `${s.service}: a run on ${selectionText(s.run.hosts)}${s.run.stratify_by?.length ? ` by ${s.run.stratify_by.join(', ')}` : ''} (${targetText(s.target)}) · `,
            h('a', { href: href('runs', { service: s.service }) }, 'its runs'),
          )
        : `${s.service}: ${targetText(s.target)} on ${s.host}`,
    ),
    h('td', {}, h('code', {}, s.cron)),
    h('td', {}, s.timezone),
    h('td', { class: 'num' }, `${s.duration_secs} s @ ${s.frequency_hz} Hz`),
    h('td', {}, s.enabled ? 'yes' : 'no'),
    h('td', {}, when(s.next_run_at)),
    h('td', {}, when(s.last_run_at)),
    cell,
    h('td', {}, actions),
  );
  return [row, detail];
}

export async function schedulesView(_route: unknown, scope: ViewScope): Promise<HTMLElement> {
  const admin = hasRole('admin');
  const message = h('div', {});
  const list = h('div', {});
  const page = h('section', { class: 'schedules' }, h('h2', {}, 'Schedules'), message, list);
  const act = (what: Promise<unknown>, done: string) => reportChange(message, what, done, load);
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
    const headers = ['name', 'target', 'cron', 'zone', 'duration', 'enabled', 'next run', 'last run', 'recent runs', ''];
    list.replaceChildren(
      schedules.length
        ? h(
            'table',
            { class: 'grid', id: 'schedules-table' },
            h('thead', {}, h('tr', {}, ...headers.map((t) => h('th', { class: t === 'duration' ? 'num' : '' }, t)))),
            h('tbody', {}, ...schedules.flatMap((s) => scheduleRows(s, actions(s), headers.length))),
          )
        : notice('info', 'No schedules yet.'),
    );
    return true;
  };
  const available = await load();
  if (admin && available) page.append(createForm(message, () => void load()));
  return page;
}
