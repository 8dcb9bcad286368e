// The thread and stack filters of a page with one flame graph (a profile,
// a run): read from the address, and a form that writes them back to it.

import { FLAME_STATE_KEYS } from '../flame/viewstate';
import { h } from '../format';
import { href, type Route } from '../router';

export const STACK_FILTERS = ['thread', 'include', 'exclude'] as const;

/** The filters the address holds, empty where absent. */
export function stackFilters(route: Route): Record<string, string> {
  const filters: Record<string, string> = {};
  for (const f of STACK_FILTERS) filters[f] = route.query.get(f) ?? '';
  return filters;
}

/** The form that applies new filters to the page at `path`. The search and
 *  highlight stay; the zoom and sandwich were of the tree the filters
 *  change. */
export function stackFilterForm(path: string, route: Route, filters: Record<string, string>): HTMLFormElement {
  const form = h(
    'form',
    {
      class: 'filters',
      onsubmit: (e: Event) => {
        e.preventDefault();
        const d = new FormData(form);
        const q: Record<string, string | undefined> = {};
        for (const f of STACK_FILTERS) q[f] = String(d.get(f) ?? '').trim() || undefined;
        for (const k of FLAME_STATE_KEYS) if (k === 'search' || k === 'select') q[k] = route.query.get(k) ?? undefined;
        location.hash = href(path, q);
      },
    },
    ...STACK_FILTERS.map((f) =>
      h('label', {}, `${f} `, h('input', { name: f, id: `filter-${f}`, value: filters[f], placeholder: 'regex' })),
    ),
    h('button', { type: 'submit' }, 'Apply filters'),
  ) as HTMLFormElement;
  return form;
}
