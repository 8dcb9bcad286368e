// Hash routing (`#/profiles/<id>?...`), so any view's URL can be shared.

export interface Route {
  path: string[];
  query: URLSearchParams;
}

export function parseHash(hash: string): Route {
  const raw = hash.replace(/^#\/?/, '');
  const [path, qs = ''] = raw.split('?', 2);
  return {
    path: path.split('/').filter(Boolean).map(decodeURIComponent),
    query: new URLSearchParams(qs),
  };
}

export function href(path: string, query: Record<string, string | undefined> = {}): string {
  const params = new URLSearchParams();
  for (const [k, v] of Object.entries(query)) if (v) params.set(k, v);
  const qs = params.toString();
  return `#/${path}${qs ? `?${qs}` : ''}`;
}

/** What a view registers to undo when the user navigates away. */
export class ViewScope {
  private cleanups: Array<() => void> = [];
  active = true;
  onLeave(fn: () => void): void {
    this.cleanups.push(fn);
  }
  leave(): void {
    this.active = false;
    for (const fn of this.cleanups.splice(0)) fn();
  }
  /** Repeats `fn` every `ms` while the view is shown. */
  every(ms: number, fn: () => void): void {
    const id = window.setInterval(() => this.active && fn(), ms);
    this.onLeave(() => window.clearInterval(id));
  }
}

/** `hash` with `updates` applied to its query (an empty or undefined value
 *  removes the key); the path and other keys are kept. */
export function hashWith(hash: string, updates: Record<string, string | undefined>): string {
  const raw = hash.replace(/^#\/?/, '');
  const at = raw.indexOf('?');
  const path = at < 0 ? raw : raw.slice(0, at);
  const query = new URLSearchParams(at < 0 ? '' : raw.slice(at + 1));
  for (const [k, v] of Object.entries(updates)) {
    if (v) query.set(k, v);
    else query.delete(k);
  }
  const qs = query.toString();
  return `#/${path}${qs ? `?${qs}` : ''}`;
}

/** Writes view state into the address without re-rendering the view
 *  (`replaceState` fires no `hashchange`), so a copied link reproduces it. */
export function replaceQuery(updates: Record<string, string | undefined>): void {
  const next = hashWith(location.hash, updates);
  if (next !== location.hash) history.replaceState(history.state, '', next);
}
