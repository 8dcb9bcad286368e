import { describe, expect, it } from 'vitest';
import {
  chosenText,
  failedMembers,
  FormError,
  labelKeys,
  labelValues,
  memberCounts,
  pValueText,
  runErrorField,
  runIdOf,
  runProgress,
  runRequest,
  secsText,
  selectionText,
  stopRuleText,
  stratumText,
  type Run,
  type RunPrecision,
} from '../src/runfmt';

const run = (over: Partial<Run> = {}): Run => ({
  id: '3f0c2a1e-7b7d-4c4e-9a55-0d2f8e6b1c00',
  service: 'demo',
  status: 'running',
  created_at: '2026-01-01T00:00:00Z',
  ended_at: null,
  duration_secs: 60,
  hosts: { count: 2 },
  seed: 7,
  requested_by: 'alice',
  stratify_by: [],
  stop_when: { top: 3, max_stderr: 0.01 },
  selection: { hosts: ['a', 'b'], eligible: 5, requested: 2, capped: false, strata: [] },
  members: [
    { host: 'a', status: 'running', profile_id: 'p-a' },
    { host: 'b', status: 'failed', reason: 'not started: the target already has a live profile x (requested by bob, running)' },
  ],
  ...over,
});

const precision = (reached: number | null, met = false): RunPrecision => ({
  run: 'r',
  stop_when: { top: 3, max_stderr: 0.01 },
  decision: {
    hosts: 1,
    met,
    method: 'pooled',
    reached_epsilon: reached,
    samples_used: 900,
    projected_samples: 1600,
    top: [{ function: 'demo_hot', share: 0.6, stderr: reached ?? 0, pooled_stderr: reached ?? 0 }],
  },
});

describe('the run request from the form', () => {
  it('sends every live host by default, with the duration', () => {
    expect(runRequest({ service: 'demo', duration_secs: '30', hosts: 'all' })).toEqual({ service: 'demo', duration_secs: 30, hosts: 'all' });
  });

  it('takes a count or a percent, stratify labels, seed, strict, sampling and options', () => {
    expect(
      runRequest(
        {
          service: ' demo ',
          hosts: 'count',
          count: '3',
          percent: '10',
          strict: 'on',
          seed: '7',
          duration_secs: '5',
          frequency_hz: '49',
          window_secs: '2',
          plugin: 'native',
          event: 'wall',
          stop: 'on',
          top: '3',
          max_stderr: '1',
        },
        ['arch', 'zone'],
      ),
    ).toEqual({
      service: 'demo',
      hosts: { count: 3 },
      stratify_by: ['arch', 'zone'],
      seed: 7,
      strict: true,
      duration_secs: 5,
      frequency_hz: 49,
      window_secs: 2,
      options: { plugin: 'native', event: 'wall' },
      stop_when: { top: 3, max_stderr: 0.01 },
    });
    const percent = runRequest({ service: 'demo', hosts: 'percent', percent: '12.5', count: '3', strict: 'on', duration_secs: '5' });
    expect(percent.hosts).toEqual({ percent: 12.5 });
    expect(percent).not.toHaveProperty('strict');
  });

  it('turns ε in percentage points into a share, exactly', () => {
    const rule = (pts: string) => runRequest({ service: 's', duration_secs: '5', stop: 'on', top: '1', max_stderr: pts }).stop_when;
    expect(rule('0.1')).toEqual({ top: 1, max_stderr: 0.001 });
    expect(rule('0.5')).toEqual({ top: 1, max_stderr: 0.005 });
    expect(rule('2')).toEqual({ top: 1, max_stderr: 0.02 });
  });

  it('leaves the stop rule, seed and options out when not asked for', () => {
    const body = runRequest({ service: 's', duration_secs: '5', stop: '', top: '3', max_stderr: '1', seed: '', plugin: '', event: '' });
    expect(body).toEqual({ service: 's', duration_secs: 5, hosts: 'all' });
  });

  it('refuses what is plainly not a request, naming the field', () => {
    const refusal = (f: Parameters<typeof runRequest>[0]) => {
      try {
        runRequest(f);
      } catch (e) {
        expect(e).toBeInstanceOf(FormError);
        return [(e as FormError).field, (e as FormError).message];
      }
      throw new Error('accepted');
    };
    expect(refusal({ duration_secs: '5' })[0]).toBe('service');
    expect(refusal({ service: 's' })[0]).toBe('duration_secs');
    expect(refusal({ service: 's', duration_secs: '1.5' })[0]).toBe('duration_secs');
    expect(refusal({ service: 's', duration_secs: '5', hosts: 'count', count: '0' })[0]).toBe('count');
    expect(refusal({ service: 's', duration_secs: '5', hosts: 'percent', percent: '0' })[0]).toBe('percent');
    expect(refusal({ service: 's', duration_secs: '5', hosts: 'percent', percent: '101' })[0]).toBe('percent');
    expect(refusal({ service: 's', duration_secs: '5', seed: '-1' })[0]).toBe('seed');
    expect(refusal({ service: 's', duration_secs: '5', stop: 'on', top: '0', max_stderr: '1' })[0]).toBe('top');
    expect(refusal({ service: 's', duration_secs: '5', stop: 'on', top: '3', max_stderr: '0' })[0]).toBe('max_stderr');
    expect(refusal({ service: 's', duration_secs: '5', stop: 'on', top: '3', max_stderr: '100' })[1]).toMatch(/percentage points/);
  });

  it("marks the field a server refusal is about", () => {
    expect(runErrorField('stop_when.top must be at least 1')).toBe('top');
    expect(runErrorField('stop_when.max_stderr 0 is outside (0, 1)')).toBe('max_stderr');
    expect(runErrorField('percent 0 is outside (0, 100]')).toBe('percent');
    expect(runErrorField('count 3 is more than the 1 live hosts, and strict is set')).toBe('count');
    expect(runErrorField('no live host has the label `rack` to stratify by (labels seen: arch)')).toBe('stratify_by');
    expect(runErrorField('no service "nope" is defined (POST /api/v1/services)')).toBe('service');
    expect(runErrorField('`duration_secs` must be between 1 and 3600')).toBe('duration_secs');
    expect(runErrorField('`event` "x" is not one of cycles, …')).toBe('event');
    expect(runErrorField('the host limit of 2000 is reached')).toBeNull();
  });
});

describe('run progress', () => {
  const now = Date.parse('2026-01-01T00:00:15Z');

  it('counts time against the maximum, and the members by state', () => {
    const p = runProgress(run(), precision(0.015), now);
    expect(p.live).toBe(true);
    expect(p.elapsedSecs).toBe(15);
    expect(p.fraction).toBe(0.25);
    expect(p.elapsedText).toBe('15 s of 1 min max');
    expect(p.membersText).toBe('1 running, 0 finished, 1 failed of 2');
    expect(p.precisionText).toBe('±1.50 pts reached of ±1.00 pts wanted (top 3)');
    expect(p.met).toBe(false);
  });

  it('stops the clock at the end, and says when the rule was met', () => {
    const ended = run({
      status: 'precise',
      ended_at: '2026-01-01T00:01:30Z',
      members: [{ host: 'a', status: 'stopped', profile_id: 'p' }],
      reached_epsilon: 0.009,
    });
    const p = runProgress(ended, precision(0.009, true), now + 3600_000);
    expect([p.live, p.fraction, p.elapsedText]).toEqual([false, 1, '1 min 30 s of 1 min max']);
    expect(p.precisionText).toBe('±0.90 pts reached of ±1.00 pts wanted (top 3): met');
    expect(p.membersText).toBe('0 running, 1 finished, 0 failed of 1');
    // Stopped early: the clock shows what it used of the maximum.
    const stopped = runProgress(run({ status: 'stopped', ended_at: '2026-01-01T00:00:06Z' }), null, now);
    expect([stopped.live, stopped.fraction, stopped.elapsedText]).toEqual([false, 0.1, '6 s of 1 min max']);
    // Without /precision: the run's own numbers.
    expect(runProgress(ended, null, now).precisionText).toBe('±0.90 pts reached of ±1.00 pts wanted (top 3): met');
  });

  it('says when there is no sample yet, and when the run has no rule of its own', () => {
    expect(runProgress(run({ status: 'dispatching' }), precision(null), now).precisionText).toBe('no samples yet');
    expect(runProgress(run({ stop_when: null }), precision(0.02), now).precisionText).toMatch(/no stop rule, for reference$/);
    const starting = run({ members: [{ host: 'a', status: 'dispatched' }] });
    expect(runProgress(starting, null, now).membersText).toBe('1 starting, 0 running, 0 finished, 0 failed of 1');
    expect(memberCounts(run().members)).toEqual({ total: 2, waiting: 0, running: 1, finished: 0, failed: 1 });
  });

  it('lists each host without a profile with its reason', () => {
    expect(failedMembers(run().members)).toEqual([
      { host: 'b', reason: 'not started: the target already has a live profile x (requested by bob, running)' },
    ]);
    expect(failedMembers([{ host: 'c', status: 'expired' }])).toEqual([{ host: 'c', reason: 'expired' }]);
  });
});

describe('run wording', () => {
  it('words selections, the hosts chosen, strata and stop rules', () => {
    expect(selectionText('all')).toBe('all live hosts');
    expect(selectionText({ count: 1 })).toBe('1 host');
    expect(selectionText({ count: 20 })).toBe('20 hosts');
    expect(selectionText({ percent: 10 })).toBe('10% of live hosts');
    expect(chosenText({ hosts: ['a'], eligible: 1, requested: 20, capped: true, strata: [] })).toBe(
      '1 of 1 eligible host (asked for 20: capped at the live hosts)',
    );
    expect(chosenText({ hosts: ['a', 'b'], eligible: 9, requested: 2, capped: false, strata: [] })).toBe('2 of 9 eligible hosts');
    expect(stratumText({ zone: 'eu-1', arch: 'x86_64' })).toBe('arch=x86_64, zone=eu-1');
    expect(stratumText({})).toBe('(without the labels)');
    expect(stopRuleText({ top: 3, max_stderr: 0.005 })).toBe('top 3 shares to ±0.50 pts');
    expect(stopRuleText(null)).toMatch(/^none/);
    expect([secsText(5), secsText(59.6), secsText(120), secsText(3599)]).toEqual(['5 s', '1 min', '2 min', '59 min 59 s']);
    expect(pValueText(1)).toBe('1');
    expect(pValueText(0.0321)).toBe('0.032');
    expect(pValueText(0.004)).toBe('0.0040');
    expect(pValueText(1e-9)).toBe('< 0.0001');
  });

  it('offers the labels the hosts report to stratify by', () => {
    const hosts: Array<{ labels: Record<string, string> }> = [{ labels: { arch: 'x86_64', zone: 'eu-1' } }, { labels: { arch: 'aarch64', cores: '8' } }, { labels: {} }];
    expect(labelKeys(hosts)).toEqual(['arch', 'cores', 'zone']);
    expect(labelValues(hosts, 'arch')).toEqual(['aarch64', 'x86_64']);
    expect(labelKeys([])).toEqual([]);
  });

  it("finds a member profile's run from run_id or its run label", () => {
    const id = '3f0c2a1e-7b7d-4c4e-9a55-0d2f8e6b1c00';
    expect(runIdOf({ run_id: id, labels: {} })).toBe(id);
    expect(runIdOf({ labels: { run: id, env: 'x' } })).toBe(id);
    expect(runIdOf({ labels: { run: 'nightly' } })).toBeNull();
    expect(runIdOf({ labels: {} })).toBeNull();
  });
});
