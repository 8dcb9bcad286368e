import { describe, expect, it } from 'vitest';
import { amount, duration, isTimed, totalText, wholeOf, type SampleUnit } from '../src/units';

describe('sample units', () => {
  const wall: SampleUnit = { event: 'wall', unit: 'nanoseconds', period: 10_101_010.1 };
  const offCpu: SampleUnit = { event: 'off-cpu', unit: 'nanoseconds', period: 1e7 };
  const alloc: SampleUnit = { event: 'alloc-bytes', unit: 'bytes', period: 524_288 };

  it('reads timed samples as time', () => {
    expect(isTimed(wall)).toBe(true);
    expect(amount(150, wall)).toBe('1.52 s');
    expect(amount(3, offCpu)).toBe('30.0 ms');
    expect(duration(812_000)).toBe('812 µs');
    expect(totalText(150, wall)).toBe('1.52 s of wall time (150 samples)');
    expect(wholeOf(offCpu)).toBe('all off-CPU time');
  });

  it('keeps counts for other events and old answers', () => {
    expect(isTimed(alloc)).toBe(false);
    expect(amount(7, alloc)).toBe('7 samples');
    expect(amount(7, { event: 'cpu-clock' })).toBe('7 samples');
    expect(totalText(7, { event: 'cpu-clock' })).toBe('7 cpu-clock samples');
    expect(wholeOf({})).toBe('all samples');
  });
});
