// The interactive flame graph: drawn on one <canvas>, as an icicle (root
// on top) or a flame graph (root at the bottom), with hit-testing on the
// pre-computed layout, so large profiles stay smooth. Click zooms, the
// breadcrumb and Reset go back, hovering shows a tooltip, right-click opens
// a menu, a regex search highlights frames.
// Trees cut to a node budget draw their `other` boxes hatched; zooming into
// a cut subtree zooms at once and then shows the server's focused tree.

import { copyText, h } from '../format';
import { flameOrientation, setFlameOrientation, type Orientation, type SourceLocation } from '../settings';
import { type SampleUnit } from '../units';
import { describeNode, diffChange } from './describe';
import { FocusCache, focusParam, focusPath, isCut, isMerged, nodeAtPath, samePath, zoomTarget } from './focus';
import { ancestry, frameColor, hitTest, layout, maxAbsDelta, search, type FlatTree, type Layout, type SearchResult } from './layout';
import { significanceColor } from './significance';
import { DARK_QUERY, labelColor, prefersDark, themeFor, type FlameTheme } from './theme';

export const ROW = 18;
const FONT = '12px ui-monospace, SFMono-Regular, Menlo, monospace';
/** 2 percentage points of total share. */
const DIFF_SATURATION_FLOOR = 0.02;
const MAX_CANVAS_PX = 32_000;
/** Dispatched on `FlameGraph.root` when another tree is shown (a focused
 *  one fetched, or back to the unfocused one). */
export const TREE_CHANGE = 'flametreechange';
/** Dispatched on `FlameGraph.root` when the zoomed frame changes. */
export const ZOOM_CHANGE = 'flamezoomchange';

export interface MenuItem {
  label: string;
  href?: string;
  action?: () => void;
  /** Copied to the clipboard, with a status line naming `what`. */
  copy?: { text: string; what: string };
  /** The entry's tooltip. */
  title?: string;
}

export interface DrawnFrame {
  name: string;
  x: number;
  w: number;
  depth: number;
  /** Top of the box in CSS px (rows go up in a flame graph). */
  y: number;
  /** Highlighted by the search. */
  matched: boolean;
  /** Highlighted by a table row. */
  selected: boolean;
  /** Frames an `other` box stands for; 0 for a real frame. */
  merged: number;
  /** The box's colour (`pattern` for the hatched `other` boxes). */
  fill: string;
}

export interface FlameOptions {
  /** 'samples' graphs show counts and ± error; 'diff' graphs show both sides. */
  kind: 'samples' | 'diff';
  /** Total samples behind the shares, for the binomial error. */
  samples: number;
  /** What a sample stands for: tooltips of timed events show time. */
  unit?: SampleUnit;
  /** Extra context-menu entries for a frame (source link, known issue);
   *  `source` is the frame's file and line when the profile has them. */
  menuItems?: (name: string, stack: string[], source?: SourceLocation) => MenuItem[];
  /** Fetches the tree opened at a `focus` path (frame names below the
   *  root): the view's endpoint asked again with `focus`. Without it, cut
   *  subtrees only zoom locally. */
  loadFocus?: (path: string[]) => Promise<FlatTree>;
  /** A diff's baseline samples, for each change's ± (`samples` is the
   *  target's). */
  baselineSamples?: number;
  /** A fixed orientation (the sandwich's halves); without it the graph has
   *  a flame/icicle toggle and follows the remembered choice. */
  orientation?: Orientation;
  /** The weight shares are of, when not the root's (a sandwich's). */
  whole?: number;
  /** `aria-label` of the canvas. */
  label?: string;
}

/** Diagonal grey stripes for `other` boxes (plain grey without a 2D context). */
function hatchPattern(ctx: CanvasRenderingContext2D, theme: FlameTheme): CanvasPattern | string {
  const tile = document.createElement('canvas');
  tile.width = tile.height = 6;
  const t = tile.getContext('2d');
  if (!t) return theme.other;
  t.fillStyle = theme.other;
  t.fillRect(0, 0, 6, 6);
  t.strokeStyle = theme.otherStripe;
  t.lineWidth = 1.5;
  t.beginPath();
  for (const o of [-6, 0, 6]) {
    t.moveTo(o, 6);
    t.lineTo(o + 6, 0);
  }
  t.stroke();
  return ctx.createPattern(tile, 'repeat') ?? theme.other;
}

export class FlameGraph {
  readonly root: HTMLElement;
  readonly canvas: HTMLCanvasElement;
  private readonly ctx: CanvasRenderingContext2D;
  private readonly crumbs: HTMLElement;
  private readonly tooltip: HTMLElement;
  private readonly menu: HTMLElement;
  private readonly status: HTMLElement;
  private readonly scroller: HTMLElement;
  private readonly orientButton: HTMLButtonElement | null;
  private otherFill: CanvasPattern | string;
  private theme: FlameTheme;
  private orientation: Orientation;
  private readonly media: MediaQueryList | null;
  private tree: FlatTree | null = null;
  private zoom = 0;
  /** The focus path `tree` was fetched with ([]: the unfocused tree). */
  private focus: string[] = [];
  /** Trees by focus path, set with the unfocused tree. */
  private cache: FocusCache | null = null;
  /** Bumped by every zoom, so a focused tree arriving late is dropped. */
  private zoomSeq = 0;
  private pattern: RegExp | null = null;
  private current: Layout | null = null;
  private matches: SearchResult | null = null;
  private selectedName: string | null = null;
  /** The zoom path last announced by ZOOM_CHANGE. */
  private announced = '';
  private maxDelta = 0;
  private width = 0;
  private frameRequested = false;
  private scrollPending = false;
  private readonly resizeObserver: ResizeObserver;
  /** Milliseconds the last layout + draw took (shown for large profiles). */
  lastRenderMs = 0;
  /** Opens the sandwich view of a function: set by the view that shows
   *  one, which adds "Sandwich view" to the context menu. */
  onSandwich: ((name: string) => void) | null = null;

  constructor(private options: FlameOptions) {
    this.canvas = h('canvas', { class: 'flame', 'aria-label': options.label ?? 'flame graph' });
    this.ctx = this.canvas.getContext('2d')!;
    this.crumbs = h('nav', { class: 'breadcrumb', 'aria-label': 'zoom path' });
    this.tooltip = h('div', { class: 'flame-tooltip', role: 'tooltip', hidden: true });
    this.menu = h('div', { class: 'flame-menu', role: 'menu', hidden: true });
    this.status = h('span', { class: 'flame-status', role: 'status' });
    this.media = typeof matchMedia === 'function' ? matchMedia(DARK_QUERY) : null;
    this.theme = themeFor(prefersDark());
    this.otherFill = hatchPattern(this.ctx, this.theme);
    this.orientation = options.orientation ?? flameOrientation();
    const reset = h('button', { class: 'flame-reset', title: 'Reset zoom (Esc)', onclick: () => this.resetZoom() }, 'Reset zoom');
    this.orientButton = options.orientation
      ? null
      : h('button', { class: 'flame-orientation', type: 'button', onclick: () => this.toggleOrientation() });
    this.scroller = h('div', { class: 'flame-scroll' }, this.canvas);
    this.root = h(
      'div',
      { class: 'flame-graph', 'data-orientation': this.orientation },
      h('div', { class: 'flame-bar' }, reset, this.orientButton, this.crumbs, this.status),
      this.scroller,
      this.tooltip,
      this.menu,
    );
    this.labelOrientation();
    // Playwright and the benchmark read the drawn frames through this.
    (this.canvas as unknown as { odpFlame: FlameGraph }).odpFlame = this;
    this.canvas.addEventListener('mousemove', (e) => this.onHover(e));
    this.canvas.addEventListener('mouseleave', () => (this.tooltip.hidden = true));
    this.canvas.addEventListener('click', (e) => {
      const node = this.nodeAt(e);
      if (node >= 0) this.zoomTo(node);
    });
    this.canvas.addEventListener('contextmenu', (e) => this.onContextMenu(e));
    document.addEventListener('click', this.closeMenu);
    this.media?.addEventListener('change', this.onScheme);
    this.resizeObserver = new ResizeObserver(() => this.requestDraw());
    this.resizeObserver.observe(this.root);
  }

  /** 'icicle' (root on top) or 'flame' (root at the bottom). */
  get shownOrientation(): Orientation {
    return this.orientation;
  }

  /** Draws the other way up; remembered for every graph with a toggle. */
  setOrientation(orientation: Orientation): void {
    if (orientation === this.orientation) return;
    this.orientation = orientation;
    if (!this.options.orientation) setFlameOrientation(orientation);
    this.root.dataset.orientation = orientation;
    this.labelOrientation();
    this.draw();
    this.scrollToRoot();
  }

  toggleOrientation(): void {
    this.setOrientation(this.orientation === 'icicle' ? 'flame' : 'icicle');
  }

  private labelOrientation(): void {
    if (!this.orientButton) return;
    const next = this.orientation === 'icicle' ? 'flame graph (root at the bottom)' : 'icicle (root on top)';
    this.orientButton.textContent = this.orientation === 'icicle' ? '▲ Flame' : '▼ Icicle';
    this.orientButton.title = `Draw as a ${next}`;
    this.orientButton.setAttribute('aria-pressed', String(this.orientation === 'flame'));
  }

  /** A flame graph's root is at the bottom: scroll to it (at the next
   *  draw in the page, if the graph is not in it yet). */
  private scrollToRoot(): void {
    if (!this.scroller.isConnected) {
      this.scrollPending = true;
      return;
    }
    this.scrollPending = false;
    this.scroller.scrollTop = this.orientation === 'flame' ? this.scroller.scrollHeight : 0;
  }

  private readonly onScheme = () => {
    this.theme = themeFor(prefersDark());
    this.otherFill = hatchPattern(this.ctx, this.theme);
    this.draw();
  };

  /** Shows the view's (unfocused) tree; focused trees fetched for an
   *  earlier one are forgotten. */
  setTree(tree: FlatTree): void {
    this.zoomSeq++;
    this.cache = new FocusCache(tree);
    this.show(tree, [], 0);
    this.scrollToRoot();
  }

  /** The unfocused tree (the whole profile), whatever zoom is shown. */
  get fullTree(): FlatTree | null {
    return this.cache?.get([]) ?? null;
  }

  /**
   * Zooms so `node` fills the width (an `other` node: its parent). A cut
   * subtree zooms at once in the tree shown, then the tree focused on it
   * (fetched once, then cached) replaces it; a complete one only zooms.
   */
  zoomTo(node: number): void {
    const tree = this.tree;
    if (!tree || !this.cache) return;
    const seq = ++this.zoomSeq;
    const target = zoomTarget(tree, node);
    const path = this.refetchPath(tree, target);
    const cached = path && this.cache.get(path);
    if (path && cached) return this.showFocused(cached, path);
    this.zoom = target;
    this.draw();
    // After the draw, which reads the layout: no reflow for the text.
    this.setStatus(path ? `Opening ${tree.names[target]}…` : '');
    this.announceZoom();
    if (path) void this.fetchFocused(path, seq);
  }

  /**
   * Zooms to the frame at `path` (names below the root, as in the
   * address): in the tree shown when it is there, else, when the graph can
   * fetch focused trees, the server's tree focused on it.
   */
  zoomToPath(path: string[]): void {
    if (!this.tree || !this.cache) return;
    if (!path.length) return this.resetZoom();
    const node = nodeAtPath(this.tree, path);
    if (node >= 0) return this.zoomTo(node);
    const askable = path.every((name) => name !== '' && !name.includes(';'));
    if (!this.options.loadFocus || !askable) {
      this.setStatus(`${path.at(-1)} is not in this graph`, true);
      return;
    }
    const seq = ++this.zoomSeq;
    this.setStatus(`Opening ${path.at(-1)}…`);
    void this.fetchFocused(path, seq);
  }

  /** Frame names below the root down to the zoomed frame ([]: the root). */
  get zoomPath(): string[] {
    const tree = this.tree;
    return tree ? ancestry(tree, this.zoom).slice(1).map((n) => tree.names[n]) : [];
  }

  private announceZoom(): void {
    const key = JSON.stringify(this.zoomPath);
    if (key === this.announced) return;
    this.announced = key;
    this.root.dispatchEvent(new Event(ZOOM_CHANGE));
  }

  /** Back to the unfocused tree's root, without fetching. */
  resetZoom(): void {
    if (!this.cache) return;
    this.zoomSeq++;
    this.show(this.cache.get([])!, [], 0);
  }

  get zoomed(): string | null {
    return this.tree ? this.tree.names[this.zoom] : null;
  }

  /** Highlights frames whose name matches; `null` clears. */
  setSearch(pattern: RegExp | null): SearchResult | null {
    this.pattern = pattern;
    this.matches = pattern && this.tree ? search(this.tree, pattern) : null;
    this.draw();
    return this.matches;
  }

  /** The search's result on the tree shown. */
  get searchResult(): SearchResult | null {
    return this.matches;
  }

  private show(tree: FlatTree, focus: string[], zoom: number): void {
    const changed = tree !== this.tree;
    this.tree = tree;
    this.focus = focus;
    this.zoom = zoom;
    this.matches = this.pattern ? search(tree, this.pattern) : null;
    // Colours saturate at the largest change, but never below
    // DIFF_SATURATION_FLOOR, so sampling noise in a quiet diff stays pale.
    this.maxDelta = this.options.kind === 'diff' ? Math.max(maxAbsDelta(tree), DIFF_SATURATION_FLOOR) : 0;
    this.draw();
    this.setStatus('');
    this.announceZoom();
    if (!changed) return;
    // The box under the pointer is another node now.
    this.tooltip.hidden = true;
    this.root.dispatchEvent(new Event(TREE_CHANGE));
  }

  /** The focus path to fetch for a zoom into `node`, or null when the tree
   *  shown is all there is: a complete subtree, no loader, a path that
   *  cannot be asked for, or the focus shown already. */
  private refetchPath(tree: FlatTree, node: number): string[] | null {
    if (!this.options.loadFocus || !isCut(tree, node)) return null;
    const path = focusPath(tree, node);
    return path && !samePath(path, this.focus) ? path : null;
  }

  /** Whether a zoom into `node` shows frames the tree shown lacks. */
  private opens(node: number): boolean {
    const tree = this.tree!;
    return this.refetchPath(tree, zoomTarget(tree, node)) !== null;
  }

  private showFocused(tree: FlatTree, path: string[]): void {
    this.show(tree, path, Math.max(nodeAtPath(tree, path), 0));
  }

  private async fetchFocused(path: string[], seq: number): Promise<void> {
    const load = this.options.loadFocus!;
    try {
      const tree = await this.cache!.load(path, () => load(path));
      if (seq === this.zoomSeq) this.showFocused(tree, path);
    } catch (e) {
      if (seq === this.zoomSeq) this.setStatus(`Could not open ${path.at(-1)}: ${(e as Error).message}`, true);
    }
  }

  private setStatus(text: string, error = false): void {
    this.status.textContent = text;
    this.status.classList.toggle('error', error);
  }

  /** Highlights every frame named `name` (a clicked table row); says in
   *  the status line when none is drawn. */
  select(name: string | null): void {
    this.selectedName = name;
    this.draw();
    if (!name) return this.setStatus('');
    const drawn = this.visibleFrames().filter((f) => f.selected).length;
    this.setStatus(
      drawn
        ? `${name}: ${drawn} ${drawn === 1 ? 'frame' : 'frames'} highlighted`
        : `${name} is not drawn here (too narrow, cut, or outside the zoom)`,
    );
  }

  get selected(): string | null {
    return this.selectedName;
  }

  /** The current statusline (tests read it). */
  get statusText(): string {
    return this.status.textContent ?? '';
  }

  /** The frames drawn: name, pixel box (CSS px) and depth. */
  visibleFrames(): DrawnFrame[] {
    const out: DrawnFrame[] = [];
    if (!this.tree || !this.current) return out;
    const rows = this.rowsShown();
    this.current.rows.slice(0, rows).forEach((row, depth) =>
      row.nodes.forEach((n, k) =>
        out.push({
          name: this.tree!.names[n],
          x: row.x[k],
          w: row.w[k],
          depth,
          y: this.rowTop(depth, rows),
          matched: !!this.matches?.matched[n],
          selected: this.tree!.names[n] === this.selectedName,
          merged: this.tree!.merged[n],
          fill: ((f) => (typeof f === 'string' ? f : 'pattern'))(this.fillFor(n, this.tree!.names[n])),
        }),
      ),
    );
    return out;
  }

  private readonly closeMenu = () => {
    this.menu.hidden = true;
  };

  destroy(): void {
    this.zoomSeq++;
    document.removeEventListener('click', this.closeMenu);
    this.media?.removeEventListener('change', this.onScheme);
    this.resizeObserver.disconnect();
  }

  /** Rows drawn: browsers refuse canvases much taller than 32k device
   *  pixels; deeper rows are reached by zooming into a frame near them. */
  private rowsShown(): number {
    const dpr = window.devicePixelRatio || 1;
    return Math.min(this.current?.rows.length ?? 0, Math.floor(MAX_CANVAS_PX / dpr / ROW));
  }

  /** Top of row `depth` in CSS px: icicles grow down, flames up. */
  private rowTop(depth: number, rows: number): number {
    return (this.orientation === 'flame' ? rows - 1 - depth : depth) * ROW;
  }

  private requestDraw(): void {
    if (this.frameRequested) return;
    this.frameRequested = true;
    requestAnimationFrame(() => {
      this.frameRequested = false;
      this.draw();
    });
  }

  private draw(): void {
    const tree = this.tree;
    if (!tree) return;
    const t0 = performance.now();
    const width = Math.max(200, this.root.clientWidth || 800);
    this.width = width;
    const l = layout(tree, this.zoom, width, 0.5);
    this.current = l;
    const dpr = window.devicePixelRatio || 1;
    const rows = this.rowsShown();
    const height = rows * ROW;
    this.canvas.width = Math.round(width * dpr);
    this.canvas.height = Math.round(height * dpr);
    this.canvas.style.width = `${width}px`;
    this.canvas.style.height = `${height}px`;
    const ctx = this.ctx;
    ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
    ctx.clearRect(0, 0, width, height);
    ctx.font = FONT;
    ctx.textBaseline = 'middle';
    const charWidth = ctx.measureText('m').width || 7;
    l.rows.slice(0, rows).forEach((row, depth) => {
      const y = this.rowTop(depth, rows);
      for (let k = 0; k < row.nodes.length; k++) {
        const n = row.nodes[k];
        const x = row.x[k];
        const w = row.w[k];
        const name = tree.names[n];
        // An `other` box says how many frames it stands for.
        const text = tree.merged[n] > 0 ? `${name} (${tree.merged[n]})` : name;
        const fill = this.fillFor(n, name);
        ctx.fillStyle = fill;
        ctx.fillRect(x, y, Math.max(w - 0.5, 0.5), ROW - 1);
        if (w > charWidth * 3) {
          const fits = Math.floor((w - 6) / charWidth);
          const label = text.length > fits ? text.slice(0, Math.max(fits - 1, 1)) + '…' : text;
          ctx.fillStyle = labelColor(typeof fill === 'string' ? fill : this.theme.other);
          ctx.fillText(label, x + 3, y + ROW / 2);
        }
      }
    });
    this.renderCrumbs();
    if (this.scrollPending) this.scrollToRoot();
    this.lastRenderMs = performance.now() - t0;
    this.canvas.dataset.zoom = tree.names[this.zoom];
    this.canvas.dataset.focus = focusParam(this.focus);
    this.canvas.dataset.orientation = this.orientation;
    this.canvas.dataset.renderMs = this.lastRenderMs.toFixed(1);
  }

  private fillFor(n: number, name: string): string | CanvasPattern {
    const tree = this.tree!;
    if (tree.merged[n] > 0) return this.otherFill;
    if (this.matches?.matched[n]) return this.theme.match;
    if (this.selectedName !== null && name === this.selectedName) return this.theme.selected;
    if (this.options.kind === 'diff') {
      const c = diffChange(tree, n, this.options.baselineSamples ?? 0, this.options.samples);
      return significanceColor(c, this.maxDelta, this.theme.dark);
    }
    return frameColor(name, this.theme.dark);
  }

  private renderCrumbs(): void {
    const tree = this.tree!;
    this.crumbs.replaceChildren(
      ...ancestry(tree, this.zoom).flatMap((n, i) => {
        const crumb = h(
          'button',
          { class: 'crumb', title: tree.names[n], onclick: () => this.zoomTo(n) },
          tree.names[n],
        );
        return i === 0 ? [crumb] : [h('span', { class: 'sep' }, '›'), crumb];
      }),
    );
  }

  private nodeAt(e: MouseEvent): number {
    if (!this.current) return -1;
    const rect = this.canvas.getBoundingClientRect();
    const x = ((e.clientX - rect.left) / rect.width) * this.width;
    const row = Math.floor((e.clientY - rect.top) / ROW);
    const depth = this.orientation === 'flame' ? this.rowsShown() - 1 - row : row;
    return hitTest(this.current, x, depth);
  }

  private describe(n: number): string {
    return describeNode(this.tree!, n, {
      kind: this.options.kind,
      samples: this.options.samples,
      baselineSamples: this.options.baselineSamples,
      unit: this.options.unit,
      whole: this.options.whole,
      opens: isMerged(this.tree!, n) && this.opens(n),
    });
  }

  private onHover(e: MouseEvent): void {
    const n = this.nodeAt(e);
    if (n < 0) {
      this.tooltip.hidden = true;
      this.canvas.style.cursor = 'default';
      return;
    }
    this.canvas.style.cursor = 'pointer';
    this.tooltip.innerHTML = this.describe(n);
    this.tooltip.hidden = false;
    const box = this.root.getBoundingClientRect();
    const left = Math.min(e.clientX - box.left + 12, box.width - 260);
    this.tooltip.style.left = `${Math.max(0, left)}px`;
    this.tooltip.style.top = `${e.clientY - box.top + 16}px`;
  }

  private async copy(text: string, what: string): Promise<void> {
    const ok = await copyText(text);
    this.setStatus(ok ? `Copied the ${what}` : `Could not copy the ${what}`, !ok);
  }

  private onContextMenu(e: MouseEvent): void {
    const n = this.nodeAt(e);
    if (n < 0 || !this.tree) return;
    e.preventDefault();
    const tree = this.tree;
    const stack = ancestry(tree, n).map((i) => tree.names[i]);
    const name = tree.names[n];
    // An `other` box has no source or stack of its own: it only opens.
    const items: MenuItem[] = isMerged(tree, n)
      ? [{ label: this.opens(n) ? `Open ${tree.merged[n]} merged frames` : 'Zoom here', action: () => this.zoomTo(n) }]
      : [
          { label: 'Zoom here', action: () => this.zoomTo(n) },
          ...(this.onSandwich ? [{ label: 'Sandwich view', action: () => this.onSandwich?.(name) }] : []),
          ...(this.options.menuItems?.(name, stack, tree.sources?.[n]) ?? []),
          { label: 'Copy function name', action: () => void this.copy(name, 'function name') },
          { label: 'Copy stack', action: () => void this.copy(stack.slice().reverse().join('\n'), 'stack') },
        ];
    this.menu.replaceChildren(
      h('div', { class: 'menu-title' }, name),
      ...items.map((item) =>
        item.href
          ? h('a', { role: 'menuitem', href: item.href, target: '_blank', rel: 'noopener', title: item.title }, item.label)
          : h(
              'button',
              {
                role: 'menuitem',
                title: item.title,
                onclick: () => (item.copy ? void this.copy(item.copy.text, item.copy.what) : item.action?.()),
              },
              item.label,
            ),
      ),
    );
    const box = this.root.getBoundingClientRect();
    this.menu.style.left = `${e.clientX - box.left}px`;
    this.menu.style.top = `${e.clientY - box.top}px`;
    this.menu.hidden = false;
  }
}
