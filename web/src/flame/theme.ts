// Colours of the flame graph canvas in the light and the dark scheme (the
// page's follow `prefers-color-scheme` through style.css). Box fills are
// `hsl()` strings; each label takes black or white, whichever contrasts
// more with its box (WCAG relative luminance), so text stays readable in
// both schemes. Pure but for `prefersDark`.

export interface FlameTheme {
  dark: boolean;
  /** Search matches. */
  match: string;
  /** The function highlighted from a table. */
  selected: string;
  /** `other` boxes and their hatching. */
  other: string;
  otherStripe: string;
}

export const LIGHT: FlameTheme = { dark: false, match: '#c040e0', selected: '#2aa198', other: '#d5d8dc', otherStripe: '#a7adb3' };
export const DARK: FlameTheme = { dark: true, match: '#8e3fb5', selected: '#17756c', other: '#3a3f45', otherStripe: '#5c636b' };

export const DARK_QUERY = '(prefers-color-scheme: dark)';

export function prefersDark(): boolean {
  return typeof matchMedia === 'function' && matchMedia(DARK_QUERY).matches;
}

export function themeFor(dark: boolean): FlameTheme {
  return dark ? DARK : LIGHT;
}

/** sRGB channels (0..1) of `hsl(h, s%, l%)`. */
export function hslToRgb(h: number, s: number, l: number): [number, number, number] {
  const sat = s / 100;
  const light = l / 100;
  const a = sat * Math.min(light, 1 - light);
  const f = (n: number) => {
    const k = (n + h / 30) % 12;
    return light - a * Math.max(-1, Math.min(k - 3, 9 - k, 1));
  };
  return [f(0), f(8), f(4)];
}

/** WCAG relative luminance of sRGB channels. */
export function luminance([r, g, b]: [number, number, number]): number {
  const lin = (c: number) => (c <= 0.03928 ? c / 12.92 : ((c + 0.055) / 1.055) ** 2.4);
  return 0.2126 * lin(r) + 0.7152 * lin(g) + 0.0722 * lin(b);
}

export function contrast(a: number, b: number): number {
  return (Math.max(a, b) + 0.05) / (Math.min(a, b) + 0.05);
}

const DARK_TEXT = '#111111';
const LIGHT_TEXT = '#f4f4f4';
const DARK_TEXT_LUM = luminance([17 / 255, 17 / 255, 17 / 255]);
const LIGHT_TEXT_LUM = luminance([244 / 255, 244 / 255, 244 / 255]);
const HSL = /^hsl\(\s*([\d.]+)\s*,\s*([\d.]+)%\s*,\s*([\d.]+)%\s*\)$/;
const labels = new Map<string, string>();

/** The label colour for a box filled with `fill` (an `hsl()` or `#rrggbb`
 *  string; anything else gets the dark text). */
export function labelColor(fill: string): string {
  const cached = labels.get(fill);
  if (cached) return cached;
  let rgb: [number, number, number] | null = null;
  const m = HSL.exec(fill);
  if (m) rgb = hslToRgb(Number(m[1]), Number(m[2]), Number(m[3]));
  else if (/^#[0-9a-f]{6}$/i.test(fill)) {
    const v = (i: number) => parseInt(fill.slice(i, i + 2), 16) / 255;
    rgb = [v(1), v(3), v(5)];
  }
  let text = DARK_TEXT;
  if (rgb) {
    const lum = luminance(rgb);
    text = contrast(lum, LIGHT_TEXT_LUM) > contrast(lum, DARK_TEXT_LUM) ? LIGHT_TEXT : DARK_TEXT;
  }
  if (labels.size < 4096) labels.set(fill, text);
  return text;
}
