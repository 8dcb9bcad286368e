// Benchmark: time to first paint and to zoom of a 100,000-distinct-stack
// profile in the real UI bundle (web/dist) and Debian's chromium.
//
//   npm run build && npm run bench            (from web/)
//
// Serves web/dist and a synthetic API answering the profile view's calls
// (plain HTTP on 127.0.0.1, no platform needed), signs in with a fake token
// (the UI only decodes it), opens the profile and measures with the page's
// own clock: navigation → flame graph drawn, click → zoomed redraw, and
// click on a cut node → the server's focused tree drawn.
// Prints one JSON line with the timings (median of the zoom runs).
//
// Like the api-server, the synthetic API cuts the tree to `max_nodes`
// (default 8192) and opens `focus`; FULL_TREE=1 sends the whole tree, as
// servers did before the node budget.
import { createServer } from 'node:http';
import { readFileSync, existsSync } from 'node:fs';
import { extname, join, normalize } from 'node:path';
import { chromium } from 'playwright-core';

const STACKS = Number(process.env.STACKS ?? 100_000);
const FULL_TREE = process.env.FULL_TREE === '1';
const DEFAULT_MAX_NODES = 8192;
const DIST = new URL('../dist/', import.meta.url).pathname;
const ID = '00000000-0000-4000-8000-000000000001';

/** A tree with `stacks` distinct leaves: 10 services × 10 handlers × ... —
 *  a fan-out per level until the leaves are reached, plus a deep tail. */
function syntheticTree(stacks) {
  let seed = 42;
  const rand = () => ((seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31);
  const fanout = [10, 10, 10, 10, 10];
  let leaves = 0;
  const build = (depth, prefix) => {
    if (depth === fanout.length || leaves >= stacks) {
      leaves++;
      const self = 1 + Math.floor(rand() * 20);
      return { name: `${prefix}::leaf`, total: self, self_count: self };
    }
    const children = [];
    for (let i = 0; i < fanout[depth] && leaves < stacks; i++) children.push(build(depth + 1, `${prefix}.f${depth}_${i}`));
    const total = children.reduce((s, c) => s + c.total, 0);
    return { name: `${prefix || 'mod'}`, total, self_count: 0, children };
  };
  const root = build(0, '');
  return { name: 'all', total: root.total, self_count: 0, children: [root] };
}

/** Max-heap of [total, order] pairs: heaviest first, earlier on ties. */
class Heap {
  items = [];
  get size() { return this.items.length; }
  before(a, b) { return a[0] > b[0] || (a[0] === b[0] && a[1] < b[1]); }
  push(item) {
    const h = this.items;
    h.push(item);
    for (let i = h.length - 1; i > 0; ) {
      const p = (i - 1) >> 1;
      if (!this.before(h[i], h[p])) break;
      [h[i], h[p]] = [h[p], h[i]];
      i = p;
    }
  }
  pop() {
    const h = this.items;
    const top = h[0];
    const last = h.pop();
    if (h.length) {
      h[0] = last;
      for (let i = 0; ; ) {
        const l = 2 * i + 1, r = l + 1;
        let m = i;
        if (l < h.length && this.before(h[l], h[m])) m = l;
        if (r < h.length && this.before(h[r], h[m])) m = r;
        if (m === i) break;
        [h[i], h[m]] = [h[m], h[i]];
        i = m;
      }
    }
    return top;
  }
}

/** The server's cut (profile/src/flame.rs): the `budget` heaviest nodes
 *  are kept, a node only with its parent; each kept node's other children
 *  become one `other` node with their total and `merged` count. With
 *  `focus` (names below the root) the path is kept and only that subtree
 *  opened. null when the focus path is not in the tree. */
function cutTree(root, budget, focus) {
  const kept = new Set([root]);
  let start = root;
  for (const name of focus) {
    start = (start.children ?? []).find((c) => c.name === name);
    if (!start) return null;
    kept.add(start);
  }
  const nodes = [];
  const heap = new Heap();
  const offer = (n) => {
    for (const c of n.children ?? []) {
      nodes.push(c);
      heap.push([c.total, nodes.length - 1]);
    }
  };
  offer(start);
  for (let left = Math.max(budget, 1); left > 0 && heap.size; left--) {
    const c = nodes[heap.pop()[1]];
    kept.add(c);
    offer(c);
  }
  const emit = (n) => {
    const children = [];
    let otherTotal = 0;
    let merged = 0;
    for (const c of n.children ?? []) {
      if (kept.has(c)) children.push(emit(c));
      else {
        otherTotal += c.total;
        merged++;
      }
    }
    if (merged) children.push({ name: 'other', total: otherTotal, self_count: otherTotal, children: [], merged });
    return { name: n.name, total: n.total, self_count: n.self_count, children };
  };
  return emit(root);
}

const root = syntheticTree(STACKS);
const profile = {
  id: ID, host: 'bench', service: 'bench', target: { by: 'process_name', value: 'bench' }, mode: 'cpu',
  duration_ms: 60000, frequency_hz: 99, status: 'finished', status_reason: null, requested_by: 'bench',
  event: 'cpu-clock', agent_id: 'bench', created_at: new Date().toISOString(), updated_at: new Date().toISOString(),
  started_at: new Date().toISOString(), finished_at: new Date().toISOString(),
};
const responses = {
  [`/api/v1/profiles/${ID}`]: profile,
  [`/api/v1/profiles/${ID}/flamegraph`]: { profile_id: ID, event: 'cpu-clock', snapshots: 6, samples: root.total, root },
  [`/api/v1/profiles/${ID}/top`]: { profile_id: ID, event: 'cpu-clock', samples: root.total, functions: [] },
  [`/api/v1/profiles/${ID}/issues`]: { profile_id: ID, issues: [] },
  [`/api/v1/profiles/${ID}/timeline`]: { profile_id: ID, windows: [] },
  '/api/v1/profiles': { profiles: [profile], next_cursor: null },
};
const bodies = Object.fromEntries(Object.entries(responses).map(([k, v]) => [k, JSON.stringify(v)]));
const FLAME_PATH = `/api/v1/profiles/${ID}/flamegraph`;
const flameBodies = new Map();
/** The flame graph's body for a query, cut as the api-server cuts it. */
function flameBody(params) {
  const key = FULL_TREE ? '' : `${params.get('max_nodes')};${params.get('focus')}`;
  if (!flameBodies.has(key)) {
    const focus = params.get('focus') ? params.get('focus').split(';') : [];
    const cut = FULL_TREE ? root : cutTree(root, Number(params.get('max_nodes') ?? DEFAULT_MAX_NODES), focus);
    flameBodies.set(
      key,
      cut ? JSON.stringify({ ...responses[FLAME_PATH], root: cut }) : null,
    );
  }
  return flameBodies.get(key);
}
// The first view's tree is cut before the clock starts: the page load
// measures the UI, not this script.
flameBody(new URLSearchParams({ max_nodes: String(DEFAULT_MAX_NODES) }));
const requested = [];
const TYPES = { '.html': 'text/html', '.js': 'text/javascript', '.css': 'text/css' };

if (!existsSync(join(DIST, 'index.html'))) {
  console.error('web/dist is missing: run npm run build first');
  process.exit(1);
}
const server = createServer((req, res) => {
  const url = new URL(req.url, 'http://x');
  const path = url.pathname;
  if (path.startsWith('/api/')) {
    const body = path === FLAME_PATH ? flameBody(url.searchParams) : bodies[path];
    if (path === FLAME_PATH) requested.push({ query: url.search, bytes: body?.length ?? 0 });
    res.writeHead(body ? 200 : 404, { 'content-type': 'application/json' });
    return res.end(body ?? '{"error":{"code":"not_found","message":"no such route"}}');
  }
  const file = join(DIST, normalize(path === '/' ? 'index.html' : path).replace(/^(\.\.[/\\])+/, ''));
  if (!existsSync(file)) return res.writeHead(404).end();
  res.writeHead(200, { 'content-type': TYPES[extname(file)] ?? 'application/octet-stream' });
  res.end(readFileSync(file));
});
await new Promise((r) => server.listen(0, '127.0.0.1', r));
const base = `http://127.0.0.1:${server.address().port}`;

const browser = await chromium.launch({ executablePath: '/usr/bin/chromium', args: ['--no-sandbox'], headless: true });
try {
  const page = await (await browser.newContext({ viewport: { width: 1400, height: 1000 } })).newPage();
  // Payload {"sub":"bench","role":"viewer"}: the UI only decodes it.
  const token = `e30.${Buffer.from('{"sub":"bench","role":"viewer","exp":9999999999}').toString('base64url')}.x`;
  await page.goto(`${base}/#/signin`);
  await page.evaluate((t) => sessionStorage.setItem('odp.token', t), token);
  const start = Date.now();
  await page.goto(`${base}/#/profiles/${ID}`);
  await page.waitForFunction(() => document.querySelector('canvas.flame')?.odpFlame?.visibleFrames().length > 0, null, { timeout: 120_000 });
  const firstPaintMs = Date.now() - start;
  const firstRequest = requested[0];
  const info = await page.$eval('canvas.flame', (c) => ({
    nodes: c.odpFlame.tree?.count ?? null,
    others: c.odpFlame.tree ? c.odpFlame.tree.merged?.filter((m) => m > 0).length ?? 0 : null,
    drawn: c.odpFlame.visibleFrames().length,
    renderMs: Number(c.dataset.renderMs),
  }));
  // Zoom: click frames at depth 2 and back, measuring each redraw in-page.
  const zooms = [];
  for (let k = 0; k < 10; k++) {
    const ms = await page.$eval('canvas.flame', (c, k) => {
      const g = c.odpFlame;
      const frames = g.visibleFrames().filter((f) => f.depth === 2);
      const f = frames[k % frames.length];
      const rect = c.getBoundingClientRect();
      const t0 = performance.now();
      c.dispatchEvent(new MouseEvent('click', { clientX: rect.left + f.x + f.w / 2, clientY: rect.top + f.depth * 18 + 9, bubbles: true }));
      const zoomed = performance.now() - t0;
      g.zoomTo(0);
      return zoomed;
    }, k);
    zooms.push(ms);
  }
  zooms.sort((a, b) => a - b);
  // The zooms above fetched their focused trees in the background (and
  // dropped them: each was reset at once); let those finish.
  await page.waitForTimeout(1000);
  // Opening cut nodes: click a depth-3 frame whose subtree the budget cut,
  // wait until the focused tree is drawn (request, parse, layout, draw);
  // then Reset (cached, no request) and the same click again (cached).
  const opens = [];
  for (let k = 0; k < (FULL_TREE ? 0 : 5); k++) {
    opens.push(
      await page.$eval('canvas.flame', (c, k) => new Promise((resolve) => {
        const g = c.odpFlame;
        const frames = g.visibleFrames().filter((f) => f.depth === 3 && !f.merged);
        const f = frames[k % frames.length];
        const rect = c.getBoundingClientRect();
        const click = () => c.dispatchEvent(new MouseEvent('click', { clientX: rect.left + f.x + f.w / 2, clientY: rect.top + f.depth * 18 + 9, bubbles: true }));
        const t0 = performance.now();
        const observer = new MutationObserver(() => {
          if (!c.dataset.focus) return;
          observer.disconnect();
          const opened = performance.now() - t0;
          const nodes = g.tree.count;
          const t1 = performance.now();
          g.resetZoom();
          const back = performance.now() - t1;
          const t2 = performance.now();
          click();
          const reopened = performance.now() - t2;
          const focus = c.dataset.focus;
          g.resetZoom();
          resolve({ opened, back, reopened, focus, nodes });
        });
        observer.observe(c, { attributes: true, attributeFilter: ['data-focus'] });
        click();
      }), k),
    );
  }
  const median = (xs) => {
    const sorted = xs.slice().sort((a, b) => a - b);
    return sorted.length ? Number(sorted[sorted.length >> 1].toFixed(1)) : null;
  };
  console.log(JSON.stringify({
    stacks: STACKS,
    full_tree: FULL_TREE,
    first_request: firstRequest?.query,
    json_bytes: firstRequest?.bytes,
    nodes: info.nodes,
    other_nodes: info.others,
    first_paint_ms: firstPaintMs,
    first_layout_and_draw_ms: info.renderMs,
    frames_drawn: info.drawn,
    zoom_median_ms: Number(zooms[zooms.length >> 1].toFixed(1)),
    zoom_max_ms: Number(zooms[zooms.length - 1].toFixed(1)),
    open_cut_median_ms: median(opens.map((o) => o.opened)),
    open_cut_max_ms: opens.length ? Number(Math.max(...opens.map((o) => o.opened)).toFixed(1)) : null,
    focused_nodes: opens[0]?.nodes ?? null,
    focus_example: opens[0]?.focus ?? null,
    reset_cached_median_ms: median(opens.map((o) => o.back)),
    reopen_cached_median_ms: median(opens.map((o) => o.reopened)),
    flame_requests: requested.length,
  }));
} finally {
  await browser.close();
  server.close();
}
