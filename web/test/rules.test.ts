import { describe, expect, it } from 'vitest';
import {
  parseThreshold,
  reanalysisActive,
  reanalysisText,
  regressionDetail,
  regressionSummary,
  runtimeMatchText,
  serviceThresholdsText,
  specText,
  stackShareBody,
  type Reanalysis,
} from '../src/rulefmt';
import { executableText, librariesByKind, optionsText, runtimeTitle } from '../src/runtimefmt';
import type { ProfileRuntime } from '../src/api';

const job = (over: Partial<Reanalysis>): Reanalysis => ({
  id: 'j',
  rule_id: 'r',
  requested_by: 'admin',
  requested_at: '2026-01-01T00:00:00Z',
  status: 'pending',
  profiles_total: null,
  profiles_done: 0,
  started_at: null,
  finished_at: null,
  error: null,
  ...over,
});

describe('re-analysis progress', () => {
  it('words each status with done/total', () => {
    expect(reanalysisText(null)).toBe('—');
    expect(reanalysisText(job({}))).toBe('re-analysis queued');
    expect(reanalysisText(job({ status: 'running', profiles_total: 40, profiles_done: 12 }))).toBe('re-analysing 12/40 profiles');
    expect(reanalysisText(job({ status: 'running', profiles_done: 0 }))).toBe('re-analysing 0 profiles');
    expect(reanalysisText(job({ status: 'finished', profiles_total: 40, profiles_done: 40 }))).toBe('re-analysed 40/40 profiles');
    expect(reanalysisText(job({ status: 'failed', profiles_total: 4, profiles_done: 1, error: 'boom' }))).toBe(
      're-analysis failed after 1/4 profiles: boom',
    );
  });

  it('polls only pending and running jobs', () => {
    expect(reanalysisActive(job({}))).toBe(true);
    expect(reanalysisActive(job({ status: 'running' }))).toBe(true);
    expect(reanalysisActive(job({ status: 'finished' }))).toBe(false);
    expect(reanalysisActive(job({ status: 'failed' }))).toBe(false);
    expect(reanalysisActive(null)).toBe(false);
  });
});

describe('rule text', () => {
  it('summarizes specs of both kinds', () => {
    expect(specText('stack_share', { function: 'a.b', module: 'libc', leaf_only: true })).toBe(
      'function ~ /a.b/, module ~ /libc/, leaf only',
    );
    expect(specText('stack_share', { function: 'x', leaf_only: false })).toBe('function ~ /x/');
    expect(specText('share_regression', { previous_runs: 5, min_share_pct: 1 })).toBe('vs 5 previous runs, functions ≥ 1%');
    expect(specText('share_regression', {})).toBe('vs previous runs');
  });

  it('lists per-service thresholds', () => {
    expect(serviceThresholdsText({ search: 5, checkout: 2 })).toBe('checkout: 2%, search: 5%');
    expect(serviceThresholdsText({})).toBe('');
  });

  it('takes thresholds from 0 to 100', () => {
    expect(parseThreshold(' 2.5 ')).toBe(2.5);
    expect(parseThreshold('0')).toBe(0);
    for (const bad of ['', 'x', '-1', '101']) expect(() => parseThreshold(bad)).toThrow(/0 to 100/);
  });

  it("builds a stack-share rule's body from the form", () => {
    const fields = {
      id: ' my-rule ',
      title: 'T',
      explanation: 'E',
      fix: 'F',
      link: 'https://x',
      function: 'json[./]parse',
      module: '',
      leaf_only: false,
      threshold_pct: '3',
    };
    expect(stackShareBody(fields)).toEqual({
      id: 'my-rule',
      title: 'T',
      explanation: 'E',
      fix: 'F',
      link: 'https://x',
      kind: 'stack_share',
      spec: { function: 'json[./]parse' },
      threshold_pct: 3,
    });
    expect(stackShareBody({ ...fields, module: 'libjson', leaf_only: true }).spec).toEqual({
      function: 'json[./]parse',
      module: 'libjson',
      leaf_only: true,
    });
  });
});

describe('regression detail', () => {
  const detail = {
    runs_compared: 2,
    functions: [{ function: 'parse', share_pct: 30, baseline_pct: 12, growth_points: 18 }],
    new_rules: ['jvm-stringbuffer'],
  };

  it('reads a share_regression detail and ignores anything else', () => {
    expect(regressionDetail(detail)).toEqual(detail);
    expect(regressionDetail({ runs_compared: 1 })).toEqual({ runs_compared: 1, functions: [], new_rules: [] });
    expect(regressionDetail(null)).toBeNull();
    expect(regressionDetail({ functions: [] })).toBeNull();
  });

  it('says how much it grew against how many runs', () => {
    expect(regressionSummary(18, regressionDetail(detail)!)).toBe('grew +18.0 points vs mean of 2 previous runs');
    expect(regressionSummary(0, { runs_compared: 1, functions: [], new_rules: ['x'] })).toBe(
      'grew +0.0 points vs mean of 1 previous run',
    );
  });
});

describe('runtime rules', () => {
  it('word library and runtime-option specs', () => {
    expect(specText('library_version', { library: '^log4j-core$', kind: 'jar', versions: '>=2.0-beta9, <2.15.0' })).toBe(
      'jar library ~ /^log4j-core$/, versions >=2.0-beta9, <2.15.0',
    );
    expect(specText('runtime_option', { language: 'python', version: '<3.11' })).toBe('python, version <3.11');
    expect(specText('runtime_option', { flag: '^-Xint$' })).toBe('flag ~ /^-Xint$/');
  });

  it('say what a detection matched instead of a share that is always 100%', () => {
    expect(
      runtimeMatchText('library_version', {
        libraries: [
          { kind: 'jar', name: 'log4j', version: '1.2.17' },
          { kind: 'python', name: 'pydantic' },
        ],
        libraries_matched: 25,
      }),
    ).toBe('uses jar log4j 1.2.17, python pydantic (version unknown) (25 in all)');
    expect(runtimeMatchText('runtime_option', { language: 'jvm', runtime_version: '17.0.2', flags: ['-Xint'] })).toBe(
      'runs jvm 17.0.2, flags -Xint',
    );
    expect(runtimeMatchText('runtime_option', { language: 'python', runtime_version: '3.9' })).toBe('runs python 3.9');
    expect(runtimeMatchText('stack_share', null)).toBeNull();
    expect(runtimeMatchText('library_version', {})).toBeNull();
  });
});

describe('profile runtime', () => {
  const runtime: ProfileRuntime = {
    language: 'jvm',
    runtime_version: '17.0.15',
    runtime: {
      flags: ['-XX:+UseSerialGC'],
      libraries: [
        { kind: 'shared', name: 'libc', version: '6' },
        { kind: 'jar', name: 'log4j', version: '1.2.17' },
        { kind: 'jar', name: 'guava' },
      ],
      executable: { path: '/usr/bin/java', build_id: '9c81348976100179b98a' },
    },
  };

  it('names the runtime, its executable and its libraries by kind', () => {
    expect(runtimeTitle(runtime)).toBe('jvm 17.0.15');
    expect(runtimeTitle({ ...runtime, runtime_version: null })).toBe('jvm');
    expect(runtimeTitle(null)).toBeNull();
    expect(executableText(runtime)).toBe('/usr/bin/java (build id 9c8134897610…)');
    expect(librariesByKind(runtime)).toEqual([
      ['jar', ['guava', 'log4j 1.2.17']],
      ['shared', ['libc 6']],
    ]);
  });

  it('words the start options', () => {
    expect(optionsText({})).toBe('agent defaults');
    expect(
      optionsText({
        plugin: 'native',
        event: 'alloc-bytes',
        fsp_share: 1,
        fda: { enabled: false, theta: 0.05, lambda: 0.8, stable_windows: 5, top_n: 10, min_hz: 19, max_hz: null },
        duty_cycle: { on_ms: 2000, period_ms: 10000 },
        overhead_budget: 0.5,
        include_children: true,
      }),
    ).toBe(
      'plugin native · alloc-bytes · FSP off · FDA off · on 2 s of every 10 s · budget 50% of a core · with its children',
    );
  });
});
