// The compare page's address: each side a profile, a run (or one stratum
// of its hosts), or a service over a time range given by a preset (`last hour`, `last 24 h`, `last 7 days`)
// or by dates; flipping swaps the sides. Pure, so it unit-tests.

import { localInputToIso } from './format';

export type Side = 'baseline' | 'target';

export const RANGE_PRESETS = [
  { value: '1h', label: 'last hour', ms: 3600_000 },
  { value: '24h', label: 'last 24 h', ms: 24 * 3600_000 },
  { value: '7d', label: 'last 7 days', ms: 7 * 24 * 3600_000 },
] as const;

/** The range a preset stands for, ending at `now` (RFC 3339), or null for
 *  an unknown one. */
export function presetRange(preset: string, now: Date): { since: string; until: string } | null {
  const p = RANGE_PRESETS.find((r) => r.value === preset);
  if (!p) return null;
  return { since: new Date(now.getTime() - p.ms).toISOString(), until: now.toISOString() };
}

/** The diff API's parameters of one side from the page's address: the
 *  profile, else a run's members (only those of a stratum when `_labels`
 *  names one), else the service and its range (a preset wins over dates,
 *  which are UTC `datetime-local` values). */
export function sideQuery(q: URLSearchParams, side: Side, now: Date): Record<string, string> {
  const out: Record<string, string> = {};
  const profile = q.get(side);
  if (profile) {
    out[side] = profile;
    return out;
  }
  const run = q.get(`${side}_run`);
  if (run) {
    out[`${side}_run`] = run;
    const labels = q.get(`${side}_labels`);
    if (labels) out[`${side}_labels`] = labels;
    return out;
  }
  const service = q.get(`${side}_service`);
  if (!service) return out;
  out[`${side}_service`] = service;
  const preset = presetRange(q.get(`${side}_range`) ?? '', now);
  const since = preset?.since ?? localInputToIso(q.get(`${side}_since`) ?? '');
  const until = preset?.until ?? localInputToIso(q.get(`${side}_until`) ?? '');
  if (since) out[`${side}_since`] = since;
  if (until) out[`${side}_until`] = until;
  return out;
}

/** The address with baseline and target swapped (every `baseline*` key
 *  becomes `target*` and back); other keys stay. */
export function flipSides(q: URLSearchParams): URLSearchParams {
  const out = new URLSearchParams();
  for (const [k, v] of q) {
    if (k === 'baseline' || k.startsWith('baseline_')) out.append('target' + k.slice('baseline'.length), v);
    else if (k === 'target' || k.startsWith('target_')) out.append('baseline' + k.slice('target'.length), v);
    else out.append(k, v);
  }
  return out;
}

/** The address comparing two strata of one run: `labels` as the diff API
 *  takes them (`zone:a,version:v1`). */
export function strataCompareQuery(run: string, baseline: Record<string, string>, target: Record<string, string>): Record<string, string> {
  const labels = (l: Record<string, string>) =>
    Object.keys(l)
      .sort()
      .map((k) => `${k}:${l[k]}`)
      .join(',');
  return { baseline_run: run, baseline_labels: labels(baseline), target_run: run, target_labels: labels(target) };
}
