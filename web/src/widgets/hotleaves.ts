// The hot-leaf table beside a flame graph (the profile, aggregate and run
// pages), and its rows made from a flame tree's totals where a view has no
// `/top` to read.

import type { TopFunction } from '../api';
import type { FunctionTotals } from '../flame/sandwich';
import { shareStderr } from '../flame/significance';
import { h, pct } from '../format';

type SortKey = 'function' | 'self_share' | 'total_share';

export interface HotLeafOptions {
  /** The row marked at first (the highlight in the address). */
  picked?: string | null;
  /** Adds a "sandwich" button to each row. */
  onSandwich?: (fn: string) => void;
  /** Adds a "trend" button to each row (the function over time). */
  onTrend?: (fn: string) => void;
  id?: string;
}

/** Sortable top-functions table; clicking a row calls `onPick` (the
 *  function to highlight, or null when clicked again). */
export function hotLeafTable(
  functions: TopFunction[],
  onPick: (fn: string | null) => void,
  options: HotLeafOptions = {},
): HTMLElement {
  let key: SortKey = 'self_share';
  let descending = true;
  let picked: string | null = options.picked ?? null;
  /** A row's button: acts on the row's function, not on the row's click. */
  const rowButton = (fn: string, cls: string, label: string, title: string, action: (fn: string) => void) =>
    h(
      'button',
      {
        type: 'button',
        class: cls,
        title,
        onclick: (e: Event) => {
          e.stopPropagation();
          action(fn);
        },
      },
      label,
    );
  const { onSandwich, onTrend } = options;
  const buttons = (fn: string) => [
    onSandwich ? rowButton(fn, 'sandwich-open', 'sandwich', `Callers and callees of ${fn}`, onSandwich) : null,
    onTrend ? rowButton(fn, 'trend-open', 'trend', `${fn} over time`, onTrend) : null,
  ];
  const body = h('tbody', {});
  const draw = () => {
    const rows = functions.slice().sort((a, b) => {
      const c = key === 'function' ? a.function.localeCompare(b.function) : a[key] - b[key];
      return descending ? -c : c;
    });
    body.replaceChildren(
      ...rows.map((f) =>
        h(
          'tr',
          {
            class: f.function === picked ? 'picked' : '',
            'data-function': f.function,
            onclick: () => {
              picked = picked === f.function ? null : f.function;
              onPick(picked);
              draw();
            },
          },
          h('td', { class: 'fn', title: f.function }, f.function),
          h('td', { class: 'num' }, `${pct(f.self_share)} ± ${pct(f.self_share_stderr)}`),
          h('td', { class: 'num' }, pct(f.total_share)),
          h('td', { class: 'num' }, String(f.self_samples)),
          onSandwich || onTrend ? h('td', { class: 'row-actions' }, ...buttons(f.function)) : null,
        ),
      ),
    );
  };
  const header = (label: string, k: SortKey, numeric = false) =>
    h(
      'th',
      {
        class: numeric ? 'sortable num' : 'sortable',
        'data-sort': k,
        onclick: () => {
          descending = key === k ? !descending : k !== 'function';
          key = k;
          draw();
        },
      },
      label,
    );
  draw();
  return h(
    'table',
    { class: 'grid hot-leaves', id: options.id ?? 'hot-leaves' },
    h(
      'thead',
      {},
      h(
        'tr',
        {},
        header('function', 'function'),
        header('self', 'self_share', true),
        header('total', 'total_share', true),
        h('th', { class: 'num' }, 'samples'),
        onSandwich || onTrend ? h('th', {}, '') : null,
      ),
    ),
    body,
  );
}

/** Top-function rows from a flame tree's totals (a view with no `/top`),
 *  shares of `whole` samples with their binomial error. */
export function topRows(totals: FunctionTotals[], samples: number, whole: number): TopFunction[] {
  return totals.map((t) => {
    const selfShare = whole > 0 ? t.self / whole : 0;
    return {
      function: t.function,
      self_samples: t.self,
      total_samples: t.total,
      self_share: selfShare,
      total_share: whole > 0 ? t.total / whole : 0,
      self_share_stderr: shareStderr(selfShare, samples),
    };
  });
}
