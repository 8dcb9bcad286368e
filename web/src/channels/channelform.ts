// The forms of the channels pages: create a webhook or email channel, and
// edit one (its services, address, recipients, or a new webhook secret).
// The server checks every field; its 422 message shows under the form and
// the field it names is marked.

import { patch, post } from '../api';
import {
  createBody,
  fieldOfError,
  generateSecret,
  patchBody,
  type Channel,
  type ChannelKind,
  type FormFields,
} from '../channelfmt';
import { h, notice } from '../format';

type InputAttrs = Record<string, string | number | boolean>;

const PATTERN_HINT = 'e.g. checkout-* (blank: all)';

/** The text fields of a form (disabled fieldsets are left out). */
function fieldsOf(form: HTMLFormElement): FormFields {
  const fields: FormFields = {};
  for (const [k, v] of new FormData(form).entries()) fields[k] = String(v);
  return fields;
}

/** Shows the server's refusal under the form and marks the field it names. */
function showRefusal(form: HTMLFormElement, result: HTMLElement, prefix: string, err: unknown): void {
  const message = (err as Error).message;
  result.replaceChildren(notice('error', `${prefix}: ${message}`));
  const field = fieldOfError(message);
  const input = field ? form.querySelector<HTMLElement>(`[name="${field}"]:not(:disabled)`) : null;
  if (input) {
    input.setAttribute('aria-invalid', 'true');
    input.focus();
  }
}

function clearMarks(form: HTMLFormElement): void {
  for (const el of form.querySelectorAll('[aria-invalid]')) el.removeAttribute('aria-invalid');
}

/** A secret input with a button that fills in a random one and shows it,
 *  to be copied to the receiver: it is never shown again. */
function secretInput(id: string, attrs: InputAttrs): HTMLElement {
  const input = h('input', { name: 'secret', id, type: 'password', autocomplete: 'new-password', size: 34, ...attrs });
  const generate = h(
    'button',
    {
      type: 'button',
      class: 'secret-generate',
      onclick: () => {
        input.value = generateSecret();
        input.type = 'text';
        input.select();
      },
    },
    'Generate',
  );
  return h('span', { class: 'secret' }, input, ' ', generate);
}

/** Empties and hides a secret typed or generated, once it was sent. */
function resetSecret(form: HTMLFormElement): void {
  const secret = form.querySelector<HTMLInputElement>('input[name="secret"]');
  if (!secret) return;
  secret.value = '';
  secret.type = 'password';
}

/** The create form; `onCreated` gets the new channel. */
export function createForm(onCreated: (channel: Channel) => void): HTMLElement {
  const result = h('div', { id: 'channel-create-result' });
  const input = (name: string, attrs: InputAttrs = {}) => h('input', { name, id: `channel-${name}`, ...attrs });
  const kind = h(
    'select',
    { name: 'kind', id: 'channel-kind' },
    h('option', { value: 'webhook' }, 'webhook'),
    h('option', { value: 'email' }, 'email'),
  );
  const webhook = h(
    'fieldset',
    { class: 'channel-kind', 'data-kind': 'webhook' },
    h('legend', {}, 'Webhook'),
    h('label', {}, 'URL ', input('url', { type: 'url', required: true, size: 40, placeholder: 'https://hooks.example.com/odp' })),
    h('label', {}, 'Secret ', secretInput('channel-secret', { required: true, minlength: 16, maxlength: 512, placeholder: '16 to 512 characters' })),
    h('p', { class: 'muted' }, 'Each alert is POSTed as JSON with X-ODP-Signature: sha256=HMAC of the body with this secret. Copy it now: it is never shown again.'),
  );
  const email = h(
    'fieldset',
    { class: 'channel-kind', 'data-kind': 'email', hidden: true, disabled: true },
    h('legend', {}, 'Email'),
    h('label', {}, 'SMTP relay ', input('smtp_url', { required: true, size: 28, placeholder: 'smtp://mail.internal:25' })),
    h('label', {}, 'From ', input('from', { required: true, size: 24, placeholder: 'odp@example.com' })),
    h(
      'label',
      { class: 'wide' },
      'To ',
      h('textarea', { name: 'to', id: 'channel-to', rows: 2, required: true, placeholder: 'oncall@example.com, team@example.com (1 to 50)' }),
    ),
  );
  const showKind = () => {
    for (const set of [webhook, email]) {
      const shown = set.dataset.kind === kind.value;
      set.hidden = !shown;
      set.disabled = !shown; // a hidden kind's required fields do not block
    }
  };
  kind.addEventListener('change', showKind);
  const form = h(
    'form',
    {
      class: 'channel-form',
      id: 'channel-create',
      onsubmit: async (e: Event) => {
        e.preventDefault();
        clearMarks(form);
        const enabled = (form.elements.namedItem('enabled') as HTMLInputElement).checked;
        const body = createBody(kind.value as ChannelKind, fieldsOf(form), enabled);
        try {
          const channel = await post<Channel>('/api/v1/channels', body);
          result.replaceChildren(
            notice('info', `Channel ${channel.name} created. `),
            h('a', { href: `#/channels/${channel.id}` }, 'Open its delivery log'),
          );
          form.reset();
          resetSecret(form);
          showKind();
          onCreated(channel);
        } catch (err) {
          showRefusal(form, result, 'Not created', err);
        }
      },
    },
    h('h3', {}, 'New channel'),
    h('label', {}, 'Kind ', kind),
    h('label', {}, 'Name ', input('name', { required: true, size: 20, placeholder: 'e.g. ops-hook', pattern: '[A-Za-z0-9._\\-]+' })),
    h('label', {}, 'Services ', input('service_pattern', { size: 24, placeholder: PATTERN_HINT })),
    h('label', {}, input('enabled', { type: 'checkbox', checked: true }), ' enabled'),
    webhook,
    email,
    h('button', { type: 'submit', id: 'channel-create-submit' }, 'Create'),
    result,
  );
  return form;
}

/** The edit form of one channel, filled with what it is; `onSaved` gets
 *  the changed channel. */
export function editForm(c: Channel, onSaved: (channel: Channel) => void): HTMLElement {
  let current = c;
  const result = h('div', { id: 'channel-edit-result' });
  const input = (name: string, value: string, attrs: InputAttrs = {}) =>
    h('input', { name, id: `edit-${name}`, value, ...attrs });
  const fields =
    c.kind === 'webhook'
      ? [
          h('label', {}, 'URL ', input('url', c.url ?? '', { type: 'url', required: true, size: 40 })),
          h('label', {}, 'New secret ', secretInput('edit-secret', { minlength: 16, maxlength: 512, placeholder: 'blank: keep the current one' })),
        ]
      : [
          h('label', {}, 'SMTP relay ', input('smtp_url', c.smtp_url ?? '', { required: true, size: 28 })),
          h('label', {}, 'From ', input('from', c.from ?? '', { required: true, size: 24 })),
          h('label', { class: 'wide' }, 'To ', h('textarea', { name: 'to', id: 'edit-to', rows: 2, required: true }, c.to.join(', '))),
        ];
  const form = h(
    'form',
    {
      class: 'channel-form',
      id: 'channel-edit',
      onsubmit: async (e: Event) => {
        e.preventDefault();
        clearMarks(form);
        const body = patchBody(current, fieldsOf(form));
        if (!Object.keys(body).length) {
          result.replaceChildren(notice('info', 'Nothing changed.'));
          return;
        }
        try {
          current = await patch<Channel>(`/api/v1/channels/${encodeURIComponent(c.id)}`, body);
          const rotated = body.secret ? ' The new secret signs the deliveries sent from now on.' : '';
          result.replaceChildren(notice('info', `Saved.${rotated}`));
          resetSecret(form);
          onSaved(current);
        } catch (err) {
          showRefusal(form, result, 'Not saved', err);
        }
      },
    },
    h('h3', {}, 'Edit'),
    h('label', {}, 'Services ', input('service_pattern', c.service_pattern, { size: 24, placeholder: PATTERN_HINT })),
    ...fields,
    h('button', { type: 'submit', id: 'channel-edit-submit' }, 'Save'),
    result,
  );
  return form;
}
