import { describe, expect, it } from 'vitest';
import {
  configText,
  continuousErrorField,
  continuousState,
  createBody,
  formValues,
  hostsText,
  parseHosts,
  patchBody,
  percentText,
  segmentsHref,
  type ContinuousProfile,
} from '../src/continuousfmt';
import { formError } from './formerror';

const on: ContinuousProfile = {
  id: '7d0c1f7e-0000-4000-8000-000000000001',
  service: 'checkout',
  event: 'cpu-clock',
  frequency_hz: 19,
  cpu_budget_percent: 0.5,
  hosts: null,
  enabled: true,
  segment_secs: 3600,
  created_by: 'alice',
  updated_by: 'alice',
  created_at: '2026-11-28T01:00:00Z',
  updated_at: '2026-11-28T01:00:00Z',
};

describe('a continuous profile in words', () => {
  it('says always on with the event, rate, budget and hosts', () => {
    expect(continuousState(on)).toEqual({ state: 'on', text: 'always on: cpu-clock at 19 Hz, ≤0.5 % of a core per host (every host)' });
    expect(configText({ ...on, event: 'wall', frequency_hz: 49, cpu_budget_percent: 1.5, hosts: ['web-1', 'web-2'] })).toBe(
      'wall at 49 Hz, ≤1.5 % of a core per host (web-1, web-2)',
    );
  });

  it('says off when turned off, and nothing when there is none', () => {
    expect(continuousState({ ...on, enabled: false })).toEqual({ state: 'off', text: 'off' });
    expect(continuousState(null)).toEqual({ state: 'none', text: '' });
    expect(continuousState(undefined).state).toBe('none');
  });

  it('writes percentages without float noise', () => {
    expect(percentText(0.5)).toBe('0.5');
    expect(percentText(2)).toBe('2');
    expect(percentText((1234 * 100) / 1_000_000)).toBe('0.1234');
    expect(percentText(0.1 + 0.2)).toBe('0.3');
  });

  it('names a few hosts, then how many more', () => {
    expect(hostsText(null)).toBe('every host');
    expect(hostsText([])).toBe('every host');
    expect(hostsText(['a', 'b', 'c', 'd', 'e', 'f', 'g'])).toBe('a, b, c, d, e and 2 more');
    expect(hostsText(['a', 'b', 'c', 'd', 'e'])).toBe('a, b, c, d, e');
  });

  it('links its segments: the profiles list filtered by its label', () => {
    expect(segmentsHref(on)).toBe('#/profiles?labels=continuous%3A7d0c1f7e-0000-4000-8000-000000000001');
  });
});

describe('the continuous form', () => {
  it('fills in the defaults for a new one and the current values for a change', () => {
    expect(formValues(null)).toEqual({ event: 'cpu-clock', frequency_hz: '19', cpu_budget_percent: '0.5', hosts: '' });
    expect(formValues({ ...on, event: 'wall', hosts: ['web-1', 'web-2'] })).toEqual({
      event: 'wall',
      frequency_hz: '19',
      cpu_budget_percent: '0.5',
      hosts: 'web-1, web-2',
    });
  });

  it('sends what was given to turn one on; blanks are the defaults and no host is every host', () => {
    expect(createBody('checkout', { event: 'wall', frequency_hz: ' 49 ', cpu_budget_percent: '0.25', hosts: 'web-2, web-1 web-2' })).toEqual({
      service: 'checkout',
      event: 'wall',
      frequency_hz: 49,
      cpu_budget_percent: 0.25,
      hosts: ['web-1', 'web-2'],
    });
    expect(createBody('checkout', { event: '', frequency_hz: '', cpu_budget_percent: '', hosts: ' ' })).toEqual({ service: 'checkout' });
  });

  it('changes only what differs, and blank hosts is every host again', () => {
    expect(patchBody(on, formValues(on))).toEqual({});
    expect(patchBody(on, { ...formValues(on), frequency_hz: '29' })).toEqual({ frequency_hz: 29 });
    expect(patchBody(on, { ...formValues(on), event: 'wall', cpu_budget_percent: '1', hosts: 'web-1' })).toEqual({
      event: 'wall',
      cpu_budget_percent: 1,
      hosts: ['web-1'],
    });
    const some = { ...on, hosts: ['web-1'] };
    expect(patchBody(some, { ...formValues(some), hosts: '' })).toEqual({ hosts: [] });
    expect(patchBody(some, { ...formValues(some), frequency_hz: '', cpu_budget_percent: '' })).toEqual({});
  });

  it('refuses what is plainly not a rate or a budget, naming the field; limits are the server’s', () => {
    for (const rate of ['0', '-5', '1.5', 'fast'])
      expect(formError(() => createBody('s', { frequency_hz: rate })).field, rate).toBe('frequency_hz');
    expect(formError(() => patchBody(on, { cpu_budget_percent: 'half' })).field).toBe('cpu_budget_percent');
    expect(createBody('s', { frequency_hz: '1000', cpu_budget_percent: '-1' })).toEqual({ service: 's', frequency_hz: 1000, cpu_budget_percent: -1 });
  });

  it('parses hosts separated by commas, spaces or lines, once each and sorted', () => {
    expect(parseHosts('web-2,web-1\nweb-3  web-1,,')).toEqual(['web-1', 'web-2', 'web-3']);
    expect(parseHosts('  ')).toEqual([]);
  });

  it("marks the field a server refusal names, and none for a 409's service", () => {
    expect(continuousErrorField("`frequency_hz` 1000 is outside this server's limits for continuous profiles: 1 to 100 Hz")).toBe(
      'frequency_hz',
    );
    expect(continuousErrorField('`cpu_budget_percent` 3 is outside this server\'s limits for continuous profiles: above 0 and at most 2 % of one core')).toBe(
      'cpu_budget_percent',
    );
    expect(continuousErrorField('`hosts` must be 1 to 253 characters of letters, digits, `.`, `-` or `_`')).toBe('hosts');
    expect(continuousErrorField('`event` off-cpu cannot be profiled continuously: use `cpu-clock` or `wall`')).toBe('event');
    expect(continuousErrorField('service "checkout" is already profiled continuously (7d0c…); change that one instead')).toBeNull();
    expect(continuousErrorField('`service` must be 1 to 253 characters')).toBeNull();
  });
});
