// A service's triggers on the services page, beside its continuous
// profile: each one's condition, state and what it fired, a link to its
// profiles and, when asked, its latest firings; for admins the buttons
// that turn one off and on and delete it, and "Add trigger…", which opens
// the create form. The server judges the ranges; its refusal shows under
// the form with the field it names marked.

import { del, get, patch, post, type Schemas } from '../api';
import { h, when } from '../format';
import { FormError } from '../runfmt';
import {
  CONDITION_KINDS,
  FIRINGS_SHOWN,
  TRIGGER_DEFAULTS,
  conditionText,
  countsText,
  createTriggerBody,
  observedText,
  outcomeText,
  profileHref,
  profileText,
  triggerErrorField,
  triggerFormValues,
  triggerProfilesHref,
  triggerState,
  type Trigger,
  type TriggerField,
  type TriggerFiring,
} from '../triggerfmt';
import { EVENT_CHOICES } from '../units';
import { clearRefusal, fieldsOf, formPanel, showRefusal } from './formpanel';

/** What the buttons do: open the create form on a service, or run a
 *  change and say how it went. */
export interface TriggerActions {
  open: (service: string) => void;
  act: (change: Promise<unknown>, done: string) => Promise<void>;
}

const url = (t: Trigger) => `/api/v1/triggers/${encodeURIComponent(t.id)}`;

/** A trigger's latest firings, newest first. */
function firingsTable(firings: TriggerFiring[]): HTMLElement {
  if (!firings.length) return h('span', { class: 'muted' }, 'no firings yet');
  return h(
    'table',
    { class: 'grid trigger-firings-table' },
    h('thead', {}, h('tr', {}, ...['fired', 'host', 'observed', 'outcome', 'profile'].map((t) => h('th', {}, t)))),
    h(
      'tbody',
      {},
      ...firings.map((f) =>
        h(
          'tr',
          { 'data-outcome': f.outcome, 'data-host': f.host },
          h('td', { title: `held since ${when(f.held_since)}` }, when(f.fired_at)),
          h('td', {}, f.host),
          h('td', { class: 'num' }, observedText(f)),
          h('td', {}, outcomeText(f)),
          h('td', {}, f.profile_id ? h('a', { class: 'firing-profile', href: profileHref(f.profile_id) }, f.profile_id.slice(0, 8)) : '—'),
        ),
      ),
    ),
  );
}

/** One trigger: what it watches, its state and counts, its profiles, its
 *  firings on demand and, for admins, its buttons. */
function triggerItem(t: Trigger, actions: TriggerActions | null): HTMLElement {
  const { state, text } = triggerState(t);
  const firings = h('div', { class: 'trigger-firings', hidden: true });
  const toggle = h('button', { type: 'button', class: 'trigger-firings-toggle', 'aria-expanded': 'false' }, 'Firings');
  toggle.addEventListener('click', async () => {
    const opening = firings.hidden;
    firings.hidden = !opening;
    toggle.textContent = opening ? 'Hide firings' : 'Firings';
    toggle.setAttribute('aria-expanded', String(opening));
    if (!opening) return;
    firings.replaceChildren(h('span', { class: 'muted' }, 'listing…'));
    try {
      const answer = await get<Schemas['TriggerFiringsResponse']>(`${url(t)}/firings`, { limit: FIRINGS_SHOWN });
      firings.replaceChildren(firingsTable(answer.firings));
      firings.dataset.firings = String(answer.firings.length);
    } catch (err) {
      firings.replaceChildren(h('span', { class: 'muted' }, `firings: ${(err as Error).message}`));
    }
  });
  const condition = conditionText(t.condition);
  const buttons = actions
    ? h(
        'div',
        { class: 'trigger-actions' },
        h(
          'button',
          {
            type: 'button',
            class: 'trigger-toggle',
            onclick: () =>
              void actions.act(
                patch(url(t), { enabled: !t.enabled }),
                t.enabled ? `${t.service}'s trigger "${condition}" is off.` : `${t.service}'s trigger "${condition}" is on again.`,
              ),
          },
          t.enabled ? 'Turn off' : 'Turn on',
        ),
        h(
          'button',
          {
            type: 'button',
            class: 'trigger-delete',
            title: 'delete it and its firings (its profiles are kept)',
            onclick: () =>
              confirm(`Delete ${t.service}'s trigger "${condition}"? Its profiles are kept.`) &&
              void actions.act(del(url(t)), `${t.service}'s trigger "${condition}" deleted.`),
          },
          'Delete',
        ),
      )
    : null;
  return h(
    'li',
    { class: 'trigger', 'data-trigger': t.id, 'data-state': state },
    h('span', { class: 'trigger-condition' }, condition),
    ' ',
    h('span', { class: `status trigger-state trigger-${state}`, title: state === 'held' ? `${t.held_back} firings held back in all` : '' }, text),
    h('div', { class: 'muted trigger-profile' }, profileText(t)),
    h('div', { class: 'trigger-counts' }, countsText(t)),
    h('div', {}, h('a', { class: 'trigger-profiles', href: triggerProfilesHref(t), title: 'the profiles it started, newest first' }, 'profiles'), ' ', toggle),
    firings,
    buttons,
  );
}

/** The row's cell: the service's triggers and, for admins (`actions`
 *  given), their buttons and "Add trigger…". */
export function triggersCell(service: string, triggers: Trigger[], actions: TriggerActions | null): HTMLElement {
  return h(
    'td',
    { class: 'triggers', 'data-triggers': triggers.length },
    triggers.length ? h('ul', { class: 'trigger-list' }, ...triggers.map((t) => triggerItem(t, actions))) : null,
    actions ? h('button', { type: 'button', class: 'trigger-create', onclick: () => actions.open(service) }, 'Add trigger…') : null,
  );
}

/** The create form on `service`. `onSaved` gets what the server answered. */
function triggerForm(service: string, onSaved: (t: Trigger) => void, onCancel: () => void): HTMLFormElement {
  const values = triggerFormValues();
  const input = (name: TriggerField, attrs: Record<string, string | number | boolean>) =>
    h('input', { name, id: `trigger-${name}`, value: values[name], ...attrs });
  const number = (name: TriggerField, attrs: Record<string, string | number> = {}) =>
    input(name, { type: 'number', min: 1, step: 1, size: 6, ...attrs });
  const unit = h('span', { class: 'trigger-unit' });
  const threshold = number('threshold');
  const kind = h(
    'select',
    { name: 'kind', id: 'trigger-kind' },
    ...CONDITION_KINDS.map((k) => h('option', { value: k.kind, selected: k.kind === values.kind }, k.text)),
  );
  const showUnit = () => {
    const k = CONDITION_KINDS.find((c) => c.kind === kind.value) ?? CONDITION_KINDS[0];
    unit.textContent = k.unit;
    threshold.placeholder = k.kind === 'cpu_above' ? '80' : '50';
  };
  kind.addEventListener('change', showUnit);
  showUnit();
  const result = h('div', { id: 'trigger-result' });
  const form: HTMLFormElement = h(
    'form',
    {
      class: 'service-form trigger-form',
      id: 'trigger-form',
      'data-service': service,
      onsubmit: async (e: Event) => {
        e.preventDefault();
        clearRefusal(form);
        try {
          onSaved(await post<Trigger>('/api/v1/triggers', createTriggerBody(service, fieldsOf(form))));
        } catch (err) {
          const text = (err as Error).message;
          showRefusal(form, result, `Not created: ${text}`, err instanceof FormError ? err.field : triggerErrorField(text));
        }
      },
    },
    h('h3', {}, `Add a trigger on ${service}`),
    h('label', {}, 'When ', kind, ' ', threshold, ' ', unit),
    h('label', {}, 'for (s) ', number('for_secs')),
    h('label', {}, 'Profile for (s) ', number('duration_secs', { placeholder: TRIGGER_DEFAULTS.duration_secs })),
    h(
      'label',
      {},
      'Measure ',
      h('select', { name: 'event', id: 'trigger-event' }, ...EVENT_CHOICES.map(([value, text]) => h('option', { value, selected: value === values.event }, text))),
    ),
    h('label', {}, 'Rate (Hz) ', number('frequency_hz', { placeholder: TRIGGER_DEFAULTS.frequency_hz })),
    h('label', {}, 'Cooldown per host (s) ', number('cooldown_secs', { placeholder: TRIGGER_DEFAULTS.cooldown_secs })),
    h('label', {}, 'At most at once ', number('max_concurrent', { placeholder: TRIGGER_DEFAULTS.max_concurrent })),
    h('label', {}, 'Hosts ', input('hosts', { size: 30, placeholder: 'blank: every host that runs it' })),
    h('button', { type: 'submit', id: 'trigger-submit' }, 'Create'),
    h('button', { type: 'button', id: 'trigger-cancel', onclick: onCancel }, 'Cancel'),
    h(
      'p',
      { class: 'muted' },
      'Each host watches its processes once a second; when the condition held for the whole period, it takes an ordinary profile labelled with the trigger, at most once per cooldown on a host and no more at once than the cap across the fleet.',
    ),
    result,
  );
  return form;
}

/** The panel the create form opens in, below the services (admins).
 *  `onSaved` says what was created and reloads the page's list. */
export function triggerPanel(onSaved: (done: string) => void): {
  root: HTMLElement;
  open: TriggerActions['open'];
  close: () => void;
} {
  const { root, show, close } = formPanel('trigger-panel', 'trigger-panel');
  const open = (service: string) =>
    show(
      triggerForm(
        service,
        (t) => {
          close();
          onSaved(`${t.service} has a trigger: when ${conditionText(t.condition)}, ${profileText(t)}.`);
        },
        close,
      ),
    );
  return { root, open, close };
}
