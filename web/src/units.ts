// What a sample stands for. Answers of time-based events (cpu-clock, wall,
// off-cpu, lock) carry `unit: "nanoseconds"` and the nanoseconds one sample
// stands for (`period`), so views say how long, not only how often: a wall
// or off-CPU profile reads in seconds. Pure, so it unit-tests.

import type { Schemas } from './api';

/** The unit fields of a flame graph, top or aggregate answer (the
 *  document's `SampleUnit` and the answer's `event`), any of them absent. */
export type SampleUnit = Partial<Pick<Schemas['FlameGraphJson'], 'event' | 'unit' | 'period'>>;

/** What a start (or a schedule's runs) may measure, for the forms. */
export const EVENT_CHOICES: Array<[string, string]> = [
  ['', 'CPU'],
  ['off-cpu', 'off-CPU time: where threads block (native)'],
  ['wall', 'wall time: on and off CPU (native, Python)'],
  ['lock', 'lock waits (JVM)'],
  ['alloc-bytes', 'allocations (JVM)'],
  ['heap-bytes', 'heap at the end (JVM)'],
];

/** Events whose starts take a minimum wait. */
export const WAIT_EVENTS = ['off-cpu', 'lock'];

export function isTimed(u: SampleUnit): boolean {
  return u.unit === 'nanoseconds' && typeof u.period === 'number' && u.period > 0;
}

/** Nanoseconds as `812 µs`, `45.3 ms` or `12.40 s`. */
export function duration(nanos: number): string {
  if (nanos >= 1e9) return `${(nanos / 1e9).toFixed(2)} s`;
  if (nanos >= 1e6) return `${(nanos / 1e6).toFixed(1)} ms`;
  return `${Math.round(nanos / 1e3)} µs`;
}

/** `1.52 s` for samples of a timed event, else `152 samples`. */
export function amount(samples: number, u: SampleUnit): string {
  return isTimed(u) ? duration(samples * (u.period as number)) : `${samples} samples`;
}

/** What the shares of a graph are shares of. */
export function wholeOf(u: SampleUnit): string {
  switch (u.event) {
    case 'wall':
      return 'all wall time';
    case 'off-cpu':
      return 'all off-CPU time';
    case 'lock':
      return 'all lock-wait time';
    default:
      return isTimed(u) ? 'all CPU time' : 'all samples';
  }
}

/** A summary like `1.52 s of off-CPU time (152 samples)` or `152 cpu-clock samples`. */
export function totalText(samples: number, u: SampleUnit): string {
  if (!isTimed(u)) return `${samples} ${u.event ?? ''} samples`.replace('  ', ' ');
  return `${amount(samples, u)} of ${wholeOf(u).replace(/^all /, '')} (${samples} samples)`;
}
