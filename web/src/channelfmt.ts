// Alert channels and their delivery logs: the API's shapes, the request
// bodies the forms send, and how the views word them (no DOM here, so
// they unit-test). The server checks every field; nothing here repeats
// its rules, so its 422 message is what people read.

import type { Schemas } from './api';
import { when } from './format';

export type ChannelKind = Schemas['ChannelKind'];

/** A channel as the API shows it; a webhook's secret never comes back. */
export type Channel = Schemas['Channel'];

export type DeliveryAttempt = Schemas['DeliveryAttempt'];

/** One alert (a rule's detection in a profile) sent to a channel. */
export type Delivery = Schemas['Delivery'];

/** A page of a channel's delivery log, newest first. */
export type DeliveriesPage = Schemas['DeliveriesPage'];

export const DELIVERY_STATUSES = ['pending', 'delivered', 'failed'] as const;

/** What a form typed: field name to text. */
export type FormFields = Record<string, string>;

/** Recipients as typed: separated by commas, semicolons, spaces or lines;
 *  blanks and repeats dropped, order kept. */
export function parseRecipients(text: string): string[] {
  const seen = new Set<string>();
  for (const address of text.split(/[\s,;]+/)) if (address) seen.add(address);
  return [...seen];
}

/** Where a channel's alerts go: the URL, or the recipients. */
export function channelTarget(c: Channel): string {
  return c.kind === 'email' ? c.to.join(', ') : (c.url ?? '');
}

/** How alerts get there: the signature, or the sender and relay. */
export function channelVia(c: Channel): string {
  return c.kind === 'email' ? `from ${c.from ?? '?'} via ${c.smtp_url ?? '?'}` : 'POST, signed with HMAC-SHA256';
}

/** A channel's services, in words. */
export function scopeText(pattern: string): string {
  return pattern === '*' ? 'all services' : pattern;
}

/** The body of `POST /api/v1/channels` from the create form: the fields
 *  of `kind` only (the server refuses the other kind's). A blank service
 *  pattern is left to the server's default (all services); the secret is
 *  sent as typed. */
export function createBody(kind: ChannelKind, f: FormFields, enabled: boolean): Schemas['CreateChannelRequest'] {
  const text = (k: string) => (f[k] ?? '').trim();
  const common = { name: text('name'), enabled, ...(text('service_pattern') ? { service_pattern: text('service_pattern') } : {}) };
  if (kind === 'webhook') return { kind, ...common, url: text('url'), secret: f.secret ?? '' };
  return { kind, ...common, smtp_url: text('smtp_url'), from: text('from'), to: parseRecipients(f.to ?? '') };
}

/** The body of `PATCH /api/v1/channels/{id}` from the edit form: only
 *  what differs from `c` (empty when nothing does). A blank pattern means
 *  all services; a blank secret keeps the current one. */
export function patchBody(c: Channel, f: FormFields): Schemas['UpdateChannelRequest'] {
  const text = (k: string) => (f[k] ?? '').trim();
  const body: Schemas['UpdateChannelRequest'] = {};
  const pattern = text('service_pattern') || '*';
  if (pattern !== c.service_pattern) body.service_pattern = pattern;
  if (c.kind === 'webhook') {
    if (text('url') !== (c.url ?? '')) body.url = text('url');
    if (f.secret) body.secret = f.secret;
  } else {
    if (text('smtp_url') !== (c.smtp_url ?? '')) body.smtp_url = text('smtp_url');
    if (text('from') !== (c.from ?? '')) body.from = text('from');
    const to = parseRecipients(f.to ?? '');
    if (to.join('\n') !== c.to.join('\n')) body.to = to;
  }
  return body;
}

/** The field a server message names first (`url` in "`url` must be…"),
 *  to mark that input; null when it names none. */
export function fieldOfError(message: string): string | null {
  return /`([a-z_]+)`/.exec(message)?.[1] ?? null;
}

/** A webhook secret: `bytes` random bytes as hex (64 characters for 32,
 *  well inside the server's 16 to 512). */
export function generateSecret(bytes = 32, fill: (a: Uint8Array) => void = (a) => crypto.getRandomValues(a)): string {
  const a = new Uint8Array(bytes);
  fill(a);
  return Array.from(a, (b) => b.toString(16).padStart(2, '0')).join('');
}

/** An attempt's reply code with its protocol: "HTTP 502", "SMTP 550";
 *  "—" when the server never answered. */
export function codeText(kind: ChannelKind, code: number | null | undefined): string {
  if (code === null || code === undefined) return '—';
  return `${kind === 'email' ? 'SMTP' : 'HTTP'} ${code}`;
}

/** The detection an alert announced: "12.3% ≥ 5%". */
export function alertShareText(d: Delivery): string {
  return `${d.share.toFixed(1)}% ≥ ${d.threshold_pct}%`;
}

/** One line of the delivery log: an attempt, or a delivery not tried yet. */
export interface LogRow {
  delivery: Delivery;
  attempt: DeliveryAttempt | null;
  /** When the attempt was made (queued, for one not tried). */
  time: string;
  /** "delivered", the error, or when the next try is due. */
  outcome: string;
  /** On the delivery's first (latest) row: how many rows it has, for the
   *  cells they share; 0 on the others. */
  span: number;
}

function outcome(d: Delivery, a: DeliveryAttempt | null): string {
  if (!a) return d.status === 'pending' ? `not tried yet; due ${when(d.next_attempt_at)}` : d.status;
  if (a.success) return 'delivered';
  const error = a.error ?? 'failed';
  const latest = a.attempt === d.attempt_log[d.attempt_log.length - 1]?.attempt;
  return latest && d.status === 'pending' && d.next_attempt_at ? `${error}; retry due ${when(d.next_attempt_at)}` : error;
}

/** The log as rows, newest first: deliveries in the API's order (newest
 *  first), each one's attempts latest first. */
export function logRows(deliveries: Delivery[]): LogRow[] {
  const rows: LogRow[] = [];
  for (const d of deliveries) {
    const span = Math.max(1, d.attempt_log.length);
    if (!d.attempt_log.length) rows.push({ delivery: d, attempt: null, time: d.created_at, outcome: outcome(d, null), span });
    [...d.attempt_log].reverse().forEach((a, i) =>
      rows.push({ delivery: d, attempt: a, time: a.attempted_at, outcome: outcome(d, a), span: i === 0 ? span : 0 }),
    );
  }
  return rows;
}
