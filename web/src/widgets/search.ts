// The regex search box shared by every flame graph view.

import { FlameGraph, TREE_CHANGE } from '../flame/graph';
import { parsePattern, type SearchResult } from '../flame/layout';
import { h, pct } from '../format';

/** The search box of `graph`, starting with `initial`; `onChange` hears
 *  every edit (the view keeps it in the address). `/` focuses it. */
export function searchBox(graph: FlameGraph, initial = '', onChange?: (text: string) => void): HTMLElement {
  const input = h('input', {
    id: 'flame-search',
    type: 'search',
    placeholder: 'search frames (regex), press / to focus',
    value: initial,
    'aria-label': 'search frames by regex',
  });
  const result = h('span', { id: 'search-result', class: 'muted' });
  const showResult = (r: SearchResult | null) => {
    if (r) result.textContent = `${r.matchCount} frames match, ${pct(r.share, 2)} of samples`;
  };
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
    showResult(graph.setSearch(pattern));
  };
  input.addEventListener('input', () => {
    apply();
    onChange?.(input.value);
  });
  // A focused tree fetched on zoom has other frames: the graph searched it.
  graph.root.addEventListener(TREE_CHANGE, () => {
    if (input.value && typeof parsePattern(input.value) !== 'string') showResult(graph.searchResult);
  });
  if (initial) queueMicrotask(apply);
  return h('div', { class: 'search' }, input, ' ', result);
}
