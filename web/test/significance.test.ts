import { describe, expect, it } from 'vitest';
import { change, changeClass, changeSignificance, changeText, reportedChange, shareStderr, significance, significanceColor } from '../src/flame/significance';
import { contrast, hslToRgb, labelColor, luminance } from '../src/flame/theme';
import { frameColor } from '../src/flame/layout';

describe('significance of a change', () => {
  it('combines both sides binomial errors', () => {
    expect(shareStderr(0.5, 100)).toBeCloseTo(0.05);
    expect(shareStderr(0.5, 0)).toBe(0);
    const c = change(0.3, 1000, 0.4, 1000);
    expect(c.delta).toBeCloseTo(0.1);
    expect(c.stderr).toBeCloseTo(Math.hypot(Math.sqrt(0.21 / 1000), Math.sqrt(0.24 / 1000)));
    expect(c.z).toBeCloseTo(0.1 / c.stderr);
  });

  it("takes a listed change's error from the server, and computes it for older servers", () => {
    // serialize_response in odpctl's captured diff of two Python profiles
    // (578 and 582 samples), from a server before errors were reported.
    const listed = { baseline_total_share: 0, target_total_share: 0.2663230240549828, delta_total_points: 26.632302405498283 };
    const computed = reportedChange(listed, 578, 582);
    expect(computed).toEqual(change(0, 578, 0.2663230240549828, 582));
    // The server's error (odp_core::diff, the same binomial formula) wins.
    const stderrPoints = 100 * Math.sqrt((0.2663230240549828 * (1 - 0.2663230240549828)) / 582);
    const reported = reportedChange({ ...listed, delta_total_stderr_points: stderrPoints }, 578, 582);
    expect(reported.delta).toBeCloseTo(computed.delta, 12);
    expect(reported.z).toBeCloseTo(computed.z, 9);
    // And is used as given, not recomputed.
    expect(reportedChange({ ...listed, delta_total_stderr_points: 13.3 }, 578, 582).z).toBeCloseTo(2.0025, 3);
  });

  it("takes whether a listed change is significant from the server, keeping the 2–3σ tier below it", () => {
    const listed = { baseline_total_share: 0.3, target_total_share: 0.35, delta_total_points: 5, delta_total_stderr_points: 1.5 };
    // z = 3.33: the server says significant, and so would z.
    expect(changeSignificance(reportedChange({ ...listed, significant: true }, 1000, 1000))).toBe('significant');
    // The server's verdict wins over z where they differ: for a side
    // without samples it reports no error (null) and no significance,
    // where z computed here alone would call the change significant.
    const empty = reportedChange(
      { ...listed, baseline_total_share: 0, delta_total_points: 35, delta_total_stderr_points: null, significant: false },
      0,
      1000,
    );
    expect(significance(empty.z)).toBe('significant');
    expect(changeSignificance(empty)).toBe('likely');
    expect(changeClass(empty)).toBe('grew likely');
    expect(changeSignificance(reportedChange({ ...listed, delta_total_stderr_points: 2, significant: false }, 1000, 1000))).toBe('likely');
    expect(changeSignificance(reportedChange({ ...listed, delta_total_stderr_points: 4, significant: false }, 1000, 1000))).toBe('noise');
    expect(changeSignificance({ delta: 0.01, stderr: 0.01, z: 1, significant: true })).toBe('significant');
    // A server before `significant`: z decides, as for the graph's nodes.
    expect(changeSignificance(reportedChange(listed, 1000, 1000))).toBe('significant');
    expect(changeSignificance(change(0.3, 50, 0.35, 50))).toBe(significance(change(0.3, 50, 0.35, 50).z));
    // The graph's colours follow the same verdict.
    expect(significanceColor(empty, 0.05)).toBe(significanceColor({ delta: 0.05, stderr: 0.02, z: 2.5 }, 0.05));
  });

  it('calls the same change noise in small profiles and significant in large ones', () => {
    const small = change(0.3, 50, 0.35, 50);
    const large = change(0.3, 50_000, 0.35, 50_000);
    expect(significance(small.z)).toBe('noise');
    expect(significance(large.z)).toBe('significant');
    expect(changeClass(small)).toBe('noise');
    expect(changeClass(large)).toBe('grew significant');
    expect(changeClass(change(0.35, 50_000, 0.3, 50_000))).toBe('shrank significant');
    expect(significance(2.5)).toBe('likely');
    expect(significance(-2.5)).toBe('likely');
    expect(changeClass({ delta: -0.01, stderr: 0.004, z: -2.5 })).toBe('shrank likely');
  });

  it('treats exact changes (no sampling error) as significant and no change as noise', () => {
    expect(change(0, 100, 1, 100).z).toBe(Infinity);
    expect(significance(change(0, 100, 1, 100).z)).toBe('significant');
    expect(change(0.2, 100, 0.2, 100).z).toBe(0);
  });

  it('colours noise grey and significant changes by sign, stronger for larger changes', () => {
    const noise = significanceColor(change(0.3, 50, 0.35, 50), 0.05);
    expect(noise).toBe('hsl(220, 6%, 90%)');
    const grew = significanceColor(change(0.3, 50_000, 0.35, 50_000), 0.05);
    const shrank = significanceColor(change(0.35, 50_000, 0.3, 50_000), 0.05);
    expect(grew).toBe('hsl(0, 80%, 60%)');
    expect(shrank).toBe('hsl(220, 80%, 60%)');
    const light = (css: string) => Number(/(\d+)%\)$/.exec(css)![1]);
    const smaller = significanceColor(change(0.3, 50_000, 0.32, 50_000), 0.05);
    expect(light(smaller)).toBeGreaterThan(light(grew));
    const likely = significanceColor({ delta: 0.05, stderr: 0.02, z: 2.5 }, 0.05);
    expect(light(likely)).toBeGreaterThan(light(grew));
    // Dark backgrounds: darker fills.
    expect(light(significanceColor(change(0.3, 50_000, 0.35, 50_000), 0.05, true))).toBeLessThan(50);
  });

  it('writes the change with its error in points', () => {
    expect(changeText({ delta: 0.0125, stderr: 0.004, z: 3.1 })).toBe('+1.25 ± 0.40 pts');
    expect(changeText({ delta: -0.002, stderr: 0.001, z: -2 })).toBe('−0.20 ± 0.10 pts');
  });
});

describe('flame colours in both schemes', () => {
  it('converts hsl to rgb', () => {
    expect(hslToRgb(0, 100, 50).map((c) => Math.round(c * 255))).toEqual([255, 0, 0]);
    expect(hslToRgb(220, 0, 50).map((c) => Math.round(c * 255))).toEqual([128, 128, 128]);
  });

  it('labels every frame colour with text of at least 4.5:1 contrast, light and dark', () => {
    for (const dark of [false, true]) {
      for (let i = 0; i < 300; i++) {
        const fill = frameColor(`fn_${i}`, dark);
        const m = /hsl\((\d+), (\d+)%, (\d+)%\)/.exec(fill)!;
        const lum = luminance(hslToRgb(Number(m[1]), Number(m[2]), Number(m[3])));
        const text = labelColor(fill);
        const textLum = text === '#111111' ? luminance([17 / 255, 17 / 255, 17 / 255]) : luminance([244 / 255, 244 / 255, 244 / 255]);
        expect(contrast(lum, textLum), `${fill} with ${text}`).toBeGreaterThanOrEqual(4.5);
      }
    }
  });

  it('labels diff colours readably too', () => {
    for (const dark of [false, true]) {
      for (const delta of [-0.2, -0.05, -0.01, 0, 0.01, 0.05, 0.2]) {
        for (const z of [0, 2.5, 10]) {
          const fill = significanceColor({ delta, stderr: 0.001, z: delta < 0 ? -z : z }, 0.2, dark);
          const m = /hsl\((\d+), (\d+)%, (\d+)%\)/.exec(fill)!;
          const lum = luminance(hslToRgb(Number(m[1]), Number(m[2]), Number(m[3])));
          const textLum = labelColor(fill) === '#111111' ? luminance([17 / 255, 17 / 255, 17 / 255]) : luminance([244 / 255, 244 / 255, 244 / 255]);
          expect(contrast(lum, textLum), fill).toBeGreaterThanOrEqual(4.5);
        }
      }
    }
  });

  it('picks light text on dark boxes and dark text on light ones', () => {
    expect(labelColor('hsl(220, 6%, 30%)')).toBe('#f4f4f4');
    expect(labelColor('hsl(220, 6%, 90%)')).toBe('#111111');
    expect(labelColor('#17756c')).toBe('#f4f4f4');
    expect(labelColor('#d5d8dc')).toBe('#111111');
    expect(labelColor('not a colour')).toBe('#111111');
  });
});
