// Triggers: how the services page words a service's triggers (the
// condition, whether it is on, off or held back, what it fired), its
// firings, where its profiles are listed, and the body its create form
// sends (no DOM here, so they unit-test). The server judges the ranges;
// its 422 names the field, which the form marks.

import type { Schemas } from './api';
import { when } from './format';
import { hostsText, parseHosts } from './continuousfmt';
import { href } from './router';
import { FormError } from './runfmt';

export type Trigger = Schemas['Trigger'];
export type TriggerCondition = Schemas['TriggerCondition'];
export type TriggerFiring = Schemas['TriggerFiring'];
export type ConditionKind = TriggerCondition['kind'];

/** The conditions the form offers, with the threshold's unit. */
export const CONDITION_KINDS: ReadonlyArray<{ kind: ConditionKind; text: string; unit: string }> = [
  { kind: 'cpu_above', text: 'CPU above', unit: '% of a core' },
  { kind: 'rss_growth', text: 'memory growing faster than', unit: 'MiB/min' },
];

/** What the server takes when the form leaves a field out: a 30 s
 *  profile at 99 Hz, 10 minutes apart per host, at most 3 at once. */
export const TRIGGER_DEFAULTS = { for_secs: 30, duration_secs: 30, frequency_hz: 99, cooldown_secs: 600, max_concurrent: 3 } as const;

/** Firings listed when asked for. */
export const FIRINGS_SHOWN = 10;

/** Seconds as people say them: "45 s", "10 min", "2 h", "90 s". */
export function secsText(secs: number): string {
  if (secs >= 3600 && secs % 3600 === 0) return `${secs / 3600} h`;
  if (secs >= 60 && secs % 60 === 0) return `${secs / 60} min`;
  return `${secs} s`;
}

/** The condition in words: "CPU above 80% of a core for 30 s", "memory
 *  growing over 50 MiB/min for 2 min". */
export function conditionText(c: TriggerCondition): string {
  return c.kind === 'cpu_above'
    ? `CPU above ${c.percent}% of a core for ${secsText(c.for_secs)}`
    : `memory growing over ${c.mib_per_min} MiB/min for ${secsText(c.for_secs)}`;
}

/** What it takes when it fires, and how often it may: "a 30 s cpu-clock
 *  profile at 99 Hz, 10 min apart per host, at most 3 at once (every
 *  host)". */
export function profileText(t: Pick<Trigger, 'duration_secs' | 'event' | 'frequency_hz' | 'cooldown_secs' | 'max_concurrent' | 'hosts'>): string {
  return (
    `a ${secsText(t.duration_secs)} ${t.event} profile at ${t.frequency_hz} Hz, ` +
    `${secsText(t.cooldown_secs)} apart per host, at most ${t.max_concurrent} at once (${hostsText(t.hosts)})`
  );
}

/** Its state: `on`, `off` (turned off, kept to turn on again) or `held`
 *  (on, but its latest firings were held back by the cooldown or the cap:
 *  why, and since when). */
export function triggerState(t: Pick<Trigger, 'enabled' | 'held_back_since' | 'held_back_reason'>): { state: 'on' | 'off' | 'held'; text: string } {
  if (!t.enabled) return { state: 'off', text: 'off' };
  if (t.held_back_reason || t.held_back_since) {
    const why = t.held_back_reason ? ` (${t.held_back_reason})` : '';
    return { state: 'held', text: `held back${why} since ${when(t.held_back_since)}` };
  }
  return { state: 'on', text: 'on' };
}

/** What it did: "fired 2, last 2026-11-28 04:00:00Z; 5 held back". */
export function countsText(t: Pick<Trigger, 'fired' | 'held_back' | 'last_fired_at'>): string {
  const last = t.last_fired_at ? `, last ${when(t.last_fired_at)}` : '';
  return `fired ${t.fired}${last}; ${t.held_back} held back`;
}

/** The profiles it started: the profiles list filtered by its label. */
export function triggerProfilesHref(t: Pick<Trigger, 'id'>): string {
  return href('profiles', { labels: `trigger:${t.id}` });
}

/** A profile's own page. */
export function profileHref(id: string): string {
  return `#/profiles/${encodeURIComponent(id)}`;
}

/** What the agent measured: "93.2 % of a core", "61.0 MiB/min". */
export function observedText(f: Pick<TriggerFiring, 'observed' | 'unit'>): string {
  return `${f.observed.toFixed(1)} ${f.unit}`;
}

const OUTCOME_TEXT: Record<TriggerFiring['outcome'], string> = {
  started: 'started a profile',
  cooldown: 'held back: cooldown',
  capped: 'held back: cap reached',
  busy: 'target busy',
  failed: 'failed',
};

/** What came of a firing, with the server's reason when it gives one. */
export function outcomeText(f: Pick<TriggerFiring, 'outcome' | 'reason'>): string {
  const text = OUTCOME_TEXT[f.outcome] ?? f.outcome;
  return f.reason ? `${text} (${f.reason})` : text;
}

/** Each service's triggers, oldest first (as created), by service. */
export function triggersByService(triggers: readonly Trigger[]): Map<string, Trigger[]> {
  const by = new Map<string, Trigger[]>();
  const sorted = triggers.slice().sort((a, b) => a.created_at.localeCompare(b.created_at) || a.id.localeCompare(b.id));
  for (const t of sorted) by.set(t.service, [...(by.get(t.service) ?? []), t]);
  return by;
}

/** The form's fields, to mark the one a refusal is about. `threshold` is
 *  the condition's percent or MiB/min. */
const FIELDS = ['kind', 'threshold', 'for_secs', 'duration_secs', 'event', 'frequency_hz', 'cooldown_secs', 'max_concurrent', 'hosts'] as const;
export type TriggerField = (typeof FIELDS)[number];

/** What the form typed, by field name. */
export type TriggerFormFields = Partial<Record<TriggerField, string>>;

/** The form's values for a new trigger: the server's defaults, the
 *  threshold left for the admin to give. */
export function triggerFormValues(): Required<TriggerFormFields> {
  const d = TRIGGER_DEFAULTS;
  return {
    kind: 'cpu_above',
    threshold: '',
    for_secs: String(d.for_secs),
    duration_secs: String(d.duration_secs),
    event: '',
    frequency_hz: '',
    cooldown_secs: String(d.cooldown_secs),
    max_concurrent: String(d.max_concurrent),
    hosts: '',
  };
}

/** Largest whole number the API's fields take (`u32`). */
const MAX_WHOLE = 2 ** 32 - 1;

/** A field as a whole number, `undefined` when blank. Throws a
 *  `FormError` naming the field for what is plainly not one; the ranges
 *  are the server's to judge. */
function whole(f: TriggerFormFields, field: TriggerField, what: string): number | undefined {
  const text = (f[field] ?? '').trim();
  if (!text) return undefined;
  const n = Number(text);
  if (!Number.isInteger(n) || n < 0 || n > MAX_WHOLE) throw new FormError(field, `${what} must be a whole number`);
  return n;
}

/** The body of `POST /api/v1/triggers` for `service`: the condition (its
 *  threshold and period are needed) and what else was given; blank fields
 *  take the server's defaults, no hosts is every host. */
export function createTriggerBody(service: string, f: TriggerFormFields): Schemas['CreateTriggerRequest'] {
  const kind = CONDITION_KINDS.find((k) => k.kind === (f.kind || 'cpu_above'));
  if (!kind) throw new FormError('kind', `"${f.kind}" is not a condition`);
  const threshold = whole(f, 'threshold', `the threshold (${kind.unit})`);
  if (threshold === undefined) throw new FormError('threshold', `give the threshold (${kind.unit})`);
  const for_secs = whole(f, 'for_secs', 'how long it must hold (s)');
  if (for_secs === undefined) throw new FormError('for_secs', 'give how long it must hold (s)');
  const condition: TriggerCondition =
    kind.kind === 'cpu_above' ? { kind: 'cpu_above', percent: threshold, for_secs } : { kind: 'rss_growth', mib_per_min: threshold, for_secs };
  const body: Schemas['CreateTriggerRequest'] = { service, condition };
  const duration = whole(f, 'duration_secs', 'the profile’s duration (s)');
  if (duration !== undefined) body.duration_secs = duration;
  const rate = whole(f, 'frequency_hz', 'the rate (Hz)');
  if (rate !== undefined) body.frequency_hz = rate;
  const cooldown = whole(f, 'cooldown_secs', 'the cooldown (s)');
  if (cooldown !== undefined) body.cooldown_secs = cooldown;
  const most = whole(f, 'max_concurrent', 'the most at once');
  if (most !== undefined) body.max_concurrent = most;
  if (f.event) body.event = f.event as Schemas['EventKind'];
  const hosts = parseHosts(f.hosts ?? '');
  if (hosts.length) body.hosts = hosts;
  return body;
}

/** The form field a server refusal names, to mark it: the innermost
 *  backquoted field ("`condition`: `for_secs` 0 is outside…" is
 *  `for_secs`), or the threshold for "`condition`: the cpu_above threshold
 *  0…"; null when it names none of the form's (an undefined service). */
export function triggerErrorField(message: string): TriggerField | null {
  const named = [...message.matchAll(/`([a-z_]+)`/g)].map((m) => m[1]).reverse();
  const field = named.map((n) => FIELDS.find((f) => f === n)).find((f) => f !== undefined);
  if (field) return field;
  return named.includes('condition') && /threshold/.test(message) ? 'threshold' : null;
}
