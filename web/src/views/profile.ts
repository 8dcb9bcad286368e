// One profile: interactive flame graph with search and filters, the
// hot-leaf table, detected issues and the timeline.

import { flameTreeQuery, get, LIVE_STATUSES, type Issue, type ProfileView, type Schemas } from '../api';
import { getToken } from '../auth';
import { FlameGraph, type MenuItem } from '../flame/graph';
import { flatten } from '../flame/layout';
import { h, notice, when } from '../format';
import { href, type Route, type ViewScope } from '../router';
import { codeSearchUrl } from '../settings';
import { hotLeafTable, issuesPanel, runtimePanel, timelinePanel } from './panels';
import { labelChips, stopButton, targetText } from './profiles';
import { searchBox } from './search';
import { totalText } from '../units';

const FILTERS = ['thread', 'include', 'exclude'] as const;

/** The server's SVG rendering, fetched with the token (a plain link would
 *  not carry it). */
async function downloadSvg(id: string): Promise<void> {
  const response = await fetch(`/api/v1/profiles/${id}/flamegraph?format=svg`, {
    headers: { authorization: `Bearer ${getToken()}` },
  });
  if (!response.ok) return alert(`SVG download failed: ${response.status}`);
  const url = URL.createObjectURL(await response.blob());
  const a = h('a', { href: url, download: `flame-${id}.svg` });
  a.click();
  setTimeout(() => URL.revokeObjectURL(url), 10_000);
}

/** Menu entries of a frame: its source, and the known issue it is part of. */
export function frameMenu(issues: Issue[]): (name: string) => MenuItem[] {
  return (name) => {
    const items: MenuItem[] = [{ label: 'View source', href: codeSearchUrl(name) }];
    for (const issue of issues) {
      if (issue.stacks.some((s) => s.frames.includes(name)) && issue.link)
        items.push({ label: `Known issue: ${issue.title}`, href: issue.link });
    }
    return items;
  };
}

export async function profileView(id: string, route: Route, scope: ViewScope): Promise<HTMLElement> {
  const profile = await get<ProfileView>(`/api/v1/profiles/${encodeURIComponent(id)}`);
  const filters: Record<string, string> = {};
  for (const f of FILTERS) filters[f] = route.query.get(f) ?? '';
  const flamePath = `/api/v1/profiles/${id}/flamegraph`;
  const flameTree = (focus: string[] = []) =>
    get<Schemas['FlameGraphJson']>(flamePath, flameTreeQuery({ format: 'json', ...filters }, focus));
  const [flame, top, issues] = await Promise.all([
    flameTree(),
    get<Schemas['TopResponse']>(`/api/v1/profiles/${id}/top`, { limit: 50, ...filters }),
    get<Schemas['IssuesResponse']>(`/api/v1/profiles/${id}/issues`).then(
      (r) => r.issues,
      () => [] as Issue[],
    ),
  ]);

  const graph = new FlameGraph({
    kind: 'samples',
    samples: flame.samples,
    unit: flame,
    menuItems: frameMenu(issues),
    loadFocus: async (focus) => flatten((await flameTree(focus)).root),
  });
  scope.onLeave(() => graph.destroy());

  const filterForm = h(
    'form',
    {
      class: 'filters',
      onsubmit: (e: Event) => {
        e.preventDefault();
        const d = new FormData(filterForm);
        const q: Record<string, string | undefined> = {};
        for (const f of FILTERS) q[f] = String(d.get(f) ?? '').trim() || undefined;
        location.hash = href(`profiles/${id}`, q);
      },
    },
    ...FILTERS.map((f) =>
      h('label', {}, `${f} `, h('input', { name: f, id: `filter-${f}`, value: filters[f], placeholder: 'regex' })),
    ),
    h('button', { type: 'submit' }, 'Apply filters'),
  );

  const timeline = h('div', {}, h('p', { class: 'muted' }, 'Loading timeline…'));
  void timelinePanel(id).then((el) => timeline.replaceChildren(el));

  const live = LIVE_STATUSES.includes(profile.status);
  if (live) {
    // Re-render once the profile ends so the graph shows every window.
    scope.every(3000, async () => {
      const p = await get<ProfileView>(`/api/v1/profiles/${id}`);
      if (p.status !== profile.status) window.dispatchEvent(new HashChangeEvent('hashchange'));
    });
  }

  const page = h(
    'section',
    { class: 'profile', 'data-profile': id },
    h(
      'div',
      { class: 'profile-head' },
      h('h2', {}, `${profile.service} on ${profile.host}`),
      h(
        'p',
        { class: 'muted' },
        `${targetText(profile.target)} · `,
        h('span', { class: `status ${profile.status}`, id: 'profile-status' }, profile.status),
        ` · ${totalText(flame.samples, flame)} in ${flame.snapshots} windows · ${profile.frequency_hz} Hz · started ${when(profile.started_at)} · id ${id}`,
        profile.labels && Object.keys(profile.labels).length ? ' · ' : '',
        labelChips(profile.labels),
      ),
      stopButton(profile, () => window.dispatchEvent(new HashChangeEvent('hashchange'))),
      h('a', { href: href('compare', { baseline: id }) }, 'Compare with…'),
      ' ',
      h('button', { onclick: () => void downloadSvg(id) }, 'Download SVG'),
      runtimePanel(profile),
    ),
    filterForm,
    searchBox(graph),
    flame.samples ? graph.root : notice('info', live ? 'No samples yet; the profile is still running.' : 'No samples stored for this profile.'),
    h(
      'div',
      { class: 'panels' },
      h('div', {}, h('h3', {}, 'Hot leaves (self time)'), hotLeafTable(top.functions, (fn) => graph.select(fn))),
      h('div', {}, h('h3', {}, 'Detected issues'), issuesPanel(issues), h('h3', {}, 'Timeline'), timeline),
    ),
  );
  graph.setTree(flatten(flame.root));
  return page;
}
