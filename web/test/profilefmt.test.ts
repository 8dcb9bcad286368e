import { describe, expect, it } from 'vitest';
import {
  durationText,
  rateText,
  requesterText,
  scheduleIdOf,
  sourceText,
  targetFields,
  targetText,
} from '../src/profilefmt';

const imported = { target: { by: 'imported' as const, value: 'pprof' }, duration_ms: 0, frequency_hz: 0, requested_by: 'ci' };

describe('profile wording', () => {
  it('names every kind of target', () => {
    expect(targetText({ by: 'pid', value: 42 })).toBe('pid 42');
    expect(targetText({ by: 'process_name', value: 'cpu-split' })).toBe('cpu-split');
    expect(targetText({ by: 'cmdline', value: 'java .*checkout' })).toBe('cmdline /java .*checkout/');
    expect(targetText({ by: 'cgroup', value: '/system.slice/x.service' })).toBe('cgroup /system.slice/x.service');
    expect(targetText(imported.target)).toBe('imported pprof file');
    expect(targetText(null)).toBe('—');
  });

  it('says an imported file had no duration or rate instead of 0', () => {
    expect(durationText(imported)).toBe('duration not in the file');
    expect(rateText(imported)).toBe('rate not in the file');
    expect(durationText({ ...imported, duration_ms: 30_000 })).toBe('30 s');
    expect(rateText({ ...imported, frequency_hz: 100 })).toBe('100 Hz');
    expect(sourceText(imported)).toBe('uploaded as a pprof file by ci');
    const live = { target: { by: 'pid' as const, value: 1 }, duration_ms: 5000, frequency_hz: 99, requested_by: 'x' };
    expect([durationText(live), rateText(live), sourceText(live)]).toEqual(['5 s', '99 Hz', null]);
  });

  it("names a schedule's runs by the schedule", () => {
    const names = new Map([['0b9e4c3a-1111-2222-3333-444455556666', 'nightly']]);
    expect(scheduleIdOf('schedule:abc')).toBe('abc');
    expect(scheduleIdOf('alice')).toBeNull();
    expect(requesterText('schedule:0b9e4c3a-1111-2222-3333-444455556666', names)).toBe('schedule nightly');
    expect(requesterText('schedule:deadbeef-0000-0000-0000-000000000000', names)).toBe('schedule deadbeef (deleted)');
    expect(requesterText('alice', names)).toBe('alice');
  });
});

describe('targets typed in a form', () => {
  it('maps each kind to its request field', () => {
    expect(targetFields('process_name', ' cpu-split ')).toEqual({ process_name: 'cpu-split' });
    expect(targetFields('pid', '4242')).toEqual({ pid: 4242 });
    expect(targetFields('cmdline', 'java .*-jar x\\.jar', 'checkout')).toEqual({ cmdline: 'java .*-jar x\\.jar' });
    expect(targetFields('cgroup', '/system.slice/x.service', 'x')).toEqual({ cgroup: '/system.slice/x.service' });
  });

  it('refuses values that do not fit, with the reason', () => {
    expect(() => targetFields('pid', 'abc')).toThrow(/not a process id/);
    expect(() => targetFields('pid', '0')).toThrow(/not a process id/);
    expect(() => targetFields('process_name', '/usr/bin/java')).toThrow(/no "\/"/);
    expect(() => targetFields('cmdline', 'java (', 'svc')).toThrow(/not a regex/);
    expect(() => targetFields('cmdline', 'java')).toThrow(/give the service/);
    expect(() => targetFields('cgroup', 'abc', ' ')).toThrow(/give the service/);
    expect(() => targetFields('process_name', '  ')).toThrow(/give the process name/);
  });
});

describe('schedule history', async () => {
  const { historySummary } = await import('../src/schedules/schedulehistory');
  const run = (outcome: 'started' | 'missed' | 'skipped_busy' | 'failed', at: string, detail?: string) => ({
    outcome,
    fired_at: at,
    scheduled_for: at,
    detail,
  });
  it('counts failures and names the latest firing that started nothing', () => {
    const s = historySummary([
      run('failed', '2026-01-01T00:01:00Z', 'no live agent'),
      run('started', '2026-01-01T00:02:00Z'),
      run('skipped_busy', '2026-01-01T00:03:00Z', 'the target already has a live profile: x'),
      run('started', '2026-01-01T00:04:00Z'),
    ]);
    expect(s).toMatchObject({ total: 4, failed: 1, missed: 1 });
    expect(s.lastProblem?.detail).toBe('the target already has a live profile: x');
    expect(historySummary([run('started', '2026-01-01T00:00:00Z')]).lastProblem).toBeNull();
  });
});
