import { describe, expect, it } from 'vitest';
import {
  conditionText,
  countsText,
  createTriggerBody,
  observedText,
  outcomeText,
  profileHref,
  profileText,
  secsText,
  triggerErrorField,
  triggerFormValues,
  triggerProfilesHref,
  triggersByService,
  triggerState,
  type Trigger,
} from '../src/triggerfmt';
import { formError } from './formerror';

const hot: Trigger = {
  id: '29000000-0000-4000-8000-000000000001',
  service: 'checkout',
  condition: { kind: 'cpu_above', percent: 80, for_secs: 30 },
  duration_secs: 30,
  event: 'cpu-clock',
  frequency_hz: 99,
  cooldown_secs: 600,
  max_concurrent: 3,
  hosts: null,
  enabled: true,
  fired: 0,
  held_back: 0,
  last_fired_at: null,
  held_back_since: null,
  held_back_reason: null,
  created_by: 'alice',
  updated_by: 'alice',
  created_at: '2026-11-28T01:00:00Z',
  updated_at: '2026-11-28T01:00:00Z',
};

describe('a trigger in words', () => {
  it('says the condition with its threshold, unit and period', () => {
    expect(conditionText(hot.condition)).toBe('CPU above 80% of a core for 30 s');
    expect(conditionText({ kind: 'cpu_above', percent: 250, for_secs: 90 })).toBe('CPU above 250% of a core for 90 s');
    expect(conditionText({ kind: 'rss_growth', mib_per_min: 50, for_secs: 120 })).toBe('memory growing over 50 MiB/min for 2 min');
  });

  it('says seconds as minutes or hours when they are whole', () => {
    expect(secsText(45)).toBe('45 s');
    expect(secsText(90)).toBe('90 s');
    expect(secsText(600)).toBe('10 min');
    expect(secsText(7200)).toBe('2 h');
    expect(secsText(5400)).toBe('90 min');
  });

  it('says the profile it takes and how often', () => {
    expect(profileText(hot)).toBe('a 30 s cpu-clock profile at 99 Hz, 10 min apart per host, at most 3 at once (every host)');
    expect(profileText({ ...hot, event: 'wall', duration_secs: 60, frequency_hz: 49, cooldown_secs: 45, max_concurrent: 1, hosts: ['web-1'] })).toBe(
      'a 1 min wall profile at 49 Hz, 45 s apart per host, at most 1 at once (web-1)',
    );
  });

  it('is on, off, or held back with why and since when; off comes first', () => {
    expect(triggerState(hot)).toEqual({ state: 'on', text: 'on' });
    expect(triggerState({ ...hot, enabled: false })).toEqual({ state: 'off', text: 'off' });
    const held = { ...hot, held_back_since: '2026-11-28T04:00:00.123Z', held_back_reason: 'capped' };
    expect(triggerState(held)).toEqual({ state: 'held', text: 'held back (capped) since 2026-11-28 04:00:00Z' });
    expect(triggerState({ ...held, enabled: false }).state).toBe('off');
    expect(triggerState({ ...held, held_back_reason: null }).text).toBe('held back since 2026-11-28 04:00:00Z');
  });

  it('counts what it fired and held back, and when it last fired', () => {
    expect(countsText(hot)).toBe('fired 0; 0 held back');
    expect(countsText({ ...hot, fired: 2, held_back: 5, last_fired_at: '2026-11-28T04:00:00Z' })).toBe('fired 2, last 2026-11-28 04:00:00Z; 5 held back');
  });

  it('links its profiles: the profiles list filtered by its label', () => {
    expect(triggerProfilesHref(hot)).toBe('#/profiles?labels=trigger%3A29000000-0000-4000-8000-000000000001');
    expect(profileHref('7d0c1f7e-0000-4000-8000-000000000009')).toBe('#/profiles/7d0c1f7e-0000-4000-8000-000000000009');
  });

  it('says a firing’s observed value with its unit, and its outcome with the reason', () => {
    expect(observedText({ observed: 93.25, unit: '% of a core' })).toBe('93.3 % of a core');
    expect(observedText({ observed: 61, unit: 'MiB/min' })).toBe('61.0 MiB/min');
    expect(outcomeText({ outcome: 'started', reason: null })).toBe('started a profile');
    expect(outcomeText({ outcome: 'capped' })).toBe('held back: cap reached');
    expect(outcomeText({ outcome: 'busy', reason: 'the target was being profiled already (abc)' })).toBe(
      'target busy (the target was being profiled already (abc))',
    );
  });

  it('groups triggers by service, oldest first', () => {
    const later = { ...hot, id: '29000000-0000-4000-8000-000000000002', created_at: '2026-11-28T02:00:00Z' };
    const other = { ...hot, id: '29000000-0000-4000-8000-000000000003', service: 'search' };
    const by = triggersByService([later, other, hot]);
    expect([...by.keys()].sort()).toEqual(['checkout', 'search']);
    expect(by.get('checkout')!.map((t) => t.id)).toEqual([hot.id, later.id]);
    expect(by.get('search')).toEqual([other]);
    expect(triggersByService([]).size).toBe(0);
  });
});

describe('the trigger form', () => {
  it('starts from the server’s defaults, the threshold left to give', () => {
    expect(triggerFormValues()).toEqual({
      kind: 'cpu_above',
      threshold: '',
      for_secs: '30',
      duration_secs: '30',
      event: '',
      frequency_hz: '',
      cooldown_secs: '600',
      max_concurrent: '3',
      hosts: '',
    });
  });

  it('sends the condition and what was given; blanks take the defaults', () => {
    expect(createTriggerBody('checkout', { ...triggerFormValues(), threshold: ' 80 ' })).toEqual({
      service: 'checkout',
      condition: { kind: 'cpu_above', percent: 80, for_secs: 30 },
      duration_secs: 30,
      cooldown_secs: 600,
      max_concurrent: 3,
    });
    expect(
      createTriggerBody('checkout', {
        kind: 'rss_growth',
        threshold: '50',
        for_secs: '120',
        duration_secs: '',
        event: 'wall',
        frequency_hz: '49',
        cooldown_secs: '',
        max_concurrent: '',
        hosts: 'web-2, web-1 web-2',
      }),
    ).toEqual({
      service: 'checkout',
      condition: { kind: 'rss_growth', mib_per_min: 50, for_secs: 120 },
      event: 'wall',
      frequency_hz: 49,
      hosts: ['web-1', 'web-2'],
    });
  });

  it('needs a threshold and a period, naming the field', () => {
    expect(formError(() => createTriggerBody('s', { ...triggerFormValues() })).field).toBe('threshold');
    expect(formError(() => createTriggerBody('s', { ...triggerFormValues(), threshold: '80', for_secs: ' ' })).field).toBe('for_secs');
    expect(formError(() => createTriggerBody('s', { kind: 'rss_growth' })).message).toBe('give the threshold (MiB/min)');
    expect(formError(() => createTriggerBody('s', { kind: 'load', threshold: '1', for_secs: '1' })).field).toBe('kind');
  });

  it('refuses what is plainly not a whole number, naming the field; ranges are the server’s', () => {
    const given = { ...triggerFormValues(), threshold: '80' };
    for (const [field, bad] of [
      ['threshold', '80.5'],
      ['for_secs', '-1'],
      ['duration_secs', 'long'],
      ['frequency_hz', '1e10'],
      ['cooldown_secs', '1.5'],
      ['max_concurrent', 'many'],
    ] as const)
      expect(formError(() => createTriggerBody('s', { ...given, [field]: bad })).field, `${field} ${bad}`).toBe(field);
    expect(createTriggerBody('s', { ...given, threshold: '0', cooldown_secs: '1', max_concurrent: '0' })).toMatchObject({
      condition: { percent: 0 },
      cooldown_secs: 1,
      max_concurrent: 0,
    });
  });

  it('marks the field a server refusal names, and none for an undefined service', () => {
    expect(triggerErrorField('`cooldown_secs` 1 is outside 10..=604800')).toBe('cooldown_secs');
    expect(triggerErrorField('`max_concurrent` 0 is outside 1..=1000')).toBe('max_concurrent');
    expect(triggerErrorField('`duration_secs` 601 is outside 1..=600')).toBe('duration_secs');
    expect(triggerErrorField('`condition`: `for_secs` 0 is outside 1..=3600')).toBe('for_secs');
    expect(triggerErrorField('`condition`: the cpu_above threshold 0 is outside 1..=102400 (% of a core)')).toBe('threshold');
    expect(triggerErrorField('options: `event` "x" is not one of cpu-clock, wall')).toBe('event');
    expect(triggerErrorField('`hosts` must be 1 to 253 characters of letters, digits, `.`, `-` or `_`')).toBe('hosts');
    expect(triggerErrorField('no service "nope": define it first (POST /api/v1/services)')).toBeNull();
    expect(triggerErrorField('`service` must be 1 to 253 characters')).toBeNull();
  });
});
