// A service's continuous profile on the services page: its state and a
// link to its hourly segments in the service's row, and for admins the
// buttons that turn it on ("Profile always…" opens the form), change it
// (the same form, filled in), turn it off and on, and delete it. The
// server judges rates and budgets against the operator's limits; its
// refusal shows under the form with the field it names marked.

import { del, patch, post } from '../api';
import {
  CONTINUOUS_DEFAULTS,
  CONTINUOUS_EVENTS,
  configText,
  continuousErrorField,
  continuousState,
  createBody,
  formValues,
  patchBody,
  segmentsHref,
  type ContinuousFormFields,
  type ContinuousProfile,
} from '../continuousfmt';
import { h, notice } from '../format';
import { FormError } from '../runfmt';
import { clearRefusal, fieldsOf, formPanel, showRefusal } from './formpanel';

/** What a row's buttons do: open the form on a service (filled with its
 *  continuous profile when it has one), or run a change and say how it
 *  went. */
export interface ContinuousActions {
  open: (service: string, current: ContinuousProfile | null) => void;
  act: (change: Promise<unknown>, done: string) => Promise<void>;
}

const url = (c: ContinuousProfile) => `/api/v1/continuous/${encodeURIComponent(c.id)}`;

/** The row's cell: the state, the segments link and, for admins
 *  (`actions` given), the buttons. */
export function continuousCell(service: string, c: ContinuousProfile | null, actions: ContinuousActions | null): HTMLElement {
  const { state, text } = continuousState(c);
  const buttons = actions
    ? h(
        'div',
        { class: 'continuous-actions' },
        ...(c
          ? [
              h('button', { type: 'button', class: 'continuous-change', onclick: () => actions.open(service, c) }, 'Change…'),
              h(
                'button',
                {
                  type: 'button',
                  class: 'continuous-toggle',
                  onclick: () =>
                    void actions.act(
                      patch(url(c), { enabled: !c.enabled }),
                      c.enabled ? `${service} is no longer profiled always.` : `${service} is profiled always again: ${configText(c)}.`,
                    ),
                },
                c.enabled ? 'Turn off' : 'Turn on',
              ),
              h(
                'button',
                {
                  type: 'button',
                  class: 'continuous-delete',
                  title: 'delete its continuous profile (its segments are kept)',
                  onclick: () =>
                    confirm(`Delete ${service}'s continuous profile? Its segments are kept, as profiles.`) &&
                    void actions.act(del(url(c)), `${service}'s continuous profile deleted.`),
                },
                'Delete',
              ),
            ]
          : [h('button', { type: 'button', class: 'continuous-create', onclick: () => actions.open(service, null) }, 'Profile always…')]),
      )
    : null;
  return h(
    'td',
    { class: 'continuous', 'data-continuous': state },
    text ? h('span', { class: 'continuous-state' }, text) : null,
    c && !c.enabled ? h('div', { class: 'muted continuous-config', title: 'what Turn on resumes' }, configText(c)) : null,
    c ? h('div', {}, h('a', { class: 'continuous-segments', href: segmentsHref(c), title: `its ${c.segment_secs / 3600} h segments, newest first` }, 'segments')) : null,
    buttons,
  );
}

/** The form on `service`: turns it on, or changes `current`. `onSaved`
 *  gets what the server answered. */
function continuousForm(
  service: string,
  current: ContinuousProfile | null,
  onSaved: (c: ContinuousProfile) => void,
  onCancel: () => void,
): HTMLFormElement {
  const values = formValues(current);
  const input = (name: keyof ContinuousFormFields, attrs: Record<string, string | number | boolean>) =>
    h('input', { name, id: `continuous-${name}`, value: values[name], ...attrs });
  const result = h('div', { id: 'continuous-result' });
  const form: HTMLFormElement = h(
    'form',
    {
      class: 'service-form continuous-form',
      id: 'continuous-form',
      'data-service': service,
      'data-mode': current ? 'change' : 'create',
      onsubmit: async (e: Event) => {
        e.preventDefault();
        clearRefusal(form);
        try {
          const fields: ContinuousFormFields = fieldsOf(form);
          if (!current) return onSaved(await post<ContinuousProfile>('/api/v1/continuous', createBody(service, fields)));
          const body = patchBody(current, fields);
          if (!Object.keys(body).length) return void result.replaceChildren(notice('info', 'Nothing changed.'));
          onSaved(await patch<ContinuousProfile>(url(current), body));
        } catch (err) {
          const text = (err as Error).message;
          showRefusal(form, result, `${current ? 'Not changed' : 'Not turned on'}: ${text}`, err instanceof FormError ? err.field : continuousErrorField(text));
        }
      },
    },
    h('h3', {}, current ? `Change how ${service} is profiled always` : `Profile ${service} always`),
    h(
      'label',
      {},
      'Measure ',
      h(
        'select',
        { name: 'event', id: 'continuous-event' },
        ...CONTINUOUS_EVENTS.map(([value, text]) => h('option', { value, selected: value === values.event }, text)),
      ),
    ),
    // Blank: the server's default when turning on, unchanged when changing.
    h('label', {}, 'Rate (Hz) ', input('frequency_hz', { type: 'number', min: 1, step: 1, size: 6, placeholder: CONTINUOUS_DEFAULTS.frequency_hz })),
    h(
      'label',
      {},
      'CPU budget (% of a core per host) ',
      input('cpu_budget_percent', { type: 'number', min: 0, step: 'any', size: 6, placeholder: CONTINUOUS_DEFAULTS.cpu_budget_percent }),
    ),
    h('label', {}, 'Hosts ', input('hosts', { size: 30, placeholder: 'blank: every host that runs it' })),
    h('button', { type: 'submit', id: 'continuous-submit' }, current ? 'Save' : 'Turn on'),
    h('button', { type: 'button', id: 'continuous-cancel', onclick: onCancel }, 'Cancel'),
    h(
      'p',
      { class: 'muted' },
      'Each host profiles it in hourly segments, each an ordinary profile; the rate is lowered where the budget needs it.',
    ),
    result,
  );
  return form;
}

/** The panel the form opens in, below the services (admins). `onSaved`
 *  says what was saved and reloads the page's list. */
export function continuousPanel(onSaved: (done: string) => void): {
  root: HTMLElement;
  open: ContinuousActions['open'];
  close: () => void;
} {
  const { root, show, close } = formPanel('continuous-panel', 'continuous-panel');
  const open = (service: string, current: ContinuousProfile | null) => {
    const form = continuousForm(
      service,
      current,
      (c) => {
        close();
        onSaved(`${c.service} ${current ? 'is now profiled' : 'is profiled always'}: ${configText(c)}${c.enabled ? '' : ' (off)'}.`);
      },
      close,
    );
    show(form);
  };
  return { root, open, close };
}
