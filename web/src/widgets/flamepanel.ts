// A flame graph as the views show it: the search box and the view's tools
// (downloads) above it, the sandwich view in its place when one is open,
// the keyboard (Esc resets the zoom, `/` focuses the search), and the
// zoom, search, highlighted function and sandwich kept in the address so
// a link reproduces what is shown.

import { FlameGraph, ZOOM_CHANGE, type MenuItem } from '../flame/graph';
import type { FlatTree } from '../flame/layout';
import { flameStateQuery, readFlameState, type FlameViewState } from '../flame/viewstate';
import { h } from '../format';
import { replaceQuery, type ViewScope } from '../router';
import type { SampleUnit } from '../units';
import { sandwichPanel, type SandwichPanel } from './sandwich';
import { searchBox } from './search';

export interface FlamePanelOptions {
  graph: FlameGraph;
  /** The route's query: the state to start from. */
  query: URLSearchParams;
  scope: ViewScope;
  /** Offers the sandwich view (graphs of samples, not diffs). */
  sandwich?: { samples: number; unit?: SampleUnit; menuItems?: (name: string, stack: string[]) => MenuItem[] };
  /** Beside the search box (downloads). */
  tools?: Array<HTMLElement | null>;
}

/** Whether a key press is typing into a field (shortcuts leave it alone). */
function typing(target: EventTarget | null): boolean {
  const el = target as HTMLElement | null;
  return !!el && (el.isContentEditable || ['INPUT', 'TEXTAREA', 'SELECT'].includes(el.tagName));
}

export class FlamePanel {
  readonly root: HTMLElement;
  private readonly graph: FlameGraph;
  private readonly state: FlameViewState;
  private readonly sandwichHost: HTMLElement;
  private readonly search: HTMLElement;
  private open: SandwichPanel | null = null;
  /** Off until the starting state is applied, so the first draw (at the
   *  root) does not erase the zoom the address asks for. */
  private syncing = false;

  constructor(private readonly options: FlamePanelOptions) {
    this.graph = options.graph;
    this.state = readFlameState(options.query);
    this.search = searchBox(this.graph, this.state.search, (text) => this.write({ search: text }));
    this.sandwichHost = h('div', { class: 'sandwich-host', hidden: true });
    this.root = h(
      'div',
      { class: 'flame-panel' },
      h('div', { class: 'flame-tools' }, this.search, ...(options.tools ?? [])),
      this.graph.root,
      this.sandwichHost,
    );
    if (options.sandwich) this.graph.onSandwich = (name) => this.openSandwich(name);
    this.graph.root.addEventListener(ZOOM_CHANGE, () => {
      if (this.syncing) this.write({ zoom: this.graph.zoomPath });
    });
    const onKey = (e: KeyboardEvent) => this.onKey(e);
    document.addEventListener('keydown', onKey);
    options.scope.onLeave(() => {
      document.removeEventListener('keydown', onKey);
      this.open?.destroy();
    });
  }

  /** Shows the view's tree, then the zoom, highlight and sandwich the
   *  address asked for. */
  show(tree: FlatTree): void {
    this.graph.setTree(tree);
    this.syncing = true;
    if (this.state.zoom.length) this.graph.zoomToPath(this.state.zoom);
    if (this.state.select) this.graph.select(this.state.select);
    if (this.state.sandwich) this.openSandwich(this.state.sandwich);
  }

  /** The function highlighted from the address, for the table to mark. */
  get selected(): string | null {
    return this.state.select || null;
  }

  /** Highlights `name`'s frames (null clears). */
  select(name: string | null): void {
    this.graph.select(name);
    this.write({ select: name ?? '' });
  }

  /** Shows the sandwich of `name` in place of the graph. */
  openSandwich(name: string): void {
    const tree = this.graph.fullTree;
    const options = this.options.sandwich;
    if (!tree || !options) return;
    const panel = sandwichPanel(tree, name, {
      ...options,
      onPick: (other) => this.openSandwich(other),
      onClose: () => this.closeSandwich(),
    });
    this.open?.destroy();
    this.open = panel;
    if (!panel) {
      this.sandwichHost.hidden = true;
      this.graph.root.hidden = false;
      this.write({ sandwich: '' });
      return;
    }
    this.sandwichHost.replaceChildren(panel.root);
    this.sandwichHost.hidden = false;
    this.graph.root.hidden = true;
    this.write({ sandwich: name });
    this.sandwichHost.scrollIntoView?.({ block: 'nearest' });
  }

  closeSandwich(): void {
    this.open?.destroy();
    this.open = null;
    this.sandwichHost.replaceChildren();
    this.sandwichHost.hidden = true;
    this.graph.root.hidden = false;
    this.write({ sandwich: '' });
  }

  /** The sandwich's graphs (callers, callees) while one is open. */
  get sandwichGraphs(): FlameGraph[] {
    return this.open?.graphs ?? [];
  }

  private write(change: Partial<FlameViewState>): void {
    Object.assign(this.state, change);
    if (this.syncing) replaceQuery(flameStateQuery(change));
  }

  private onKey(e: KeyboardEvent): void {
    if (e.ctrlKey || e.metaKey || e.altKey || typing(e.target)) return;
    if (e.key === 'Escape') {
      const graphs = this.open ? this.open.graphs : [this.graph];
      for (const g of graphs) g.resetZoom();
    } else if (e.key === '/') {
      e.preventDefault();
      const input = this.search.querySelector('input');
      input?.focus();
      input?.select();
    }
  }
}
