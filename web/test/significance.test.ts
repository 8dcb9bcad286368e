import { describe, expect, it } from 'vitest';
import { change, changeClass, changeText, shareStderr, significance, significanceColor } from '../src/flame/significance';
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
