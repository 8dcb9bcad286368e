// The trend panel under the aggregate's flame graph: a function (a regex
// of frames) over the page's service, range, hosts, threads and event,
// drawn as two SVG charts on one time axis: its share of the samples with
// a ±2 standard error band, and the cores it keeps busy (samples per
// second for events other than CPU time). Steps without windows stay
// gaps. The function is kept in the address (`trend`).

import { ApiError, get } from '../api';
import { h, notice } from '../format';
import { replaceQuery, type ViewScope } from '../router';
import {
  bandPath,
  filledRuns,
  isEmptyTrend,
  linearScale,
  linePath,
  nearestStep,
  niceTicks,
  pointLines,
  stepText,
  tickDigits,
  timeTicks,
  timeTickText,
  trendSeries,
  type TrendResponse,
  type TrendSeries,
  type Values,
} from '../trendchart';

/** What the page shows the trend of: its service and filters (the
 *  aggregate's query, RFC 3339 times). */
export interface TrendScope {
  service: string;
  since: string;
  until: string;
  /** One host or several, comma-separated. */
  host?: string;
  thread?: string;
  event?: string | null;
  /** The page filters stacks (include, exclude), which a trend does not. */
  stacksFiltered?: boolean;
}

/** The charts' drawing box (the SVG scales it to the panel's width). */
const WIDTH = 860;
const MARGIN = { left: 64, right: 16, top: 10, bottom: 40 };
const SHARE_HEIGHT = 210;
const RATE_HEIGHT = 150;

const SVG_NS = 'http://www.w3.org/2000/svg';

function svg(tag: string, attrs: Record<string, string | number> = {}, text?: string): SVGElement {
  const el = document.createElementNS(SVG_NS, tag);
  for (const [k, v] of Object.entries(attrs)) el.setAttribute(k, String(v));
  if (text !== undefined) el.textContent = text;
  return el;
}

interface ChartSpec {
  id: string;
  height: number;
  yTitle: string;
  /** The y axis in the values' unit, and how a tick reads. */
  ticks: number[];
  tickText: (v: number) => string;
  values: Values;
  low: Values;
  high: Values;
  /** Per-point data attributes (what the step's dot stands for). */
  dataOf: (i: number) => Record<string, string>;
}

/** One chart of the trend; returns it with its hover line. */
function chart(series: TrendSeries, range: [number, number], spec: ChartSpec): { root: SVGElement; hover: SVGElement } {
  const bottom = spec.height - MARGIN.bottom;
  const x = linearScale(range, [MARGIN.left, WIDTH - MARGIN.right]);
  const y = linearScale([spec.ticks[0], spec.ticks[spec.ticks.length - 1]], [bottom, MARGIN.top]);
  const xs = series.x.map(x);
  const ys = (values: Values) => values.map((v) => (v === null ? null : y(v)));
  const root = svg('svg', { id: spec.id, class: 'trend-chart', viewBox: `0 0 ${WIDTH} ${spec.height}`, role: 'img', 'aria-label': spec.yTitle });
  for (const t of spec.ticks) {
    root.append(
      svg('line', { class: 'trend-grid', x1: MARGIN.left, x2: WIDTH - MARGIN.right, y1: y(t), y2: y(t) }),
      svg('text', { class: 'trend-tick', x: MARGIN.left - 6, y: y(t) + 4, 'text-anchor': 'end' }, spec.tickText(t)),
    );
  }
  const time = timeTicks(range[0], range[1]);
  for (const t of time.ticks) {
    root.append(
      svg('line', { class: 'trend-axis', x1: x(t), x2: x(t), y1: bottom, y2: bottom + 4 }),
      svg('text', { class: 'trend-tick', x: x(t), y: bottom + 16, 'text-anchor': 'middle' }, timeTickText(t, time.step)),
    );
  }
  const middle = (MARGIN.top + bottom) / 2;
  // A step's width in the drawing: a lone step's band is a bar that wide.
  const stepWidth = xs.length > 1 ? xs[1] - xs[0] : WIDTH;
  root.append(
    svg('line', { class: 'trend-axis', x1: MARGIN.left, x2: MARGIN.left, y1: MARGIN.top, y2: bottom }),
    svg('line', { class: 'trend-axis', x1: MARGIN.left, x2: WIDTH - MARGIN.right, y1: bottom, y2: bottom }),
    svg('text', { class: 'trend-y-title', x: 14, y: middle, transform: `rotate(-90 14 ${middle})`, 'text-anchor': 'middle' }, spec.yTitle),
    svg('text', { class: 'trend-x-title', x: (MARGIN.left + WIDTH - MARGIN.right) / 2, y: spec.height - 4, 'text-anchor': 'middle' }, 'time (UTC)'),
    svg('path', { class: 'trend-band', d: bandPath(xs, ys(spec.low), ys(spec.high), Math.max(2, stepWidth / 4)) }),
    svg('path', { class: 'trend-line', d: linePath(xs, ys(spec.values)) }),
  );
  for (const [from, to] of filledRuns(spec.values)) {
    for (let i = from; i <= to; i++) {
      root.append(svg('circle', { class: 'trend-point', cx: xs[i], cy: y(spec.values[i] as number), r: 2.5, 'data-step': i, ...spec.dataOf(i) }));
    }
  }
  const hover = svg('line', { class: 'trend-hover', y1: MARGIN.top, y2: bottom, visibility: 'hidden' });
  root.append(hover);
  return { root, hover };
}

/** The pointer's x over `chart`, in the charts' drawing units. */
function pointerX(e: MouseEvent, chart: Element): number {
  const box = chart.getBoundingClientRect();
  return box.width > 0 ? ((e.clientX - box.left) / box.width) * WIDTH : 0;
}

/** Both charts of `trend` with the tooltip they share. */
function trendCharts(trend: TrendResponse): HTMLElement {
  const series = trendSeries(trend);
  const range: [number, number] = [Date.parse(trend.since), Date.parse(trend.until)];
  const shares = series.shareHigh.filter((v): v is number => v !== null).map((v) => v * 100);
  const shareTicks = niceTicks(0, Math.min(100, Math.max(...shares, 1)));
  const shareDigits = tickDigits(shareTicks);
  const percentOf = (v: Values) => v.map((s) => (s === null ? null : s * 100));
  const points = trend.points;
  const share = chart(series, range, {
    id: 'trend-share',
    height: SHARE_HEIGHT,
    yTitle: '% of samples',
    ticks: shareTicks,
    tickText: (v) => `${v.toFixed(shareDigits)}%`,
    values: percentOf(series.share),
    low: percentOf(series.shareLow),
    high: percentOf(series.shareHigh),
    dataOf: (i) => ({ 'data-share': String(points[i].share), 'data-samples': String(points[i].samples), 'data-matched': String(points[i].matched) }),
  });
  const rates = [...series.rate, ...series.rateHigh].filter((v): v is number => v !== null);
  const rateTicks = niceTicks(0, Math.max(...rates, 0));
  const rateDigits = tickDigits(rateTicks);
  const rate = chart(series, range, {
    id: 'trend-rate',
    height: RATE_HEIGHT,
    yTitle: series.rateKind,
    ticks: rateTicks,
    tickText: (v) => v.toFixed(rateDigits),
    values: series.rate,
    low: series.rateLow,
    high: series.rateHigh,
    dataOf: (i) => ({ 'data-rate': String(series.rate[i]) }),
  });
  const xs = series.x.map(linearScale(range, [MARGIN.left, WIDTH - MARGIN.right]));
  const tooltip = h('div', { class: 'trend-tooltip', id: 'trend-tooltip', hidden: true });
  const box = h('div', { class: 'trend-charts' }, share.root, rate.root, tooltip);
  const hovers = [share.hover, rate.hover];
  const hide = () => {
    tooltip.hidden = true;
    for (const line of hovers) line.setAttribute('visibility', 'hidden');
  };
  const onMove = (e: MouseEvent, over: Element) => {
    const step = nearestStep(xs, pointerX(e, over));
    if (step < 0) return hide();
    for (const line of hovers) {
      line.setAttribute('x1', String(xs[step]));
      line.setAttribute('x2', String(xs[step]));
      line.setAttribute('visibility', 'visible');
    }
    tooltip.replaceChildren(...pointLines(points[step], series.rateKind).map((line) => h('div', {}, line)));
    tooltip.dataset.step = String(step);
    const bounds = box.getBoundingClientRect();
    tooltip.style.left = `${Math.max(0, Math.min(e.clientX - bounds.left + 14, bounds.width - 260))}px`;
    tooltip.style.top = `${e.clientY - bounds.top + 14}px`;
    tooltip.hidden = false;
  };
  for (const c of [share.root, rate.root]) {
    c.addEventListener('mousemove', (e) => onMove(e as MouseEvent, c));
    c.addEventListener('mouseleave', hide);
  }
  return box;
}

/** What a trend answer shows: the charts with what they are of, or that
 *  nothing is stored in the range. */
function trendResult(trend: TrendResponse, stacksFiltered: boolean): HTMLElement {
  if (isEmptyTrend(trend.points)) return notice('info', 'Nothing stored in this range.');
  const filled = trend.points.filter((p) => p.samples > 0).length;
  return h(
    'div',
    {},
    h(
      'p',
      { class: 'muted', id: 'trend-summary' },
      `The share of the ${trend.event ?? ''} samples with a frame matching ${trend.function} on their stack, ` +
        `in ${stepText(trend.step_secs)} steps (${filled} of ${trend.points.length} with samples); ` +
        `the band is ±2 standard errors; hover a step for its numbers.`,
      stacksFiltered ? ' The include and exclude filters do not apply here: shares are of all the samples.' : '',
    ),
    trendCharts(trend),
  );
}

/** The panel: a function field, and the trend of what it holds. */
export class TrendPanel {
  readonly root: HTMLElement;
  private readonly input: HTMLInputElement;
  private readonly result: HTMLElement;
  /** Answers to older asks are dropped. */
  private asked = 0;

  constructor(
    private readonly scope: TrendScope,
    start: string,
    private readonly view: ViewScope,
  ) {
    this.input = h('input', { id: 'trend-function', name: 'function', value: start, placeholder: 'regex of frames, e.g. ^parse$', required: true });
    this.result = h('div', { id: 'trend-result' });
    const form = h(
      'form',
      {
        class: 'filters',
        onsubmit: (e: Event) => {
          e.preventDefault();
          this.show(this.input.value.trim());
        },
      },
      h('label', {}, 'function ', this.input),
      h('button', { type: 'submit', id: 'trend-submit' }, 'Show trend'),
    );
    this.root = h(
      'section',
      { class: 'trend', id: 'agg-trend', 'data-state': 'idle' },
      h('h3', {}, 'Function trend'),
      form,
      this.result,
    );
    if (start) void this.load(start);
    else this.result.replaceChildren(h('p', { class: 'muted' }, 'Pick "Trend of this function" on a frame, or a row\'s trend button.'));
  }

  /** The function asked for (empty when none). */
  get function(): string {
    return this.root.dataset.function ?? '';
  }

  /** Shows the trend of `fn` (a regex of frames) and keeps it in the
   *  address; empty clears the panel. */
  show(fn: string): void {
    this.input.value = fn;
    replaceQuery({ trend: fn || undefined });
    this.root.scrollIntoView?.({ block: 'nearest' });
    if (!fn) {
      this.asked++;
      delete this.root.dataset.function;
      this.root.dataset.state = 'idle';
      this.result.replaceChildren();
      return;
    }
    void this.load(fn);
  }

  private async load(fn: string): Promise<void> {
    const ask = ++this.asked;
    this.root.dataset.function = fn;
    this.root.dataset.state = 'loading';
    this.result.replaceChildren(h('p', { class: 'muted' }, `Reading the trend of ${fn}…`));
    const s = this.scope;
    let state = 'drawn';
    let shown: HTMLElement;
    try {
      const trend = await get<TrendResponse>(`/api/v1/services/${encodeURIComponent(s.service)}/trend`, {
        function: fn,
        since: s.since,
        until: s.until,
        hosts: s.host,
        thread: s.thread,
        event: s.event,
      });
      if (isEmptyTrend(trend.points)) state = 'empty';
      shown = trendResult(trend, !!s.stacksFiltered);
    } catch (err) {
      const unavailable = err instanceof ApiError && err.notAvailable;
      state = unavailable ? 'unavailable' : 'error';
      shown = unavailable
        ? notice('info', 'Function trends are not available on this server (no /trend route).')
        : notice('error', `Trend: ${(err as Error).message}`);
    }
    if (ask !== this.asked || !this.view.active) return;
    this.result.replaceChildren(shown);
    this.root.dataset.state = state;
  }
}
