// One profile: interactive flame graph with search, filters, downloads
// and the sandwich view, the hot-leaf table, detected issues and the
// timeline.

import { flameTreeQuery, get, LIVE_STATUSES, type Issue, type ProfileView, type Schemas } from '../api';
import { FlameGraph } from '../flame/graph';
import { flatten } from '../flame/layout';
import { h, notice, when } from '../format';
import { href, type Route, type ViewScope } from '../router';
import { durationText, isImported, rateText, scheduleIdOf, sourceText, targetText } from '../profilefmt';
import { downloadBar } from '../widgets/downloads';
import { stackFilterForm, stackFilters } from '../widgets/stackfilters';
import { FlamePanel } from '../widgets/flamepanel';
import { hotLeafTable } from '../widgets/hotleaves';
import { coveragePanel, runtimePanel, timelinePanel } from './panels';
import { issuesPanel } from '../widgets/issues';
import { frameMenu } from '../widgets/framemenu';
import { requesterCell, scheduleNames } from '../widgets/requester';
import { labelChips, stopButton } from './profiles';
import { totalText } from '../units';
import { runIdOf } from '../runfmt';

export async function profileView(id: string, route: Route, scope: ViewScope): Promise<HTMLElement> {
  const profile = await get<ProfileView>(`/api/v1/profiles/${encodeURIComponent(id)}`);
  const filters = stackFilters(route);
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

  const menuItems = frameMenu(issues);
  const graph = new FlameGraph({
    kind: 'samples',
    samples: flame.samples,
    unit: flame,
    menuItems,
    loadFocus: async (focus) => flatten((await flameTree(focus)).root),
  });
  scope.onLeave(() => graph.destroy());
  const panel = new FlamePanel({
    graph,
    query: route.query,
    scope,
    sandwich: { samples: flame.samples, unit: flame, menuItems },
    tools: [downloadBar(flamePath, filters, `profile-${id}`)],
  });
  const scheduled = scheduleIdOf(profile.requested_by);
  const names = scheduled ? await scheduleNames([scheduled]) : new Map<string, string>();

  const filterForm = stackFilterForm(`profiles/${id}`, route, filters);

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

  const imported = isImported(profile);
  const runId = runIdOf(profile as ProfileView & Record<string, unknown>);
  const page = h(
    'section',
    { class: 'profile', 'data-profile': id },
    h(
      'div',
      { class: 'profile-head' },
      h('h2', {}, `${profile.service} on ${profile.host}`),
      h(
        'p',
        { class: 'muted', id: 'profile-summary' },
        `${targetText(profile.target)} · `,
        h('span', { class: `status ${profile.status}`, id: 'profile-status' }, profile.status),
        ` · ${totalText(flame.samples, flame)} in ${flame.snapshots} ${flame.snapshots === 1 ? 'window' : 'windows'} · `,
        h('span', { id: 'profile-duration' }, durationText(profile)),
        ' · ',
        h('span', { id: 'profile-rate' }, rateText(profile)),
        ` · ${imported ? 'recorded' : 'started'} ${when(profile.started_at)} · id ${id} · requested by `,
        requesterCell(profile.requested_by, names),
        runId ? ' · member of ' : '',
        runId ? h('a', { href: `#/runs/${runId}`, id: 'profile-run', class: 'run-link' }, `run ${runId.slice(0, 8)}`) : '',
        profile.labels && Object.keys(profile.labels).length ? ' · ' : '',
        labelChips(profile.labels),
      ),
      imported ? h('p', { class: 'source', id: 'profile-source' }, `Source: ${sourceText(profile)}.`) : null,
      coveragePanel(profile),
      stopButton(profile, () => window.dispatchEvent(new HashChangeEvent('hashchange'))),
      h('a', { href: href('compare', { baseline: id }) }, 'Compare with…'),
      runtimePanel(profile),
    ),
    filterForm,
    flame.samples ? panel.root : notice('info', live ? 'No samples yet; the profile is still running.' : 'No samples stored for this profile.'),
    h(
      'div',
      { class: 'panels' },
      h(
        'div',
        {},
        h('h3', {}, 'Hot leaves (self time)'),
        hotLeafTable(top.functions, (fn) => panel.select(fn), {
          picked: panel.selected,
          onSandwich: (fn) => panel.openSandwich(fn),
        }),
      ),
      h('div', {}, h('h3', {}, 'Detected issues'), issuesPanel(issues), h('h3', {}, 'Timeline'), timeline),
    ),
  );
  panel.show(flatten(flame.root));
  return page;
}
