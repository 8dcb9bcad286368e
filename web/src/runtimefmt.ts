// How the profile view words what the agent reported about a target's
// runtime and what the start asked of it (no DOM here, so it unit-tests).

import type { ProfileRuntime, RuntimeLibrary, Schemas } from './api';

/** "jvm 17.0.15", "python", "native"; null before the agent reported. */
export function runtimeTitle(r: ProfileRuntime | null | undefined): string | null {
  if (!r || !r.language) return null;
  return [r.language, r.runtime_version].filter(Boolean).join(' ');
}

/** "/usr/bin/java (build id 9c813489…)". */
export function executableText(r: ProfileRuntime | null | undefined): string | null {
  const exe = r?.runtime?.executable;
  if (!exe) return null;
  return exe.build_id ? `${exe.path} (build id ${exe.build_id.slice(0, 12)}…)` : exe.path;
}

/** Libraries grouped by kind, each "name version", sorted by name. */
export function librariesByKind(r: ProfileRuntime | null | undefined): Array<[string, string[]]> {
  const groups = new Map<string, RuntimeLibrary[]>();
  for (const lib of r?.runtime?.libraries ?? []) {
    const list = groups.get(lib.kind) ?? [];
    list.push(lib);
    groups.set(lib.kind, list);
  }
  const order = ['jar', 'python', 'shared'];
  const rank = (k: string) => (order.includes(k) ? order.indexOf(k) : order.length);
  return [...groups.entries()]
    .sort(([a], [b]) => rank(a) - rank(b) || a.localeCompare(b))
    .map(([kind, libs]) => [
      kind,
      libs.map((l) => (l.version ? `${l.name} ${l.version}` : l.name)).sort((a, b) => a.localeCompare(b)),
    ]);
}

/** The start's options in a line: "plugin jvm · alloc-bytes · FDA off". */
export function optionsText(options: Partial<Schemas['StartOptions']> | null | undefined): string {
  const o = options ?? {};
  const parts: string[] = [];
  if (o.plugin) parts.push(`plugin ${o.plugin}`);
  if (o.event) parts.push(o.event);
  if (typeof o.fsp_share === 'number') parts.push(o.fsp_share >= 1 ? 'FSP off' : `FSP ${o.fsp_share * 100}%`);
  const fda = o.fda;
  if (fda) parts.push(fda.enabled === false ? 'FDA off' : `FDA θ=${fda.theta ?? 0.05}`);
  const duty = o.duty_cycle;
  if (duty?.on_ms && duty.period_ms) parts.push(`on ${duty.on_ms / 1000} s of every ${duty.period_ms / 1000} s`);
  if (typeof o.overhead_budget === 'number') parts.push(`budget ${o.overhead_budget * 100}% of a core`);
  if (o.include_children) parts.push('with its children');
  return parts.length ? parts.join(' · ') : 'agent defaults';
}
