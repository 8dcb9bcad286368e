// User settings kept in localStorage: the URL templates of the flame
// graph's "view source" (a frame's file and line in a source browser, or a
// code search by function name for frames without a file) and the flame
// graph's orientation.

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

const SOURCE_URL_KEY = 'odp.sourceUrlTemplate';
/** An example of a source URL template (there is no default: where the
 *  code lives is the user's to say). */
export const SOURCE_URL_EXAMPLE = 'https://github.com/org/repo/blob/main/{file}#L{line}';

/** The source URL template: `{file}` and `{line}` are replaced; empty when
 *  none is set. */
export function sourceUrlTemplate(): string {
  try {
    return localStorage.getItem(SOURCE_URL_KEY) ?? '';
  } catch {
    return '';
  }
}

export function setSourceUrlTemplate(template: string): void {
  try {
    if (template.trim()) localStorage.setItem(SOURCE_URL_KEY, template.trim());
    else localStorage.removeItem(SOURCE_URL_KEY);
  } catch {
    // Storage refused (private mode): nothing is kept.
  }
}

/** Where a frame's code is, as flame graph nodes carry it. */
export interface SourceLocation {
  file: string;
  line?: number | null;
}

/** `file:line`, or the file alone when the line is unknown. */
export function sourceText(source: SourceLocation): string {
  return source.line != null ? `${source.file}:${source.line}` : source.file;
}

/** The link of a source location from `template`, or null without one.
 *  The file's path segments are URL-encoded and its leading `/` dropped,
 *  so it joins a repository path (`…/blob/main/{file}`); an unknown line
 *  is left empty. */
export function sourceUrl(source: SourceLocation, template = sourceUrlTemplate()): string | null {
  if (!template.trim()) return null;
  const file = source.file.replace(/^\/+/, '').split('/').map(encodeURIComponent).join('/');
  const line = source.line != null ? String(source.line) : '';
  return template.split('{file}').join(file).split('{line}').join(line);
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
