// Runs: every run, newest first (one service's with `?service=`), live
// ones refreshing, and the run form at the top behind "Start a run"
// (opened on a service by `?start=<service>`, the services page's "Run…").

import { ApiError, get } from '../api';
import { hasRole } from '../auth';
import { h, notice } from '../format';
import { href, replaceQuery, type Route, type ViewScope } from '../router';
import { scheduleIdOf } from '../profilefmt';
import { isLiveRun, type Run } from '../runfmt';
import type { Schemas } from '../api';
import { scheduleNames } from '../widgets/requester';
import { runForm } from './runform';
import { runsTable } from './runparts';

export async function runsView(route: Route, scope: ViewScope): Promise<HTMLElement> {
  const q = route.query;
  const service = q.get('service') ?? '';
  const list = h('div', { id: 'runs-list' }, h('p', { class: 'muted' }, 'Listing runs…'));
  let runs: Run[] = [];
  const load = async () => {
    try {
      runs = (await get<Schemas['RunsResponse']>('/api/v1/runs', { service: service || undefined, limit: 100 })).runs;
    } catch (err) {
      const unavailable = err instanceof ApiError && err.notAvailable;
      list.replaceChildren(notice(unavailable ? 'info' : 'error', unavailable ? 'Runs are not available on this server.' : (err as Error).message));
      return;
    }
    const wanted = runs.map((r) => scheduleIdOf(r.requested_by)).filter((id): id is string => id !== null);
    const names = wanted.length ? await scheduleNames(wanted) : new Map<string, string>();
    if (!scope.active) return;
    list.replaceChildren(
      runs.length
        ? runsTable(runs, names)
        : notice('info', service ? `No run of ${service} yet.` : 'No run yet: start one from a service, or here.'),
    );
  };
  await load();
  scope.every(3000, () => {
    if (runs.some((r) => isLiveRun(r.status))) void load();
  });
  const filter = h(
    'form',
    {
      class: 'filters',
      onsubmit: (e: Event) => {
        e.preventDefault();
        const value = String(new FormData(filter).get('service') ?? '').trim();
        location.hash = href('runs', { service: value || undefined });
      },
    },
    h('label', {}, 'Service ', h('input', { name: 'service', id: 'runs-service', value: service })),
    h('button', { type: 'submit' }, 'Filter'),
  );
  const start = q.get('start');
  const panel = hasRole('profiler')
    ? h(
        'section',
        { class: 'start-panel', id: 'run-panel', hidden: !start },
        h('h3', {}, 'Start a run'),
        h('p', { class: 'muted' }, 'One profile per chosen host of a defined service, all at once, merged into one flame graph.'),
        runForm(start && start !== '1' ? start : service, (run) => {
          location.hash = `#/runs/${run.id}`;
        }),
      )
    : null;
  const toggle = panel
    ? h(
        'button',
        {
          id: 'run-toggle',
          class: 'primary',
          type: 'button',
          'aria-expanded': String(!panel.hidden),
          'aria-controls': 'run-panel',
          onclick: (e: Event) => {
            panel.hidden = !panel.hidden;
            (e.currentTarget as HTMLElement).setAttribute('aria-expanded', String(!panel.hidden));
            replaceQuery({ start: panel.hidden ? undefined : start || service || '1' });
            if (!panel.hidden) panel.querySelector<HTMLElement>('select, input')?.focus();
          },
        },
        'Start a run',
      )
    : null;
  return h(
    'section',
    { class: 'runs' },
    h('div', { class: 'page-head' }, h('h2', {}, service ? `Runs of ${service}` : 'Runs'), toggle, h('a', { href: '#/services' }, 'Services')),
    panel,
    filter,
    list,
  );
}
