// One alert channel (admins only): what it is, enable/disable, edit and
// delete, and its delivery log: every attempt at sending each alert, with
// the HTTP or SMTP code and the error, newest first. The log refreshes
// itself while a delivery is pending.

import { get } from '../api';
import { hasRole } from '../auth';
import {
  alertShareText,
  channelTarget,
  channelVia,
  codeText,
  DELIVERY_STATUSES,
  logRows,
  scopeText,
  type Channel,
  type DeliveriesPage,
  type Delivery,
  type LogRow,
} from '../channelfmt';
import { h, notice, when } from '../format';
import { href, type Route, type ViewScope } from '../router';
import { editForm } from './channelform';
import { adminOnly, deleteButton, loadError, toggleButton } from './channels';

const PAGE = 50;
const POLL_MS = 5000;

function summary(c: Channel): HTMLElement {
  const item = (term: string, ...value: Array<Node | string | null>) => [h('dt', {}, term), h('dd', {}, ...value)];
  return h(
    'dl',
    { class: 'channel-summary', id: 'channel-summary', 'data-enabled': String(c.enabled) },
    ...item('Kind', c.kind),
    ...item(c.kind === 'email' ? 'To' : 'URL', h('code', {}, channelTarget(c))),
    ...item('Sent', channelVia(c)),
    ...item('Services', h('code', {}, c.service_pattern), c.service_pattern === '*' ? ` (${scopeText('*')})` : null),
    ...item('Enabled', c.enabled ? 'yes' : 'no'),
    ...item('Created', when(c.created_at)),
    ...item('Id', h('code', {}, c.id)),
  );
}

function logRow(kind: Channel['kind'], r: LogRow): HTMLElement {
  const d = r.delivery;
  return h(
    'tr',
    {
      'data-delivery': d.id,
      'data-status': d.status,
      'data-attempt': r.attempt ? r.attempt.attempt : 0,
      class: r.attempt && !r.attempt.success ? 'attempt-failed' : '',
    },
    h('td', {}, when(r.time)),
    // The delivery's cells span its attempts' rows.
    r.span > 0 && h('td', { rowspan: r.span, title: `detected ${when(d.detected_at)}` }, d.rule_title, h('div', { class: 'muted' }, h('code', {}, d.rule_id), ` ${alertShareText(d)}`)),
    r.span > 0 && h('td', { rowspan: r.span }, h('a', { href: `#/profiles/${d.profile_id}` }, d.service), h('div', { class: 'muted' }, `on ${d.host}`)),
    r.span > 0 && h('td', { rowspan: r.span }, h('span', { class: `status ${d.status}` }, d.status)),
    h('td', { class: 'num' }, r.attempt ? `${r.attempt.attempt} of ${d.attempts}` : '—'),
    h('td', { class: 'num' }, r.attempt ? codeText(kind, r.attempt.status_code) : '—'),
    h('td', { class: 'outcome' }, r.outcome),
  );
}

/** The delivery log: a status filter, the table, and older pages. */
function deliveryLog(c: Channel, route: Route, scope: ViewScope): HTMLElement {
  const status = route.query.get('status') ?? '';
  const filter = h(
    'select',
    {
      id: 'deliveries-status',
      'aria-label': 'deliveries in this state',
      onchange: (e: Event) => {
        location.hash = href(`channels/${c.id}`, { status: (e.currentTarget as HTMLSelectElement).value });
      },
    },
    h('option', { value: '' }, 'all'),
    ...DELIVERY_STATUSES.map((s) => h('option', { value: s, selected: s === status }, s)),
  );
  const body = h('div', { id: 'deliveries' });
  const more = h('div', {});
  let loaded: Delivery[] = [];
  let nextBefore: string | null = null;

  const page = (before: string | null) =>
    get<DeliveriesPage>(`/api/v1/channels/${encodeURIComponent(c.id)}/deliveries`, { status, limit: PAGE, before });

  const draw = () => {
    body.replaceChildren(
      loaded.length
        ? h(
            'table',
            { class: 'grid', id: 'deliveries-table' },
            h(
              'thead',
              {},
              h('tr', {}, ...['time', 'alert', 'profile', 'delivery', 'attempt', 'code', 'outcome'].map((t) => h('th', {}, t))),
            ),
            h('tbody', {}, ...logRows(loaded).map((r) => logRow(c.kind, r))),
          )
        : notice(
            'info',
            status ? `No ${status} deliveries.` : 'No deliveries yet: each new alert about a service this channel covers is listed here.',
          ),
    );
    more.replaceChildren(
      nextBefore
        ? h(
            'button',
            {
              id: 'deliveries-older',
              onclick: async (e: Event) => {
                (e.currentTarget as HTMLButtonElement).disabled = true;
                try {
                  const older = await page(nextBefore);
                  loaded = loaded.concat(older.deliveries);
                  nextBefore = older.next_before ?? null;
                  draw();
                } catch (err) {
                  more.replaceChildren(loadError(err));
                }
              },
            },
            'Older deliveries',
          )
        : '',
    );
  };

  /** Loads the newest page again; polling leaves older pages opened alone. */
  const refresh = async (force: boolean) => {
    if (!force && loaded.length > PAGE) return;
    try {
      const first = await page(null);
      if (!scope.active) return;
      loaded = first.deliveries;
      nextBefore = first.next_before ?? null;
      draw();
    } catch (err) {
      body.replaceChildren(loadError(err));
    }
  };
  void refresh(true);
  scope.every(POLL_MS, () => {
    if (loaded.some((d) => d.status === 'pending')) void refresh(false);
  });

  return h(
    'section',
    { class: 'delivery-log' },
    h('h3', {}, 'Delivery log'),
    h(
      'div',
      { class: 'log-bar' },
      h('label', {}, 'Status ', filter),
      h('button', { id: 'deliveries-refresh', onclick: () => void refresh(true) }, 'Refresh'),
      h('span', { class: 'muted' }, 'Newest first; each attempt with its ', c.kind === 'email' ? 'SMTP reply' : 'HTTP status', ' and error.'),
    ),
    body,
    more,
  );
}

export async function channelView(id: string, route: Route, scope: ViewScope): Promise<HTMLElement> {
  if (!hasRole('admin')) return adminOnly();
  let channel: Channel;
  try {
    channel = await get<Channel>(`/api/v1/channels/${encodeURIComponent(id)}`);
  } catch (err) {
    return h('section', { class: 'channel' }, h('a', { href: '#/channels' }, '← Channels'), loadError(err));
  }
  const title = h('h2', {});
  const message = h('div', { id: 'channel-message' });
  const about = h('div', { class: 'channel-about' });

  const draw = () => {
    title.replaceChildren(`Channel ${channel.name} `, h('span', { class: `status ${channel.enabled ? 'enabled' : 'disabled'}` }, channel.enabled ? 'enabled' : 'disabled'));
    about.replaceChildren(
      summary(channel),
      h(
        'div',
        { class: 'channel-actions' },
        toggleButton(channel, (changed, err) => {
          if (changed) {
            channel = changed;
            message.replaceChildren(notice('info', `${channel.name} ${channel.enabled ? 'enabled' : 'disabled'}.`));
          } else message.replaceChildren(notice('error', err!.message));
          draw();
        }),
        ' ',
        deleteButton(channel, (err) => {
          if (err) message.replaceChildren(notice('error', err.message));
          else location.hash = '#/channels';
        }),
      ),
    );
  };
  draw();

  return h(
    'section',
    { class: 'channel' },
    h('a', { href: '#/channels' }, '← Channels'),
    title,
    message,
    about,
    editForm(channel, (changed) => {
      channel = changed;
      draw();
    }),
    deliveryLog(channel, route, scope),
  );
}
