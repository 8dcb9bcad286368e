// ODP web UI: sign-in, navigation and the hash router.

import './style.css';
import { claims, clearToken, decodeClaims, getToken, hasRole, setToken } from './auth';
import { h, notice } from './format';
import { parseHash, ViewScope, type Route } from './router';
import { codeSearchTemplate, DEFAULT_CODE_SEARCH, setCodeSearchTemplate, setSourceUrlTemplate, SOURCE_URL_EXAMPLE, sourceUrlTemplate } from './settings';
import { profilesView } from './profiles/profiles';
import { profileView } from './profiles/profile';
import { compareView } from './compare/compare';
import { aggregateView } from './aggregate/aggregate';
import { hostsView } from './hosts/hosts';
import { rulesView } from './rules/rules';
import { schedulesView } from './schedules/schedules';
import { channelsView } from './channels/channels';
import { channelView } from './channels/channel';
import { servicesView } from './services/services';
import { runsView } from './runs/runs';
import { runView } from './runs/run';

type View = (route: Route, scope: ViewScope) => Promise<HTMLElement> | HTMLElement;

const app = document.getElementById('app')!;
let scope = new ViewScope();

function signInView(): HTMLElement {
  const input = h('textarea', {
    id: 'token',
    rows: 4,
    placeholder: 'Paste a bearer token (odp-api-server token ... or .odp/services.json)',
    'aria-label': 'bearer token',
  });
  const status = h('div', {});
  const form = h(
    'form',
    {
      class: 'signin',
      onsubmit: async (e: Event) => {
        e.preventDefault();
        const token = input.value.trim();
        if (!decodeClaims(token)) {
          status.replaceChildren(notice('error', 'That is not a JWT (three dot-separated parts).'));
          return;
        }
        // A direct call: a refused token must stay on this page with the
        // server's reason, not go through api()'s sign-in redirect.
        const response = await fetch('/api/v1/profiles?limit=1', {
          headers: { authorization: `Bearer ${token}` },
        }).catch((e: Error) => e);
        if (response instanceof Response && response.ok) {
          setToken(token);
          location.hash = '#/profiles';
          return;
        }
        const reason =
          response instanceof Response
            ? ((await response.json().catch(() => null))?.error?.message ?? `HTTP ${response.status}`)
            : response.message;
        status.replaceChildren(notice('error', `Sign-in failed: ${reason}`));
      },
    },
    h('h2', {}, 'Sign in'),
    h('p', {}, 'The token is kept in this tab only (session storage) and sent as a bearer token.'),
    input,
    h('button', { type: 'submit', id: 'signin' }, 'Sign in'),
    status,
  );
  return form;
}

function settingsView(): HTMLElement {
  const input = h('input', { id: 'code-search', size: 60, value: codeSearchTemplate() });
  const source = h('input', { id: 'source-url', size: 60, value: sourceUrlTemplate(), placeholder: SOURCE_URL_EXAMPLE });
  const saved = h('span', { class: 'muted', id: 'settings-saved' });
  return h(
    'section',
    {},
    h('h2', {}, 'Settings'),
    h('p', {}, h('label', {}, 'Source URL template (', h('code', {}, '{file}'), ' and ', h('code', {}, '{line}'), ' are replaced): ', source)),
    h(
      'p',
      { class: 'muted' },
      `"View source" of a frame whose profile has its file and line (Python from py-spy, imports with lines) opens this link, e.g. ${SOURCE_URL_EXAMPLE}; without a template it copies file:line.`,
    ),
    h('p', {}, h('label', {}, 'Code-search URL template (', h('code', {}, '{function}'), ' is replaced): ', input)),
    h('p', { class: 'muted' }, `For frames without a file. Default: ${DEFAULT_CODE_SEARCH}`),
    h(
      'button',
      {
        id: 'settings-save',
        onclick: () => {
          setCodeSearchTemplate(input.value);
          input.value = codeSearchTemplate();
          setSourceUrlTemplate(source.value);
          source.value = sourceUrlTemplate();
          saved.textContent = ' saved';
        },
      },
      'Save',
    ),
    saved,
  );
}

const views: Record<string, View> = {
  profiles: (route, s) => (route.path[1] ? profileView(route.path[1], route, s) : profilesView(route, s)),
  compare: compareView,
  aggregate: aggregateView,
  services: servicesView,
  runs: (route, s) => (route.path[1] ? runView(route.path[1], route, s) : runsView(route, s)),
  hosts: hostsView,
  rules: rulesView,
  schedules: schedulesView,
  channels: (route, s) => (route.path[1] ? channelView(route.path[1], route, s) : channelsView(route, s)),
  settings: settingsView,
};

function nav(active: string): HTMLElement {
  const c = claims();
  const link = (name: string, label: string) =>
    h('a', { href: `#/${name}`, class: active === name ? 'active' : '', 'data-nav': name }, label);
  return h(
    'header',
    {},
    h('a', { class: 'brand', href: '#/profiles' }, 'ODP'),
    link('profiles', 'Profiles'),
    link('compare', 'Compare'),
    link('aggregate', 'Service aggregate'),
    link('services', 'Services'),
    link('runs', 'Runs'),
    link('hosts', 'Hosts'),
    link('rules', 'Rules'),
    link('schedules', 'Schedules'),
    hasRole('admin') && link('channels', 'Channels'),
    link('settings', 'Settings'),
    h('span', { class: 'spacer' }),
    c && h('span', { class: 'who', id: 'who' }, `${c.sub} (${c.role})`),
    h(
      'button',
      {
        id: 'signout',
        onclick: () => {
          clearToken();
          location.hash = '#/signin';
        },
      },
      'Sign out',
    ),
  );
}

async function render(): Promise<void> {
  scope.leave();
  scope = new ViewScope();
  const current = scope;
  const route = parseHash(location.hash);
  const name = route.path[0] ?? 'profiles';
  if (!getToken() || name === 'signin') {
    app.replaceChildren(h('main', {}, signInView()));
    return;
  }
  const view = views[name];
  const main = h('main', {}, h('p', { class: 'muted' }, 'Loading…'));
  app.replaceChildren(nav(name), main);
  if (!view) {
    main.replaceChildren(notice('error', `No page called "${name}".`));
    return;
  }
  try {
    const el = await view(route, current);
    if (current.active) main.replaceChildren(el);
  } catch (err) {
    if (current.active) main.replaceChildren(notice('error', (err as Error).message));
  }
  document.body.dataset.role = hasRole('admin') ? 'admin' : hasRole('profiler') ? 'profiler' : 'viewer';
}

window.addEventListener('hashchange', () => void render());
void render();
