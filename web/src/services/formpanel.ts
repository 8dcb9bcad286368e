// What the services page's admin forms (a continuous profile, a trigger)
// share: the panel below the services they open in, the fields a form
// typed, and a server's refusal shown under the form with the field it
// names marked.

import { h, notice } from '../format';

/** The fields a form typed, by name. */
export function fieldsOf(form: HTMLFormElement): Record<string, string> {
  const fields: Record<string, string> = {};
  for (const [k, v] of new FormData(form).entries()) fields[k] = String(v);
  return fields;
}

/** Clears the marks of an earlier refusal. */
export function clearRefusal(form: HTMLFormElement): void {
  for (const el of form.querySelectorAll('[aria-invalid]')) el.removeAttribute('aria-invalid');
}

/** Shows `text` in `result` and marks (and focuses) the field it is
 *  about, when there is one. */
export function showRefusal(form: HTMLFormElement, result: HTMLElement, text: string, field: string | null): void {
  result.replaceChildren(notice('error', text));
  const el = field ? form.querySelector<HTMLElement>(`[name="${field}"]`) : null;
  el?.setAttribute('aria-invalid', 'true');
  el?.focus();
}

/** A panel, hidden until a form is shown in it. */
export function formPanel(cls: string, id: string): { root: HTMLElement; show: (form: HTMLFormElement) => void; close: () => void } {
  const root = h('section', { class: cls, id, hidden: true });
  const close = () => {
    root.hidden = true;
    root.replaceChildren();
  };
  const show = (form: HTMLFormElement) => {
    root.replaceChildren(form);
    root.hidden = false;
    root.scrollIntoView?.({ block: 'nearest' });
    form.querySelector<HTMLElement>('select, input')?.focus();
  };
  return { root, show, close };
}
