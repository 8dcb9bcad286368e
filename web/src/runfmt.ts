// Runs of a service (one member profile per chosen host) and services:
// the request the run form sends, and how the views word a run's
// selection, progress and precision. No DOM here, so it unit-tests; the
// server checks every field again and its 422 message is what people read.

import type { Schemas } from './api';

export type Run = Schemas['Run'];
export type RunStatus = Schemas['RunStatus'];
export type RunMember = Schemas['RunMember'];
export type RunPrecision = Schemas['RunPrecision'];
export type HostSelection = Schemas['HostSelection'];
export type CreateRunRequest = Schemas['CreateRunRequest'];
export type Service = Schemas['Service'];
export type ServiceHost = Schemas['ServiceHost'];

/** A run still choosing or profiling: its page refreshes. */
export const LIVE_RUN_STATUSES: readonly RunStatus[] = ['dispatching', 'running'];

export function isLiveRun(status: RunStatus): boolean {
  return LIVE_RUN_STATUSES.includes(status);
}

const STATUS_TEXT: Record<RunStatus, string> = {
  dispatching: 'dispatching',
  running: 'running',
  finished: 'finished',
  stopped: 'stopped',
  precise: 'precise (stop rule met)',
  partial: 'partial (some hosts have no profile)',
};

export function runStatusText(status: RunStatus): string {
  return STATUS_TEXT[status] ?? status;
}

/** `all live hosts`, `3 hosts`, `10% of live hosts`. */
export function selectionText(hosts: HostSelection | null | undefined): string {
  if (!hosts || hosts === 'all') return 'all live hosts';
  if ('count' in hosts) return `${hosts.count} ${hosts.count === 1 ? 'host' : 'hosts'}`;
  return `${hosts.percent}% of live hosts`;
}

/** `1 of 4 eligible hosts`, with why it is fewer than asked. */
export function chosenText(s: Schemas['Selection']): string {
  const chosen = s.hosts.length;
  let text = `${chosen} of ${s.eligible} eligible ${s.eligible === 1 ? 'host' : 'hosts'}`;
  if (s.capped) text += ` (asked for ${s.requested}: capped at the live hosts)`;
  else if (s.requested !== chosen) text += ` (asked for ${s.requested})`;
  return text;
}

/** A stratum's label values, `arch=x86_64, zone=eu-1`, keys sorted; a
 *  label the hosts lack is absent, so none at all says so. */
export function stratumText(labels: Record<string, string>): string {
  const keys = Object.keys(labels).sort();
  return keys.length ? keys.map((k) => `${k}=${labels[k]}`).join(', ') : '(without the labels)';
}

/** Percentage points of a share: 0.012 → `1.20`. */
export function points(share: number, digits = 2): string {
  return (share * 100).toFixed(digits);
}

/** `top 3 shares to ±1.00 pts`. */
export function stopRuleText(rule: Schemas['StopRule'] | null | undefined): string {
  if (!rule) return 'none (runs its full duration)';
  return `top ${rule.top} ${rule.top === 1 ? 'share' : 'shares'} to ±${points(rule.max_stderr)} pts`;
}

export interface MemberCounts {
  total: number;
  /** Requested or dispatched: not profiling yet. */
  waiting: number;
  running: number;
  /** Finished or stopped: a profile to read. */
  finished: number;
  /** Failed, expired or not started. */
  failed: number;
}

export function memberCounts(members: RunMember[]): MemberCounts {
  const c: MemberCounts = { total: members.length, waiting: 0, running: 0, finished: 0, failed: 0 };
  for (const m of members) {
    if (m.status === 'running') c.running++;
    else if (m.status === 'finished' || m.status === 'stopped') c.finished++;
    else if (m.status === 'failed' || m.status === 'expired') c.failed++;
    else c.waiting++;
  }
  return c;
}

/** `1 running, 2 finished, 1 failed of 4` (waiting ones only when any). */
export function membersText(c: MemberCounts): string {
  const parts = [`${c.running} running`, `${c.finished} finished`, `${c.failed} failed`];
  if (c.waiting) parts.unshift(`${c.waiting} starting`);
  return `${parts.join(', ')} of ${c.total}`;
}

/** The members that have no profile to show, each with why. */
export function failedMembers(members: RunMember[]): Array<{ host: string; reason: string }> {
  return members
    .filter((m) => m.status === 'failed' || m.status === 'expired')
    .map((m) => ({ host: m.host, reason: m.reason || m.status }));
}

export interface RunProgress {
  live: boolean;
  /** Seconds since the run was created, to its end when it ended. */
  elapsedSecs: number;
  maxSecs: number;
  /** Elapsed over the maximum duration, 0 to 1 (what a run that ended
   *  early used of it). */
  fraction: number;
  elapsedText: string;
  members: MemberCounts;
  membersText: string;
  /** The largest standard error of the top shares now (null before any sample). */
  reached: number | null;
  /** The rule's ε (the run's own, or the precision route's default). */
  target: number | null;
  met: boolean;
  precisionText: string;
}

/** `45 s`, `2 min`, `1 min 30 s`. */
export function secsText(s: number): string {
  const whole = Math.round(s);
  if (whole < 60) return `${whole} s`;
  const m = Math.floor(whole / 60);
  return whole % 60 ? `${m} min ${whole % 60} s` : `${m} min`;
}

/** Where a run is at `now` (ms since the epoch): time against its
 *  maximum duration, its members, and the ε reached against the rule's
 *  (from `/precision`, when read). */
export function runProgress(run: Run, precision: RunPrecision | null, now: number): RunProgress {
  const live = isLiveRun(run.status);
  const start = Date.parse(run.created_at);
  const end = run.ended_at ? Date.parse(run.ended_at) : now;
  const elapsedSecs = Math.max(0, (live ? now : end) - start) / 1000;
  const maxSecs = run.duration_secs;
  const fraction = maxSecs > 0 ? Math.min(1, elapsedSecs / maxSecs) : live ? 0 : 1;
  const members = memberCounts(run.members);
  const reached = precision?.decision.reached_epsilon ?? run.reached_epsilon ?? null;
  const rule = precision?.stop_when ?? run.stop_when ?? null;
  const target = rule?.max_stderr ?? null;
  const met = precision?.decision.met ?? run.status === 'precise';
  let precisionText: string;
  if (reached === null || reached === undefined) precisionText = 'no samples yet';
  else {
    precisionText = `±${points(reached)} pts reached`;
    if (target !== null) precisionText += ` of ±${points(target)} pts wanted (top ${rule!.top})`;
    if (met) precisionText += ': met';
    if (!run.stop_when) precisionText += ' — no stop rule, for reference';
  }
  return {
    live,
    elapsedSecs,
    maxSecs,
    fraction,
    elapsedText: `${secsText(elapsedSecs)} of ${secsText(maxSecs)} max`,
    members,
    membersText: membersText(members),
    reached,
    target,
    met,
    precisionText,
  };
}

/** The union of the label keys `hosts` report, sorted: what a run may
 *  stratify by. */
export function labelKeys(hosts: Array<Pick<ServiceHost, 'labels'>>): string[] {
  const keys = new Set<string>();
  for (const h of hosts) for (const k of Object.keys(h.labels ?? {})) keys.add(k);
  return [...keys].sort();
}

/** The distinct values of `key` among `hosts`, for the stratify hint. */
export function labelValues(hosts: Array<Pick<ServiceHost, 'labels'>>, key: string): string[] {
  return [...new Set(hosts.map((h) => h.labels?.[key]).filter((v): v is string => v !== undefined))].sort();
}

/** A form's refusal: its message for people and the field to mark. */
export class FormError extends Error {
  constructor(
    public field: string,
    message: string,
  ) {
    super(message);
  }
}

/** What the run form typed, by field name. `hosts` is `all`, `count` or
 *  `percent`; `stop` is `on` when the stop rule is wanted; `max_stderr` is
 *  in percentage points (1 is ±1%). */
export type RunFormFields = Partial<
  Record<
    | 'service'
    | 'hosts'
    | 'count'
    | 'percent'
    | 'seed'
    | 'strict'
    | 'duration_secs'
    | 'frequency_hz'
    | 'window_secs'
    | 'plugin'
    | 'event'
    | 'stop'
    | 'top'
    | 'max_stderr',
    string
  >
>;

function integer(f: RunFormFields, field: keyof RunFormFields, what: string, min: number): number | undefined {
  const text = (f[field] ?? '').trim();
  if (!text) return undefined;
  const n = Number(text);
  if (!Number.isInteger(n) || n < min) throw new FormError(field, `${what} must be a whole number of at least ${min}`);
  return n;
}

/** The body of `POST /api/v1/runs` from the run form and the labels
 *  ticked to stratify by. Throws a `FormError` for what is plainly not a
 *  request (a missing service, a count of 0, ε outside (0, 100) points);
 *  the rest is the server's to judge. */
export function runRequest(f: RunFormFields, stratifyBy: string[] = []): CreateRunRequest {
  const service = (f.service ?? '').trim();
  if (!service) throw new FormError('service', 'pick a service');
  const duration = integer(f, 'duration_secs', 'the maximum duration (s)', 1);
  if (duration === undefined) throw new FormError('duration_secs', 'give the maximum duration (s)');
  const body: CreateRunRequest = { service, duration_secs: duration };
  const mode = f.hosts || 'all';
  if (mode === 'count') {
    const count = integer(f, 'count', 'the number of hosts', 1);
    if (count === undefined) throw new FormError('count', 'give the number of hosts');
    body.hosts = { count };
  } else if (mode === 'percent') {
    const percent = Number((f.percent ?? '').trim());
    if (!(f.percent ?? '').trim() || !(percent > 0 && percent <= 100))
      throw new FormError('percent', 'the percentage of hosts must be in (0, 100]');
    body.hosts = { percent };
  } else body.hosts = 'all';
  if (stratifyBy.length) body.stratify_by = [...stratifyBy];
  const seed = integer(f, 'seed', 'the seed', 0);
  if (seed !== undefined) body.seed = seed;
  if (f.strict === 'on' && mode === 'count') body.strict = true;
  const frequency = integer(f, 'frequency_hz', 'the frequency (Hz)', 1);
  if (frequency !== undefined) body.frequency_hz = frequency;
  const window = integer(f, 'window_secs', 'the window (s)', 1);
  if (window !== undefined) body.window_secs = window;
  const options: Schemas['ProfileOptions'] = {};
  if (f.plugin) options.plugin = f.plugin;
  if (f.event) options.event = f.event;
  if (Object.keys(options).length) body.options = options;
  if (f.stop === 'on') {
    const top = integer(f, 'top', 'the number of top shares', 1);
    if (top === undefined) throw new FormError('top', 'give how many top shares the stop rule watches');
    const text = (f.max_stderr ?? '').trim();
    const pts = Number(text);
    if (!text || !(pts > 0 && pts < 100)) throw new FormError('max_stderr', 'ε must be more than 0 and under 100 percentage points');
    // Percentage points to a share, without 0.1 / 100 = 0.0010000000000000002.
    body.stop_when = { top, max_stderr: Number((pts / 100).toPrecision(12)) };
  }
  return body;
}

/** The form field a server refusal is about, to mark it; null when its
 *  message names none. */
export function runErrorField(message: string): string | null {
  const m = message.toLowerCase();
  if (/stop_when\.top/.test(m)) return 'top';
  if (/max_stderr/.test(m)) return 'max_stderr';
  if (/stratify|to stratify by/.test(m)) return 'stratify_by';
  if (/^percent\b|`percent`/.test(m)) return 'percent';
  if (/^count\b|`count`/.test(m)) return 'count';
  if (/no service .* is defined|no live host runs|`service`/.test(m)) return 'service';
  return /`([a-z_]+)`/.exec(message)?.[1] ?? null;
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** The run a profile is a member of: its `run_id` when the API gives
 *  one, else the `run` label members are started with; null otherwise. */
export function runIdOf(profile: { labels?: Record<string, string> | null } & Record<string, unknown>): string | null {
  const direct = profile.run_id;
  if (typeof direct === 'string' && UUID.test(direct)) return direct;
  const label = profile.labels?.run;
  return label && UUID.test(label) ? label : null;
}

/** A p-value for the hosts table: `< 0.0001`, `0.032`, `1`. */
export function pValueText(p: number): string {
  if (p >= 0.9995) return '1';
  if (p < 1e-4) return '< 0.0001';
  return p < 0.01 ? p.toPrecision(2) : p.toFixed(3);
}
