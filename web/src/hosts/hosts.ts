// Hosts: agents from heartbeats; admins may undeploy them. (Detection
// rules are in rules/rules.ts.)

import { get, post, type Schemas } from '../api';
import { hasRole } from '../auth';
import { h, notice, when } from '../format';
import { href } from '../router';

/** A host's clock offset, and whether its times are corrected by it. */
function clock(a: Schemas['AgentView']): string {
  const ms = a.clock_offset_ms;
  if (ms === undefined || ms === null) return '-';
  if (!a.clock_corrected) return 'in step';
  return `${(Math.abs(ms) / 1000).toFixed(1)} s ${ms < 0 ? 'behind' : 'ahead'} (corrected)`;
}

export async function hostsView(): Promise<HTMLElement> {
  const { agents } = await get<Schemas['HostsResponse']>('/api/v1/hosts');
  const admin = hasRole('admin');
  const profiler = hasRole('profiler');
  const message = h('div', {});
  const undeploy = (host: string, mode: 'now' | 'drain') =>
    h(
      'button',
      {
        class: 'undeploy',
        'data-mode': mode,
        onclick: async () => {
          if (!confirm(`Undeploy the agent on ${host} (${mode})?`)) return;
          try {
            await post(`/api/v1/hosts/${encodeURIComponent(host)}/undeploy`, undefined, { mode });
            message.replaceChildren(notice('info', `Undeploy (${mode}) sent to ${host}.`));
          } catch (err) {
            message.replaceChildren(notice('error', (err as Error).message));
          }
        },
      },
      `Undeploy (${mode})`,
    );
  return h(
    'section',
    {},
    h('h2', {}, 'Hosts'),
    message,
    agents.length
      ? h(
          'table',
          { class: 'grid', id: 'hosts-table' },
          h(
            'thead',
            {},
            h('tr', {}, ...['host', 'agent', 'version', 'plugins', 'running', 'last seen', 'clock', 'live', ''].map((t) => h('th', {}, t))),
          ),
          h(
            'tbody',
            {},
            ...agents.map((a) =>
              h(
                'tr',
                { 'data-host': a.host },
                h('td', {}, a.host),
                h('td', {}, a.agent_id),
                h('td', {}, a.version),
                h('td', {}, a.plugins.join(', ')),
                h('td', {}, ...a.running_profiles.map((id) => h('a', { href: `#/profiles/${id}` }, id.slice(0, 8) + ' '))),
                h('td', {}, when(a.last_seen)),
                h('td', { class: 'clock' }, clock(a)),
                h('td', {}, a.live ? 'yes' : 'no'),
                h(
                  'td',
                  {},
                  profiler && a.live ? h('a', { class: 'profile-host', href: href('profiles', { start: a.host }) }, 'Profile…') : null,
                  ' ',
                  admin && a.live ? undeploy(a.host, 'drain') : null,
                  admin && a.live ? undeploy(a.host, 'now') : null,
                ),
              ),
            ),
          ),
        )
      : notice('info', 'No agent has sent a heartbeat yet.'),
  );
}
