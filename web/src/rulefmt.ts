// Detection rules, their re-analyses and regression findings: the API's
// shapes and how the views word them (no DOM here, so they unit-test).

import type { RuntimeLibrary, Schemas } from './api';

/** A rule; `spec` is the rule kind's own parameters (free-form in the
 *  document, worded by `specText`). */
export type Rule = Schemas['Rule'];

export type Reanalysis = Schemas['Reanalysis'];

/** A rule with its latest re-analysis (`GET`/`PATCH /api/v1/rules/{id}`). */
export type RuleView = Schemas['RuleView'];

/** Whether a re-analysis is still to be polled. */
export function reanalysisActive(r: Reanalysis | null | undefined): boolean {
  return !!r && (r.status === 'pending' || r.status === 'running');
}

/** "re-analysed N/M profiles" and the like. */
export function reanalysisText(r: Reanalysis | null | undefined): string {
  if (!r) return '—';
  const of = r.profiles_total == null ? '' : `/${r.profiles_total}`;
  switch (r.status) {
    case 'pending':
      return 're-analysis queued';
    case 'running':
      return `re-analysing ${r.profiles_done}${of} profiles`;
    case 'finished':
      return `re-analysed ${r.profiles_done}${of} profiles`;
    case 'failed':
      return `re-analysis failed after ${r.profiles_done}${of} profiles${r.error ? `: ${r.error}` : ''}`;
    default:
      return `${r.status} ${r.profiles_done}${of}`;
  }
}

/** What a rule matches, in a line. */
export function specText(kind: string, spec: Record<string, unknown> | null | undefined): string {
  const s = spec ?? {};
  if (kind === 'stack_share') {
    const parts = [`function ~ /${String(s.function ?? '')}/`];
    if (s.module) parts.push(`module ~ /${String(s.module)}/`);
    if (s.leaf_only) parts.push('leaf only');
    return parts.join(', ');
  }
  if (kind === 'share_regression') {
    const parts = [];
    if (s.previous_runs !== undefined) parts.push(`vs ${s.previous_runs} previous runs`);
    if (s.min_share_pct !== undefined) parts.push(`functions ≥ ${s.min_share_pct}%`);
    return parts.join(', ') || 'vs previous runs';
  }
  if (kind === 'library_version') {
    const parts = [`${s.kind ? `${String(s.kind)} ` : ''}library ~ /${String(s.library ?? '')}/`];
    if (s.versions) parts.push(`versions ${String(s.versions)}`);
    return parts.join(', ');
  }
  if (kind === 'runtime_option') {
    const parts = s.language ? [String(s.language)] : [];
    if (s.flag) parts.push(`flag ~ /${String(s.flag)}/`);
    if (s.version) parts.push(`version ${String(s.version)}`);
    return parts.join(', ');
  }
  return JSON.stringify(s);
}

/** `{"checkout": 2}` as `checkout: 2%`. */
export function serviceThresholdsText(t: Record<string, number> | null | undefined): string {
  return Object.keys(t ?? {})
    .sort()
    .map((s) => `${s}: ${t![s]}%`)
    .join(', ');
}

/** A threshold typed in a form: a number from 0 to 100 (percent). */
export function parseThreshold(text: string): number {
  const t = text.trim();
  const n = Number(t);
  if (!t || !Number.isFinite(n) || n < 0 || n > 100) throw new Error(`threshold "${text}" is not a percentage from 0 to 100`);
  return n;
}

/** The body of `POST /api/v1/rules` for a stack-share rule from the form's
 *  fields (blank module: none). */
export function stackShareBody(f: Record<string, string | boolean>): Schemas['RuleBody'] {
  const text = (k: string) => String(f[k] ?? '').trim();
  const spec: Record<string, unknown> = { function: text('function') };
  if (text('module')) spec.module = text('module');
  if (f.leaf_only) spec.leaf_only = true;
  return {
    id: text('id'),
    title: text('title'),
    explanation: text('explanation'),
    fix: text('fix'),
    link: text('link'),
    kind: 'stack_share',
    spec,
    threshold_pct: parseThreshold(text('threshold_pct')),
  };
}

/** A `share_regression` issue's `detail` (hand-written: `Issue.detail` is
 *  free-form in the document). */
export interface RegressionDetail {
  runs_compared: number;
  functions: Array<{ function: string; share_pct: number; baseline_pct: number; growth_points: number }>;
  new_rules: string[];
}

/** A `share_regression` issue's detail, or null when it is not one. */
export function regressionDetail(detail: unknown): RegressionDetail | null {
  const d = detail as Partial<RegressionDetail> | null;
  if (!d || typeof d !== 'object' || typeof d.runs_compared !== 'number') return null;
  return {
    runs_compared: d.runs_compared,
    functions: Array.isArray(d.functions) ? d.functions : [],
    new_rules: Array.isArray(d.new_rules) ? d.new_rules.map(String) : [],
  };
}

const points = (n: number) => `${n >= 0 ? '+' : ''}${n.toFixed(1)} points`;

/** "grew +X points vs mean of N previous runs" (`share` is the growth). */
export function regressionSummary(share: number, d: RegressionDetail): string {
  const runs = `${d.runs_compared} previous run${d.runs_compared === 1 ? '' : 's'}`;
  return `grew ${points(share)} vs mean of ${runs}`;
}

export { points as growthPoints };

/** What a `library_version` or `runtime_option` detection matched, in a
 *  line ("jar log4j 1.2.17", "jvm 17.0.2, flags -Xint"), or null for other
 *  kinds' details. */
export function runtimeMatchText(kind: string, detail: unknown): string | null {
  const d = (detail ?? {}) as Record<string, unknown>;
  if (kind === 'library_version') {
    const libs = Array.isArray(d.libraries) ? (d.libraries as Array<Partial<RuntimeLibrary>>) : [];
    const names = libs.map((l) => [l.kind, l.name, l.version ?? '(version unknown)'].filter(Boolean).join(' '));
    const more = typeof d.libraries_matched === 'number' ? ` (${d.libraries_matched} in all)` : '';
    return names.length ? `uses ${names.join(', ')}${more}` : null;
  }
  if (kind === 'runtime_option') {
    const parts = [];
    if (d.language || d.runtime_version) parts.push([d.language, d.runtime_version].filter(Boolean).join(' '));
    if (Array.isArray(d.flags) && d.flags.length) parts.push(`flags ${d.flags.map(String).join(' ')}`);
    return parts.length ? `runs ${parts.join(', ')}` : null;
  }
  return null;
}
