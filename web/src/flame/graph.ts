// The interactive flame graph: drawn on one <canvas> (icicle: root on top)
// with hit-testing on the pre-computed layout, so large profiles stay
// smooth. Click zooms, the breadcrumb and Reset go back, hovering shows a
// tooltip, right-click opens a menu, a regex search highlights frames.
// Trees cut to a node budget draw their `other` boxes hatched; zooming into
// a cut subtree zooms at once and then shows the server's focused tree.

import { escapeHtml, h, pct } from '../format';
import { amount, isTimed, wholeOf, type SampleUnit } from '../units';
import { FocusCache, focusParam, focusPath, isCut, isMerged, nodeAtPath, samePath, zoomTarget } from './focus';
import {
  ancestry,
  diffColor,
  frameColor,
  hitTest,
  layout,
  maxAbsDelta,
  search,
  shareOf,
  type FlatTree,
  type Layout,
  type SearchResult,
} from './layout';

const ROW = 18;
const FONT = '12px ui-monospace, SFMono-Regular, Menlo, monospace';
const MATCH_COLOR = '#c040e0';
const SELECTED_COLOR = '#2aa198';
/** `other` boxes: grey, hatched by OTHER_STRIPE where canvases allow. */
const OTHER_COLOR = '#d5d8dc';
const OTHER_STRIPE = '#a7adb3';
/** 2 percentage points of total share. */
const DIFF_SATURATION_FLOOR = 0.02;
const MAX_CANVAS_PX = 32_000;
/** Dispatched on `FlameGraph.root` when another tree is shown (a focused
 *  one fetched, or back to the unfocused one). */
export const TREE_CHANGE = 'flametreechange';

export interface MenuItem {
  label: string;
  href?: string;
  action?: () => void;
}

export interface DrawnFrame {
  name: string;
  x: number;
  w: number;
  depth: number;
  /** Highlighted by the search. */
  matched: boolean;
  /** Highlighted by a table row. */
  selected: boolean;
  /** Frames an `other` box stands for; 0 for a real frame. */
  merged: number;
}

export interface FlameOptions {
  /** 'samples' graphs show counts and ± error; 'diff' graphs show both sides. */
  kind: 'samples' | 'diff';
  /** Total samples behind the shares, for the binomial error. */
  samples: number;
  /** What a sample stands for: tooltips of timed events show time. */
  unit?: SampleUnit;
  /** Extra context-menu entries for a frame (source link, known issue). */
  menuItems?: (name: string, stack: string[]) => MenuItem[];
  /** Fetches the tree opened at a `focus` path (frame names below the
   *  root): the view's endpoint asked again with `focus`. Without it, cut
   *  subtrees only zoom locally. */
  loadFocus?: (path: string[]) => Promise<FlatTree>;
}

/** Diagonal grey stripes for `other` boxes (plain grey without a 2D context). */
function hatchPattern(ctx: CanvasRenderingContext2D): CanvasPattern | string {
  const tile = document.createElement('canvas');
  tile.width = tile.height = 6;
  const t = tile.getContext('2d');
  if (!t) return OTHER_COLOR;
  t.fillStyle = OTHER_COLOR;
  t.fillRect(0, 0, 6, 6);
  t.strokeStyle = OTHER_STRIPE;
  t.lineWidth = 1.5;
  t.beginPath();
  for (const o of [-6, 0, 6]) {
    t.moveTo(o, 6);
    t.lineTo(o + 6, 0);
  }
  t.stroke();
  return ctx.createPattern(tile, 'repeat') ?? OTHER_COLOR;
}

export class FlameGraph {
  readonly root: HTMLElement;
  readonly canvas: HTMLCanvasElement;
  private readonly ctx: CanvasRenderingContext2D;
  private readonly crumbs: HTMLElement;
  private readonly tooltip: HTMLElement;
  private readonly menu: HTMLElement;
  private readonly status: HTMLElement;
  private readonly otherFill: CanvasPattern | string;
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
  private maxDelta = 0;
  private width = 0;
  private frameRequested = false;
  private readonly resizeObserver: ResizeObserver;
  /** Milliseconds the last layout + draw took (shown for large profiles). */
  lastRenderMs = 0;

  constructor(private options: FlameOptions) {
    this.canvas = h('canvas', { class: 'flame', 'aria-label': 'flame graph' });
    this.ctx = this.canvas.getContext('2d')!;
    this.crumbs = h('nav', { class: 'breadcrumb', 'aria-label': 'zoom path' });
    this.tooltip = h('div', { class: 'flame-tooltip', role: 'tooltip', hidden: true });
    this.menu = h('div', { class: 'flame-menu', role: 'menu', hidden: true });
    this.status = h('span', { class: 'flame-status', role: 'status' });
    this.otherFill = hatchPattern(this.ctx);
    const reset = h('button', { class: 'flame-reset', onclick: () => this.resetZoom() }, 'Reset zoom');
    this.root = h(
      'div',
      { class: 'flame-graph' },
      h('div', { class: 'flame-bar' }, reset, this.crumbs, this.status),
      h('div', { class: 'flame-scroll' }, this.canvas),
      this.tooltip,
      this.menu,
    );
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
    this.resizeObserver = new ResizeObserver(() => this.requestDraw());
    this.resizeObserver.observe(this.root);
  }

  /** Shows the view's (unfocused) tree; focused trees fetched for an
   *  earlier one are forgotten. */
  setTree(tree: FlatTree): void {
    this.zoomSeq++;
    this.cache = new FocusCache(tree);
    this.show(tree, [], 0);
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
    if (path) void this.fetchFocused(path, seq);
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

  /** Highlights every frame named `name` (a clicked table row). */
  select(name: string | null): void {
    this.selectedName = name;
    this.draw();
  }

  /** The frames drawn: name, pixel box (CSS px) and depth. */
  visibleFrames(): DrawnFrame[] {
    const out: DrawnFrame[] = [];
    if (!this.tree || !this.current) return out;
    this.current.rows.forEach((row, depth) =>
      row.nodes.forEach((n, k) =>
        out.push({
          name: this.tree!.names[n],
          x: row.x[k],
          w: row.w[k],
          depth,
          matched: !!this.matches?.matched[n],
          selected: this.tree!.names[n] === this.selectedName,
          merged: this.tree!.merged[n],
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
    this.resizeObserver.disconnect();
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
    // Browsers refuse canvases much taller than 32k device pixels; deeper
    // rows are reached by zooming into a frame near the bottom.
    const height = Math.min(l.rows.length * ROW, Math.floor(MAX_CANVAS_PX / dpr / ROW) * ROW);
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
    l.rows.forEach((row, depth) => {
      const y = depth * ROW;
      for (let k = 0; k < row.nodes.length; k++) {
        const n = row.nodes[k];
        const x = row.x[k];
        const w = row.w[k];
        const name = tree.names[n];
        // An `other` box says how many frames it stands for.
        const text = tree.merged[n] > 0 ? `${name} (${tree.merged[n]})` : name;
        ctx.fillStyle = this.fillFor(n, name);
        ctx.fillRect(x, y, Math.max(w - 0.5, 0.5), ROW - 1);
        if (w > charWidth * 3) {
          const fits = Math.floor((w - 6) / charWidth);
          const label = text.length > fits ? text.slice(0, Math.max(fits - 1, 1)) + '…' : text;
          ctx.fillStyle = tree.merged[n] > 0 ? '#333' : '#111';
          ctx.fillText(label, x + 3, y + ROW / 2);
        }
      }
    });
    this.renderCrumbs();
    this.lastRenderMs = performance.now() - t0;
    this.canvas.dataset.zoom = tree.names[this.zoom];
    this.canvas.dataset.focus = focusParam(this.focus);
    this.canvas.dataset.renderMs = this.lastRenderMs.toFixed(1);
  }

  private fillFor(n: number, name: string): string | CanvasPattern {
    const tree = this.tree!;
    if (tree.merged[n] > 0) return this.otherFill;
    if (this.matches?.matched[n]) return MATCH_COLOR;
    if (this.selectedName !== null && name === this.selectedName) return SELECTED_COLOR;
    if (this.options.kind === 'diff') return diffColor(tree.delta[n], this.maxDelta);
    return frameColor(name);
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
    const depth = Math.floor((e.clientY - rect.top) / ROW);
    return hitTest(this.current, x, depth);
  }

  private describe(n: number): string {
    const tree = this.tree!;
    const name = escapeHtml(tree.names[n]);
    if (this.options.kind === 'diff') {
      const b = tree.sides?.baseline[n] ?? 0;
      const t = tree.sides?.target[n] ?? 0;
      const d = tree.delta[n];
      return `<b>${name}</b><br>baseline ${b} samples · target ${t} samples<br>` +
        `change ${d >= 0 ? '+' : ''}${(d * 100).toFixed(2)} points of total share`;
    }
    const { share, stderr } = shareOf(tree, n, this.options.samples);
    const unit = this.options.unit ?? {};
    const whole = wholeOf(unit);
    const total = isTimed(unit) ? `${amount(tree.total[n], unit)} (${tree.total[n]} samples)` : `${tree.total[n]} samples`;
    if (isMerged(tree, n)) {
      const opens = this.opens(n);
      const frames = tree.merged[n] === 1 ? '1 smaller frame' : `${tree.merged[n]} smaller frames`;
      return `<b>${name}</b>: ${frames} merged${opens ? '; click to open' : ''}<br>` +
        `${total}<br>${pct(share, 2)} ± ${pct(stderr, 2)} of ${whole}`;
    }
    const line = isTimed(unit)
      ? `${amount(tree.total[n], unit)} (${amount(tree.self[n], unit)} self, ${tree.total[n]} samples)`
      : `${tree.total[n]} samples (${tree.self[n]} self)`;
    return `<b>${name}</b><br>${line}<br>` + `${pct(share, 2)} ± ${pct(stderr, 2)} of ${whole}`;
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
          ...(this.options.menuItems?.(name, stack) ?? []),
          {
            label: 'Copy stack',
            action: () => void navigator.clipboard?.writeText(stack.slice().reverse().join('\n')),
          },
        ];
    this.menu.replaceChildren(
      h('div', { class: 'menu-title' }, name),
      ...items.map((item) =>
        item.href
          ? h('a', { role: 'menuitem', href: item.href, target: '_blank', rel: 'noopener' }, item.label)
          : h('button', { role: 'menuitem', onclick: () => item.action?.() }, item.label),
      ),
    );
    const box = this.root.getBoundingClientRect();
    this.menu.style.left = `${e.clientX - box.left}px`;
    this.menu.style.top = `${e.clientY - box.top}px`;
    this.menu.hidden = false;
  }
}
