// The regex search box shared by every flame graph view.

import { FlameGraph } from '../flame/graph';
import { parsePattern } from '../flame/layout';
import { h, pct } from '../format';

export function searchBox(graph: FlameGraph, initial = ''): HTMLElement {
  const input = h('input', {
    id: 'flame-search',
    type: 'search',
    placeholder: 'search frames (regex)',
    value: initial,
    'aria-label': 'search frames by regex',
  });
  const result = h('span', { id: 'search-result', class: 'muted' });
  const apply = () => {
    const text = input.value;
    if (!text) {
      graph.setSearch(null);
      result.textContent = '';
      return;
    }
    const pattern = parsePattern(text);
    if (typeof pattern === 'string') {
      result.textContent = `invalid regex: ${pattern}`;
      return;
    }
    const r = graph.setSearch(pattern);
    if (r) result.textContent = `${r.matchCount} frames match, ${pct(r.share, 2)} of samples`;
  };
  input.addEventListener('input', apply);
  if (initial) queueMicrotask(apply);
  return h('div', { class: 'search' }, input, ' ', result);
}
