// One run: its state (and each host without a profile, with why), the
// hosts chosen of the eligible and per stratum, its progress refreshing
// while live (time, members, ε reached against the stop rule's) with a
// Stop button, the merged flame graph of every member (search, sandwich,
// downloads), the top functions with their errors, the per-host table
// with the outliers marked, and each member's profile.

import { flameTreeQuery, get, LIVE_STATUSES, post, type Schemas } from '../api';
import { mayProfile } from '../auth';
import { FlameGraph } from '../flame/graph';
import { flatten } from '../flame/layout';
import { h, notice, when } from '../format';
import { href, type Route, type ViewScope } from '../router';
import { scheduleIdOf } from '../profilefmt';
import { isLiveRun, type Run, type RunPrecision } from '../runfmt';
import { totalText } from '../units';
import { downloadBar } from '../widgets/downloads';
import { stackFilterForm, stackFilters } from '../widgets/stackfilters';
import { FlamePanel } from '../widgets/flamepanel';
import { hotLeafTable } from '../widgets/hotleaves';
import { frameMenu } from '../widgets/framemenu';
import { requesterCell, scheduleNames } from '../widgets/requester';
import { issuesPanel } from '../widgets/issues';
import { hostsTable, membersTable, progressPanel, runStatusChip, selectionSummary, strataTable } from './runparts';

/** A read that may fail on its own: the error in place of its panel. */
async function settle<T>(p: Promise<T>): Promise<T | Error> {
  return p.catch((e: Error) => e);
}

/** Members still starting or profiling (a stopped run's take a moment). */
const membersLive = (run: Run) => run.members.some((m) => LIVE_STATUSES.includes(m.status));

/** Ended in the last few seconds: its reason and members may still be
 *  being written. */
const justEnded = (run: Run) => !!run.ended_at && Date.now() - Date.parse(run.ended_at) < 10_000;

const rerender = () => window.dispatchEvent(new HashChangeEvent('hashchange'));

function stopButton(run: Run, after: () => void): HTMLElement | null {
  if (!isLiveRun(run.status) || !mayProfile(run.service)) return null;
  return h(
    'button',
    {
      class: 'stop',
      id: 'run-stop',
      onclick: async (e: Event) => {
        const b = e.currentTarget as HTMLButtonElement;
        b.disabled = true;
        b.textContent = 'Stopping…';
        try {
          await post(`/api/v1/runs/${run.id}/stop`);
        } catch (err) {
          b.replaceWith(notice('error', `Stop failed: ${(err as Error).message}`));
        }
        after();
      },
    },
    'Stop the run',
  );
}

/** What the rules found in the run's merged samples, each with the hosts
 *  where it is highest; until the run is judged, says when it will be. */
function runIssues(found: Schemas['RunIssuesResponse']): HTMLElement {
  if (!found.evaluated_at) return notice('info', 'The detection rules judge the run once it has ended.');
  const hostsLine = (_: unknown, index: number) => {
    const hosts = found.issues[index].hosts;
    if (!hosts.length) return null;
    return h(
      'p',
      { class: 'issue-hosts' },
      'Highest on ',
      ...hosts.flatMap((host, n) => [
        n ? ', ' : '',
        h('a', { href: href(`profiles/${host.profile_id}`), 'data-host': host.host }, host.host),
        ` ${host.share.toFixed(1)}%`,
      ]),
    );
  };
  return issuesPanel(found.issues, 'No known issue detected in this run.', hostsLine);
}

export async function runView(id: string, route: Route, scope: ViewScope): Promise<HTMLElement> {
  const base = `/api/v1/runs/${encodeURIComponent(id)}`;
  const run = await get<Run>(base);
  const filters = stackFilters(route);
  const flamePath = `${base}/flamegraph`;
  const flameTree = (focus: string[] = []) =>
    get<Schemas['RunFlameGraphJson']>(flamePath, flameTreeQuery({ format: 'json', ...filters }, focus));
  const [flame, top, hosts, precision, issues] = await Promise.all([
    settle(flameTree()),
    settle(get<Schemas['RunTopResponse']>(`${base}/top`, { limit: 50, ...filters })),
    settle(get<Schemas['RunHostsResponse']>(`${base}/hosts`)),
    settle(get<RunPrecision>(`${base}/precision`)),
    settle(get<Schemas['RunIssuesResponse']>(`${base}/issues`)),
  ]);
  const scheduled = scheduleIdOf(run.requested_by);
  const names = scheduled ? await scheduleNames([scheduled]) : new Map<string, string>();

  // The parts a live run refreshes.
  const chip = h('span', { id: 'run-status-host' }, runStatusChip(run, 'run-status'));
  const reason = h('div', { id: 'run-reason' });
  const selection = h('div', {});
  const progress = h('div', {});
  const members = h('div', {});
  const actions = h('div', { class: 'run-actions' });
  let shown = run;
  const draw = (r: Run, p: RunPrecision | null) => {
    shown = r;
    chip.replaceChildren(runStatusChip(r, 'run-status'));
    reason.replaceChildren(
      !r.status_reason ? '' : r.status === 'partial' ? notice('error', r.status_reason) : h('p', { class: 'muted' }, `${r.status}: ${r.status_reason}`),
    );
    selection.replaceChildren(selectionSummary(r), strataTable(r.selection, r.id) ?? '');
    progress.replaceChildren(progressPanel(r, p));
    members.replaceChildren(membersTable(r));
    actions.replaceChildren(stopButton(r, () => void refresh()) ?? '');
  };
  // A filtered graph may stay empty: only an unfiltered one waits for samples.
  const sampled = flame instanceof Error || flame.samples > 0 || Object.values(filters).some(Boolean);
  const refresh = async () => {
    if (!isLiveRun(shown.status) && !membersLive(shown) && !justEnded(shown)) return;
    const [r, p] = await Promise.all([get<Run>(base), settle(get<RunPrecision>(`${base}/precision`))]);
    if (!scope.active) return;
    // Ended, or its first samples came: read everything again, so the
    // graph has every member's windows.
    if (isLiveRun(shown.status) && !isLiveRun(r.status)) return rerender();
    if (!sampled && !(p instanceof Error) && p.decision.samples_used > 0) return rerender();
    draw(r, p instanceof Error ? null : p);
  };
  draw(run, precision instanceof Error ? null : precision);
  // While live, and after a stop until every member has ended.
  scope.every(2000, () => void refresh().catch(() => undefined));

  const filterForm = stackFilterForm(`runs/${id}`, route, filters);

  const graphPart: Array<HTMLElement | null> = [];
  let panel: FlamePanel | null = null;
  const live = isLiveRun(run.status);
  if (flame instanceof Error) graphPart.push(notice('error', `Flame graph: ${flame.message}`));
  else {
    const menuItems = frameMenu([]);
    const graph = new FlameGraph({
      kind: 'samples',
      samples: flame.samples,
      unit: flame,
      menuItems,
      loadFocus: async (focus) => flatten((await flameTree(focus)).root),
    });
    scope.onLeave(() => graph.destroy());
    panel = new FlamePanel({
      graph,
      query: route.query,
      scope,
      sandwich: { samples: flame.samples, unit: flame, menuItems },
      tools: [downloadBar(flamePath, filters, `run-${id}`)],
    });
    graphPart.push(
      h(
        'p',
        { class: 'muted', id: 'run-graph-summary' },
        `${totalText(flame.samples, flame)} merged from ${flame.profiles} member ${flame.profiles === 1 ? 'profile' : 'profiles'} on ${flame.hosts.length} ${flame.hosts.length === 1 ? 'host' : 'hosts'}`,
        live ? ' so far · ' : '',
        live ? h('button', { type: 'button', id: 'run-graph-refresh', onclick: rerender }, 'Refresh the graph') : '',
      ),
      flame.samples ? panel.root : notice('info', live ? 'No samples yet: the members are starting.' : 'No samples were stored for this run.'),
    );
  }

  const topPart =
    top instanceof Error
      ? notice('error', `Top functions: ${top.message}`)
      : top.functions.length
        ? hotLeafTable(top.functions, (fn) => panel?.select(fn), {
            id: 'run-top',
            picked: panel?.selected,
            onSandwich: panel ? (fn) => panel!.openSandwich(fn) : undefined,
          })
        : notice('info', 'No samples yet.');
  const hostsPart = hosts instanceof Error ? notice('error', `Hosts: ${hosts.message}`) : hostsTable(hosts);
  const issuesPart = issues instanceof Error ? notice('error', `Issues: ${issues.message}`) : runIssues(issues);

  const page = h(
    'section',
    { class: 'run', 'data-run': id },
    h(
      'div',
      { class: 'profile-head' },
      h('h2', {}, `Run of `, h('a', { href: href('runs', { service: run.service }) }, run.service), ' ', chip),
      h(
        'p',
        { class: 'muted', id: 'run-summary' },
        `id ${id} · requested by `,
        requesterCell(run.requested_by, names),
        ` · created ${when(run.created_at)}`,
        run.ended_at ? ` · ended ${when(run.ended_at)}` : '',
        ` · each member up to ${run.duration_secs} s · `,
        h('a', { href: href('runs', { start: run.service }) }, 'Run again…'),
      ),
      reason,
      selection,
      h('div', { class: 'run-live' }, progress, actions),
    ),
    filterForm,
    ...graphPart,
    h('div', { class: 'panels' }, h('div', {}, h('h3', {}, 'Top functions (self time, ± one standard error)'), topPart), h('div', {}, h('h3', {}, 'Members'), members)),
    h('h3', {}, 'Detected issues'),
    issuesPart,
    h('h3', {}, 'Hosts'),
    hostsPart,
  );
  if (panel && !(flame instanceof Error)) panel.show(flatten(flame.root));
  return page;
}
