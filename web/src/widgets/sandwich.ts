// The sandwich view of one function (speedscope's, Pyroscope's): who calls
// it above, drawn as a flame graph (the function at the bottom, its callers
// rising from it), and what it calls below, as an icicle (the function on
// top), every call site merged. Built from the tree already loaded.

import { FlameGraph, type MenuItem } from '../flame/graph';
import { flatten, type FlatTree } from '../flame/layout';
import { sandwich } from '../flame/sandwich';
import { h, pct } from '../format';
import { amount, isTimed, type SampleUnit } from '../units';

export interface SandwichOptions {
  samples: number;
  unit?: SampleUnit;
  menuItems?: (name: string, stack: string[]) => MenuItem[];
  /** Re-centres the sandwich on another function. */
  onPick: (name: string) => void;
  onClose: () => void;
}

export interface SandwichPanel {
  root: HTMLElement;
  /** Callers, then callees. */
  graphs: FlameGraph[];
  destroy(): void;
}

/** The sandwich of `name` in `tree`, or null when no frame has that name. */
export function sandwichPanel(tree: FlatTree, name: string, options: SandwichOptions): SandwichPanel | null {
  const s = sandwich(tree, name);
  if (!s) return null;
  const whole = tree.total[0];
  const half = (label: string, orientation: 'flame' | 'icicle') => {
    const g = new FlameGraph({
      kind: 'samples',
      samples: options.samples,
      unit: options.unit,
      whole,
      orientation,
      label,
      menuItems: options.menuItems,
    });
    g.onSandwich = options.onPick;
    return g;
  };
  const callers = half(`callers of ${name}`, 'flame');
  const callees = half(`callees of ${name}`, 'icicle');
  const unit = options.unit ?? {};
  const share = whole > 0 ? s.total / whole : 0;
  const selfShare = whole > 0 ? s.self / whole : 0;
  const root = h(
    'section',
    { class: 'sandwich', id: 'sandwich', 'data-function': name },
    h(
      'div',
      { class: 'sandwich-head' },
      h('h3', {}, 'Sandwich: ', h('code', {}, name)),
      h(
        'span',
        { class: 'muted', id: 'sandwich-summary' },
        `${pct(share, 2)} of ${isTimed(unit) ? 'the time' : 'samples'} in it or below (${amount(s.total, unit)}), ` +
          `${pct(selfShare, 2)} in it (${amount(s.self, unit)}); ` +
          `${s.occurrences} call ${s.occurrences === 1 ? 'path' : 'paths'} merged`,
      ),
      h('button', { id: 'sandwich-close', type: 'button', onclick: options.onClose }, 'Back to the flame graph'),
    ),
    tree.merged.some((m) => m > 0)
      ? h(
          'p',
          { class: 'muted', id: 'sandwich-cut' },
          'Built from the graph as loaded: calls inside its merged (grey) boxes are not counted.',
        )
      : null,
    h('h4', {}, 'Callers (who calls it, rising from it)'),
    h('div', { id: 'sandwich-callers' }, callers.root),
    h('h4', {}, 'Callees (what it calls)'),
    h('div', { id: 'sandwich-callees' }, callees.root),
  );
  callers.setTree(flatten(s.callers));
  callees.setTree(flatten(s.callees));
  return {
    root,
    graphs: [callers, callees],
    destroy: () => {
      callers.destroy();
      callees.destroy();
    },
  };
}
