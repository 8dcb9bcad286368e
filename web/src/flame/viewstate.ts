// What a flame graph view keeps in its address, so a link reproduces it:
// the zoom (frame names from the root's child down, as the server's
// `focus`), the search regex, the function highlighted from a table and
// the function whose sandwich is open. Filters are the views' own query
// keys. Pure, so it unit-tests.

export interface FlameViewState {
  /** Frame names below the root down to the zoomed frame; [] unzoomed. */
  zoom: string[];
  search: string;
  /** The function highlighted (a table row clicked). */
  select: string;
  /** The function whose sandwich view is open. */
  sandwich: string;
}

export const FLAME_STATE_KEYS = ['zoom', 'search', 'select', 'sandwich'] as const;

/** Path names are `;`-separated (the server's `focus` separator); a `;` or
 *  `\` inside a name is escaped with `\`. */
export function encodeZoom(path: string[]): string {
  return path.map((name) => name.replace(/\\/g, '\\\\').replace(/;/g, '\\;')).join(';');
}

export function decodeZoom(text: string): string[] {
  if (!text) return [];
  const out: string[] = [];
  let name = '';
  for (let i = 0; i < text.length; i++) {
    const c = text[i];
    if (c === '\\' && i + 1 < text.length) name += text[++i];
    else if (c === ';') {
      out.push(name);
      name = '';
    } else name += c;
  }
  out.push(name);
  return out;
}

export function readFlameState(query: URLSearchParams): FlameViewState {
  return {
    zoom: decodeZoom(query.get('zoom') ?? ''),
    search: query.get('search') ?? '',
    select: query.get('select') ?? '',
    sandwich: query.get('sandwich') ?? '',
  };
}

/** The query updates that record `state` (empty values remove keys). */
export function flameStateQuery(state: Partial<FlameViewState>): Record<string, string | undefined> {
  const out: Record<string, string | undefined> = {};
  if (state.zoom !== undefined) out.zoom = encodeZoom(state.zoom) || undefined;
  for (const k of ['search', 'select', 'sandwich'] as const) if (state[k] !== undefined) out[k] = state[k] || undefined;
  return out;
}
