// Continuous profiles: how the services page words a service's (always on
// or off, at what rate, within what budget, on which hosts), where its
// hourly segments are listed, and the request bodies its form sends (no
// DOM here, so they unit-test). The server checks the limits, which are
// the operator's; its 422 names them and the field, which the form marks.

import type { Schemas } from './api';
import { href } from './router';
import { FormError } from './runfmt';

export type ContinuousProfile = Schemas['ContinuousProfile'];
export type ContinuousEvent = Extract<Schemas['EventKind'], 'cpu-clock' | 'wall'>;

/** The events a continuous profile may use: those whose cost the budget
 *  bounds by lowering the rate. */
export const CONTINUOUS_EVENTS: ReadonlyArray<[ContinuousEvent, string]> = [
  ['cpu-clock', 'cpu-clock: CPU time'],
  ['wall', 'wall: on and off CPU (native, Python)'],
];

/** What the server takes when the form leaves a field out: 19 Hz within
 *  0.5 % of one core per host. */
export const CONTINUOUS_DEFAULTS = { event: 'cpu-clock', frequency_hz: 19, cpu_budget_percent: 0.5 } as const;

/** Hosts named in a state before "and N more". */
const HOSTS_NAMED = 5;

/** A percentage without float noise: 0.5, 0.25, 2. */
export function percentText(percent: number): string {
  return String(Number(percent.toPrecision(6)));
}

/** The hosts that profile it: "every host", or their names (the first
 *  few, then how many more). */
export function hostsText(hosts: readonly string[] | null | undefined): string {
  if (!hosts?.length) return 'every host';
  const named = hosts.slice(0, HOSTS_NAMED).join(', ');
  return hosts.length > HOSTS_NAMED ? `${named} and ${hosts.length - HOSTS_NAMED} more` : named;
}

/** Its configuration: "cpu-clock at 19 Hz, ≤0.5 % of a core per host
 *  (every host)". */
export function configText(c: Pick<ContinuousProfile, 'event' | 'frequency_hz' | 'cpu_budget_percent' | 'hosts'>): string {
  return `${c.event} at ${c.frequency_hz} Hz, ≤${percentText(c.cpu_budget_percent)} % of a core per host (${hostsText(c.hosts)})`;
}

/** A service's state: `on` with what it runs, `off` (turned off, kept to
 *  turn on again) or `none` (never set up, or deleted). */
export function continuousState(c: ContinuousProfile | null | undefined): { state: 'on' | 'off' | 'none'; text: string } {
  if (!c) return { state: 'none', text: '' };
  return c.enabled ? { state: 'on', text: `always on: ${configText(c)}` } : { state: 'off', text: 'off' };
}

/** Its hourly segments: the profiles list filtered by its label, newest
 *  first (the list's order). */
export function segmentsHref(c: Pick<ContinuousProfile, 'id'>): string {
  return href('profiles', { labels: `continuous:${c.id}` });
}

/** What the form typed, by field name; `hosts` is names separated by
 *  commas or spaces, blank for every host. */
export type ContinuousFormFields = Partial<Record<'event' | 'frequency_hz' | 'cpu_budget_percent' | 'hosts', string>>;

/** The form's fields, to mark the one a refusal is about. */
const FIELDS = ['event', 'frequency_hz', 'cpu_budget_percent', 'hosts'] as const;

/** Host names as typed: separated by commas or spaces; blanks and repeats
 *  dropped, sorted as the server keeps them. */
export function parseHosts(text: string): string[] {
  return [...new Set(text.split(/[\s,]+/).filter(Boolean))].sort();
}

/** The fields as the API takes them; a blank number is `undefined`.
 *  Throws a `FormError` for what is plainly not a rate or a budget; the
 *  limits are the server's to judge. */
function parse(f: ContinuousFormFields) {
  const rateText = (f.frequency_hz ?? '').trim();
  const rate = rateText ? Number(rateText) : undefined;
  if (rate !== undefined && !(Number.isInteger(rate) && rate >= 1))
    throw new FormError('frequency_hz', 'the rate must be a whole number of Hz, at least 1');
  const budgetText = (f.cpu_budget_percent ?? '').trim();
  const budget = budgetText ? Number(budgetText) : undefined;
  if (budget !== undefined && !Number.isFinite(budget)) throw new FormError('cpu_budget_percent', 'the budget must be a number (percent of one core)');
  const event = (f.event || undefined) as ContinuousEvent | undefined;
  return { event, rate, budget, hosts: parseHosts(f.hosts ?? '') };
}

/** The body of `POST /api/v1/continuous` for `service`: what the form
 *  gave (blank fields take the server's defaults; no hosts is every
 *  host). */
export function createBody(service: string, f: ContinuousFormFields): Schemas['CreateContinuousRequest'] {
  const { event, rate, budget, hosts } = parse(f);
  const body: Schemas['CreateContinuousRequest'] = { service };
  if (event) body.event = event;
  if (rate !== undefined) body.frequency_hz = rate;
  if (budget !== undefined) body.cpu_budget_percent = budget;
  if (hosts.length) body.hosts = hosts;
  return body;
}

/** The body of `PATCH /api/v1/continuous/{id}` from the change form: only
 *  what differs from `c` (empty when nothing does). A blank rate or budget
 *  keeps it; blank hosts is every host (sent as `[]`). */
export function patchBody(c: ContinuousProfile, f: ContinuousFormFields): Schemas['UpdateContinuousRequest'] {
  const { event, rate, budget, hosts } = parse(f);
  const body: Schemas['UpdateContinuousRequest'] = {};
  if (event && event !== c.event) body.event = event;
  if (rate !== undefined && rate !== c.frequency_hz) body.frequency_hz = rate;
  if (budget !== undefined && budget !== c.cpu_budget_percent) body.cpu_budget_percent = budget;
  if (hosts.join('\n') !== (c.hosts ?? []).join('\n')) body.hosts = hosts;
  return body;
}

/** The form's values for `c`, or the defaults when there is none. */
export function formValues(c: ContinuousProfile | null): Required<ContinuousFormFields> {
  const from = c ?? { ...CONTINUOUS_DEFAULTS, hosts: null };
  return {
    event: from.event,
    frequency_hz: String(from.frequency_hz),
    cpu_budget_percent: percentText(from.cpu_budget_percent),
    hosts: (from.hosts ?? []).join(', '),
  };
}

/** The form field a server refusal names (`frequency_hz` in "`frequency_hz`
 *  1000 is outside…"), to mark it; null when it names none of the form's
 *  (a 409 names the service). */
export function continuousErrorField(message: string): (typeof FIELDS)[number] | null {
  const named = /`([a-z_]+)`/.exec(message)?.[1];
  return FIELDS.find((f) => f === named) ?? null;
}
