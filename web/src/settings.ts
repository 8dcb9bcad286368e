// User settings kept in localStorage: the code-search URL template used by
// the flame graph's "view source" link.

const CODE_SEARCH_KEY = 'odp.codeSearchTemplate';
export const DEFAULT_CODE_SEARCH = 'https://github.com/search?type=code&q={function}';

export function codeSearchTemplate(): string {
  return localStorage.getItem(CODE_SEARCH_KEY) || DEFAULT_CODE_SEARCH;
}

export function setCodeSearchTemplate(template: string): void {
  if (template.trim()) localStorage.setItem(CODE_SEARCH_KEY, template.trim());
  else localStorage.removeItem(CODE_SEARCH_KEY);
}

/** The source link of a function: `{function}` is replaced, URL-encoded. */
export function codeSearchUrl(fn: string, template = codeSearchTemplate()): string {
  return template.split('{function}').join(encodeURIComponent(fn));
}

/** How flame graphs are drawn: 'icicle' (root on top, the default) or
 *  'flame' (root at the bottom). */
export type Orientation = 'icicle' | 'flame';
const ORIENTATION_KEY = 'odp.flameOrientation';

export function flameOrientation(): Orientation {
  try {
    return localStorage.getItem(ORIENTATION_KEY) === 'flame' ? 'flame' : 'icicle';
  } catch {
    return 'icicle';
  }
}

export function setFlameOrientation(orientation: Orientation): void {
  try {
    localStorage.setItem(ORIENTATION_KEY, orientation);
  } catch {
    // Storage refused (private mode): the choice lasts for this page.
  }
}
