// A schedule's run history (`GET /api/v1/schedules/{id}`: its last 50
// firings): a strip of one mark per firing, a count of failures with the
// latest reason, and the full table of firings with their reasons.

import type { Schemas } from '../api';
import { h, when } from '../format';

type RunView = Schemas['RunView'];

const OUTCOME_TEXT: Record<Schemas['RunOutcome'], string> = {
  started: 'started',
  missed: 'missed',
  skipped_busy: 'skipped (busy)',
  failed: 'failed',
};

/** Counts of a history's outcomes, and its latest firing that started
 *  nothing (failed, missed or skipped). */
export function historySummary(runs: RunView[]): { total: number; failed: number; missed: number; lastProblem: RunView | null } {
  const newest = runs.slice().sort((a, b) => b.fired_at.localeCompare(a.fired_at));
  return {
    total: runs.length,
    failed: runs.filter((r) => r.outcome === 'failed').length,
    missed: runs.filter((r) => r.outcome === 'missed' || r.outcome === 'skipped_busy').length,
    lastProblem: newest.find((r) => r.outcome !== 'started') ?? null,
  };
}

/** The cell beside a schedule: marks oldest to newest, then the counts. */
export function historyCell(runs: RunView[] | null, error: string | null): HTMLElement {
  if (error) return h('span', { class: 'muted' }, `history unavailable: ${error}`);
  if (!runs) return h('span', { class: 'muted' }, 'loading…');
  if (!runs.length) return h('span', { class: 'muted' }, 'no runs yet');
  const s = historySummary(runs);
  const oldestFirst = runs.slice().sort((a, b) => a.fired_at.localeCompare(b.fired_at));
  return h(
    'span',
    { class: 'run-history' },
    h(
      'span',
      { class: 'run-strip', 'aria-hidden': 'true' },
      ...oldestFirst.map((r) =>
        h('span', { class: `run-mark ${r.outcome}`, title: `${when(r.scheduled_for)}: ${OUTCOME_TEXT[r.outcome]}${r.detail ? ` — ${r.detail}` : ''}` }),
      ),
    ),
    ` ${s.total} ${s.total === 1 ? 'run' : 'runs'}`,
    s.failed ? h('span', { class: 'run-failed-count' }, `, ${s.failed} failed`) : '',
    s.missed ? `, ${s.missed} missed or skipped` : '',
    s.lastProblem
      ? h(
          'div',
          { class: 'run-last-failure' },
          `last ${OUTCOME_TEXT[s.lastProblem.outcome].replace(/ \(.*\)$/, '')} ${when(s.lastProblem.scheduled_for)}${s.lastProblem.detail ? `: ${s.lastProblem.detail}` : ''}`,
        )
      : null,
  );
}

/** Every firing, newest first, with what it started or why it did not. */
export function historyTable(runs: RunView[]): HTMLElement {
  const newest = runs.slice().sort((a, b) => b.fired_at.localeCompare(a.fired_at));
  return h(
    'table',
    { class: 'grid run-table' },
    h('thead', {}, h('tr', {}, ...['scheduled for', 'fired at', 'outcome', 'started', 'reason'].map((t) => h('th', {}, t)))),
    h(
      'tbody',
      {},
      ...newest.map((r) =>
        h(
          'tr',
          { class: `run-${r.outcome}`, 'data-outcome': r.outcome },
          h('td', {}, when(r.scheduled_for)),
          h('td', {}, when(r.fired_at)),
          h('td', {}, h('span', { class: `status ${r.outcome}` }, OUTCOME_TEXT[r.outcome])),
          h(
            'td',
            {},
            r.profile_id ? h('a', { href: `#/profiles/${r.profile_id}` }, `profile ${r.profile_id.slice(0, 8)}`) : null,
            r.run_id ? h('a', { href: `#/runs/${r.run_id}`, class: 'run-link', title: r.run_id }, `run ${r.run_id.slice(0, 8)}`) : null,
          ),
          h('td', { class: 'reason' }, r.detail ?? ''),
        ),
      ),
    ),
  );
}
