// Benchmark: time to first paint and to zoom of a 100,000-distinct-stack
// profile in the real UI bundle (web/dist) and Debian's chromium.
//
//   npm run build && npm run bench            (from web/)
//
// Serves web/dist and a synthetic API answering the profile view's calls
// (plain HTTP on 127.0.0.1, no platform needed), signs in with a fake token
// (the UI only decodes it), opens the profile and measures with the page's
// own clock: navigation → flame graph drawn, and click → zoomed redraw.
// Prints one JSON line with the timings (median of the zoom runs).
import { createServer } from 'node:http';
import { readFileSync, existsSync } from 'node:fs';
import { extname, join, normalize } from 'node:path';
import { chromium } from 'playwright-core';

const STACKS = Number(process.env.STACKS ?? 100_000);
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
const TYPES = { '.html': 'text/html', '.js': 'text/javascript', '.css': 'text/css' };

if (!existsSync(join(DIST, 'index.html'))) {
  console.error('web/dist is missing: run npm run build first');
  process.exit(1);
}
const server = createServer((req, res) => {
  const path = new URL(req.url, 'http://x').pathname;
  if (path.startsWith('/api/')) {
    const body = bodies[path];
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
  const info = await page.$eval('canvas.flame', (c) => ({
    nodes: c.odpFlame.tree?.count ?? null,
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
  console.log(JSON.stringify({
    stacks: STACKS,
    nodes: info.nodes,
    first_paint_ms: firstPaintMs,
    first_layout_and_draw_ms: info.renderMs,
    frames_drawn: info.drawn,
    zoom_median_ms: Number(zooms[zooms.length >> 1].toFixed(1)),
    zoom_max_ms: Number(zooms[zooms.length - 1].toFixed(1)),
  }));
} finally {
  await browser.close();
  server.close();
}
