import { describe, expect, it } from 'vitest';
import {
  alertShareText,
  channelTarget,
  channelVia,
  codeText,
  createBody,
  fieldOfError,
  generateSecret,
  logRows,
  parseRecipients,
  patchBody,
  scopeText,
  type Channel,
  type Delivery,
  type DeliveryAttempt,
} from '../src/channelfmt';

const hook: Channel = {
  id: 'c1',
  name: 'ops-hook',
  kind: 'webhook',
  url: 'https://hooks.example.com/odp',
  smtp_url: null,
  from: null,
  to: [],
  service_pattern: '*',
  enabled: true,
  created_at: '2026-01-01T00:00:00Z',
};

const mail: Channel = {
  ...hook,
  id: 'c2',
  name: 'ops-mail',
  kind: 'email',
  url: null,
  smtp_url: 'smtp://mail.internal:25',
  from: 'odp@example.com',
  to: ['a@example.com', 'b@example.com'],
  service_pattern: 'checkout-*',
};

const attempt = (n: number, over: Partial<DeliveryAttempt> = {}): DeliveryAttempt => ({
  attempt: n,
  attempted_at: `2026-01-01T00:0${n}:00Z`,
  status_code: 502,
  error: 'bad gateway',
  success: false,
  ...over,
});

const delivery = (id: string, over: Partial<Delivery> = {}): Delivery => ({
  id,
  profile_id: 'p',
  rule_id: 'r',
  rule_title: 'R',
  service: 'svc',
  host: 'h',
  share: 12.345,
  threshold_pct: 5,
  detected_at: '2026-01-01T00:00:00Z',
  status: 'failed',
  attempts: 0,
  next_attempt_at: null,
  created_at: '2026-01-01T00:00:00Z',
  finished_at: null,
  attempt_log: [],
  ...over,
});

describe('channel wording', () => {
  it('says where alerts go and how', () => {
    expect(channelTarget(hook)).toBe('https://hooks.example.com/odp');
    expect(channelTarget(mail)).toBe('a@example.com, b@example.com');
    expect(channelVia(mail)).toBe('from odp@example.com via smtp://mail.internal:25');
    expect(channelVia(hook)).toMatch(/HMAC/);
    expect(scopeText('*')).toBe('all services');
    expect(scopeText('checkout-*')).toBe('checkout-*');
  });

  it('names the protocol of a reply code', () => {
    expect(codeText('webhook', 502)).toBe('HTTP 502');
    expect(codeText('email', 550)).toBe('SMTP 550');
    expect(codeText('email', null)).toBe('—');
    expect(alertShareText(delivery('d'))).toBe('12.3% ≥ 5%');
  });

  it('finds the field a server message names', () => {
    expect(fieldOfError('`url` must be an http or https URL with a host: it starts with neither')).toBe('url');
    expect(fieldOfError('`smtp_url` must be smtp://host[:port]')).toBe('smtp_url');
    expect(fieldOfError('alert channel "x" already exists')).toBeNull();
  });
});

describe('request bodies', () => {
  it('splits recipients on commas, semicolons, spaces and lines', () => {
    expect(parseRecipients(' a@x.io, b@x.io;c@x.io\nd@x.io  a@x.io ,, ')).toEqual(['a@x.io', 'b@x.io', 'c@x.io', 'd@x.io']);
    expect(parseRecipients('  ')).toEqual([]);
  });

  it('creates a webhook with its own fields only', () => {
    const f = { name: ' ops-hook ', url: ' http://127.0.0.1:9/hook ', secret: ' 0123456789abcdef', service_pattern: '', smtp_url: 'smtp://x' };
    expect(createBody('webhook', f, true)).toEqual({
      kind: 'webhook',
      name: 'ops-hook',
      enabled: true,
      url: 'http://127.0.0.1:9/hook',
      secret: ' 0123456789abcdef', // as typed: spaces may be part of it
    });
  });

  it('creates an email channel with its recipients as a list', () => {
    const f = { name: 'm', smtp_url: 'smtp://mail:25', from: 'o@x.io', to: 'a@x.io, b@x.io', service_pattern: 'svc-?', url: 'http://x' };
    expect(createBody('email', f, false)).toEqual({
      kind: 'email',
      name: 'm',
      enabled: false,
      service_pattern: 'svc-?',
      smtp_url: 'smtp://mail:25',
      from: 'o@x.io',
      to: ['a@x.io', 'b@x.io'],
    });
  });

  it('patches only what changed', () => {
    expect(patchBody(hook, { service_pattern: '*', url: hook.url!, secret: '' })).toEqual({});
    expect(patchBody(hook, { service_pattern: '', url: 'https://other/x', secret: 'new-secret-0123456' })).toEqual({
      url: 'https://other/x',
      secret: 'new-secret-0123456',
    });
    expect(patchBody(mail, { service_pattern: 'checkout-*', smtp_url: mail.smtp_url!, from: mail.from!, to: 'a@example.com b@example.com' })).toEqual({});
    expect(patchBody(mail, { service_pattern: ' ', smtp_url: mail.smtp_url!, from: 'x@example.com', to: 'b@example.com' })).toEqual({
      service_pattern: '*',
      from: 'x@example.com',
      to: ['b@example.com'],
    });
  });

  it('generates hex secrets of the asked length', () => {
    expect(generateSecret(4, (a) => a.set([0, 15, 16, 255]))).toBe('000f10ff');
    const s = generateSecret();
    expect(s).toMatch(/^[0-9a-f]{64}$/);
    expect(generateSecret()).not.toBe(s);
  });
});

describe('delivery log', () => {
  it('lists each delivery newest first, its attempts latest first', () => {
    const newer = delivery('new', {
      status: 'delivered',
      attempts: 2,
      attempt_log: [attempt(1), attempt(2, { status_code: 200, error: null, success: true })],
    });
    const older = delivery('old', { status: 'failed', attempts: 1, attempt_log: [attempt(1, { status_code: null, error: 'connection refused' })] });
    const rows = logRows([newer, older]);
    expect(rows.map((r) => [r.delivery.id, r.attempt?.attempt, r.outcome, r.span])).toEqual([
      ['new', 2, 'delivered', 2],
      ['new', 1, 'bad gateway', 0],
      ['old', 1, 'connection refused', 1],
    ]);
    expect(rows[0].time).toBe('2026-01-01T00:02:00Z');
  });

  it('shows a delivery not tried yet and when a pending one retries', () => {
    const queued = delivery('q', { status: 'pending', next_attempt_at: '2026-01-01T00:05:00Z', created_at: '2026-01-01T00:04:00Z' });
    expect(logRows([queued])).toEqual([
      { delivery: queued, attempt: null, time: '2026-01-01T00:04:00Z', outcome: 'not tried yet; due 2026-01-01 00:05:00Z', span: 1 },
    ]);
    const retrying = delivery('r', { status: 'pending', attempts: 2, next_attempt_at: '2026-01-01T00:09:00Z', attempt_log: [attempt(1), attempt(2)] });
    expect(logRows([retrying]).map((r) => r.outcome)).toEqual(['bad gateway; retry due 2026-01-01 00:09:00Z', 'bad gateway']);
  });
});
