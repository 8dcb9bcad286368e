import { describe, expect, it } from 'vitest';
import {
  capturedText,
  coverageText,
  coverageWarning,
  lostParts,
  windowCoverageText,
  windowIsShort,
  type LostSamples,
  type SampleCoverage,
} from '../src/coveragefmt';

const none: LostSamples = { overflow: 0, throttled: 0, paused: 0, undiscovered: 0, transport: 0 };

describe('profile coverage wording', () => {
  it('with an expected count, says what was captured of it, lost by reason and unaccounted', () => {
    const c: SampleCoverage = {
      expected: 1000,
      captured: 800,
      lost: { ...none, paused: 150, overflow: 30 },
      unaccounted: 20,
      missing_share: 0.2,
      warning: '20.0% of the samples the target earned are missing: 15.0% paused by cost control, 3.0% lost by the sampler (full ring buffers, failed reads), 2.0% unaccounted',
    };
    expect(capturedText(c)).toBe('captured 800 of 1000 expected (80.0%)');
    expect(coverageText(c)).toBe(
      'captured 800 of 1000 expected (80.0%) · 30 lost by the sampler (full ring buffers, failed reads) · 150 paused by cost control · 20 unaccounted',
    );
  });

  it("shows the server's warning when more than 2% is missing, and none otherwise", () => {
    const warning = '20.0% of the samples the target earned are missing: 15.0% paused by cost control, 5.0% unaccounted';
    const base: SampleCoverage = { expected: 1000, captured: 800, lost: { ...none, paused: 150 }, unaccounted: 50, missing_share: 0.2 };
    expect(coverageWarning({ ...base, warning })).toBe(warning);
    expect(coverageWarning({ ...base, captured: 990, missing_share: 0.01, warning: null })).toBeNull();
    expect(coverageWarning({ ...base, warning: ' ' })).toBeNull();
    expect(coverageWarning(null)).toBeNull();
  });

  it('leaves out reasons with nothing lost and a gap that is only noise', () => {
    const c: SampleCoverage = { expected: 500, captured: 502, lost: none, unaccounted: -2, missing_share: 0, warning: null };
    expect(coverageText(c)).toBe('captured 502 of 500 expected (100.0%)');
  });

  it('without an expected count, says only the samples and what was lost, never a percentage', () => {
    const c: SampleCoverage = { expected: null, captured: 700, lost: { ...none, transport: 12 }, unaccounted: null, missing_share: null };
    expect(coverageText(c)).toBe("700 samples · 12 dropped by the agent's spool");
    expect(coverageText({ captured: 700, lost: none })).toBe('700 samples');
    expect(coverageText(c)).not.toMatch(/%|expected/);
  });

  it('with zero expected (the target used no CPU), claims no percentage', () => {
    const c: SampleCoverage = { expected: 0, captured: 0, lost: none, unaccounted: 0, missing_share: null, warning: null };
    expect(coverageText(c)).toBe('captured 0 of 0 expected');
  });

  it('names every reason in plain words', () => {
    expect(lostParts({ overflow: 1, throttled: 2, paused: 3, undiscovered: 4, transport: 5 })).toEqual([
      '1 lost by the sampler (full ring buffers, failed reads)',
      '2 throttled by the kernel',
      '3 paused by cost control',
      '4 before the agent found the process',
      "5 dropped by the agent's spool",
    ]);
    expect(lostParts(none)).toEqual([]);
    expect(lostParts(undefined)).toEqual([]);
  });
});

describe('timeline window coverage', () => {
  it('marks windows that captured more than 2% less than expected', () => {
    expect(windowIsShort({ expected: 100, samples: 97 })).toBe(true);
    expect(windowIsShort({ expected: 100, samples: 98 })).toBe(false);
    expect(windowIsShort({ expected: 100, samples: 103 })).toBe(false);
    expect(windowIsShort({ expected: null, samples: 0 })).toBe(false);
    expect(windowIsShort({ expected: 0, samples: 0 })).toBe(false);
  });

  it('says expected, captured and lost by reason in the tooltip', () => {
    const w = { expected: 100, samples: 80, lost: { ...none, paused: 15 } };
    expect(windowCoverageText(w)).toBe('captured 80 of 100 expected (80.0%); 15 paused by cost control, 5 unaccounted');
    expect(windowCoverageText({ expected: 100, samples: 100, lost: none })).toBe('captured 100 of 100 expected (100.0%)');
    expect(windowCoverageText({ expected: null, samples: 80, lost: { ...none, overflow: 3 } })).toBe('3 lost by the sampler (full ring buffers, failed reads)');
    expect(windowCoverageText({ expected: null, samples: 80 })).toBeNull();
  });
});
