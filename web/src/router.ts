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
