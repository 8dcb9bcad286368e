// Alert channels (admins only, like the API: channels name internal
// systems and people): the list, enabling and disabling, deleting, and the
// create form. One channel with its delivery log is channel.ts.

import { ApiError, del, get, patch, type Schemas } from '../api';
import { hasRole } from '../auth';
import { channelTarget, channelVia, scopeText, type Channel } from '../channelfmt';
import { h, notice, when } from '../format';
import { type Route, type ViewScope } from '../router';
import { createForm } from './channelform';

/** What a non-admin sees instead of a channels page. */
export function adminOnly(): HTMLElement {
  return h(
    'section',
    { class: 'channels' },
    h('h2', {}, 'Alert channels'),
    notice('error', 'Alert channels are for admins only: they name internal systems and people. Sign in with an admin token to manage them.'),
  );
}

/** A load error as people should read it. */
export function loadError(err: unknown): HTMLElement {
  const unavailable = err instanceof ApiError && err.notAvailable;
  return notice(
    unavailable ? 'info' : 'error',
    unavailable ? 'Alert channels are not available on this server.' : (err as Error).message,
  );
}

/** Enables or disables a channel; `done` gets it changed, or the error. */
export function toggleButton(c: Channel, done: (changed: Channel | null, err?: Error) => void): HTMLElement {
  return h(
    'button',
    {
      class: 'channel-toggle',
      'aria-pressed': String(c.enabled),
      onclick: async (e: Event) => {
        (e.currentTarget as HTMLButtonElement).disabled = true;
        try {
          done(await patch<Channel>(`/api/v1/channels/${encodeURIComponent(c.id)}`, { enabled: !c.enabled } satisfies Schemas['UpdateChannelRequest']));
        } catch (err) {
          done(null, err as Error);
        }
      },
    },
    c.enabled ? 'Disable' : 'Enable',
  );
}

/** Deletes a channel once confirmed; `done` gets the error if it failed. */
export function deleteButton(c: Channel, done: (err?: Error) => void): HTMLElement {
  return h(
    'button',
    {
      class: 'channel-delete',
      onclick: async () => {
        if (!confirm(`Delete channel ${c.name}? Its delivery log and pending deliveries go with it.`)) return;
        try {
          await del(`/api/v1/channels/${encodeURIComponent(c.id)}`);
          done();
        } catch (err) {
          done(err as Error);
        }
      },
    },
    'Delete',
  );
}

export async function channelsView(_route: Route, scope: ViewScope): Promise<HTMLElement> {
  if (!hasRole('admin')) return adminOnly();
  const message = h('div', { id: 'channels-message' });
  const list = h('div', {});

  const say = (kind: 'info' | 'error', text: string) => message.replaceChildren(notice(kind, text));

  const row = (c: Channel) =>
    h(
      'tr',
      { 'data-channel': c.name, 'data-id': c.id, 'data-kind': c.kind, 'data-enabled': String(c.enabled) },
      h('td', {}, h('a', { href: `#/channels/${c.id}`, title: 'settings and delivery log' }, c.name)),
      h('td', {}, c.kind),
      h('td', { class: 'target' }, channelTarget(c), h('div', { class: 'muted' }, channelVia(c))),
      h('td', {}, h('code', {}, c.service_pattern), c.service_pattern === '*' ? h('span', { class: 'muted' }, ` ${scopeText('*')}`) : null),
      h(
        'td',
        { class: 'enabled' },
        c.enabled ? 'yes ' : 'no ',
        toggleButton(c, (changed, err) => {
          if (changed) say('info', `${c.name} ${changed.enabled ? 'enabled' : 'disabled'}.`);
          else say('error', `${c.name}: ${err!.message}`);
          void load();
        }),
      ),
      h('td', {}, when(c.created_at)),
      h(
        'td',
        { class: 'channel-actions' },
        h('a', { href: `#/channels/${c.id}` }, 'Deliveries'),
        ' ',
        deleteButton(c, (err) => {
          if (err) say('error', `${c.name}: ${err.message}`);
          else say('info', `${c.name} deleted.`);
          void load();
        }),
      ),
    );

  const load = async (): Promise<boolean> => {
    if (!scope.active) return false;
    let channels: Channel[];
    try {
      channels = (await get<Schemas['ChannelList']>('/api/v1/channels')).channels;
    } catch (err) {
      list.replaceChildren(loadError(err));
      return false;
    }
    list.replaceChildren(
      channels.length
        ? h(
            'table',
            { class: 'grid', id: 'channels-table' },
            h(
              'thead',
              {},
              h('tr', {}, ...['name', 'kind', 'target', 'services', 'enabled', 'created', ''].map((t) => h('th', {}, t))),
            ),
            h('tbody', {}, ...channels.map(row)),
          )
        : notice('info', 'No channels yet: alerts are only listed with their profiles.'),
    );
    return true;
  };

  const page = h(
    'section',
    { class: 'channels' },
    h('h2', {}, 'Alert channels'),
    h(
      'p',
      { class: 'muted' },
      'Where new detections are announced: a webhook (a signed JSON POST) or email through an SMTP relay, for the services a glob matches.',
    ),
    message,
    list,
  );
  if (await load()) page.append(createForm(() => void load()));
  return page;
}
