// Small formatting and DOM helpers shared by the views.

export function pct(share: number, digits = 1): string {
  return `${(share * 100).toFixed(digits)}%`;
}

export function when(iso: string | null | undefined): string {
  if (!iso) return '—';
  const d = new Date(iso);
  return isNaN(d.getTime()) ? iso : d.toISOString().replace('T', ' ').replace(/\.\d+Z$/, 'Z');
}

export function escapeHtml(s: string): string {
  return s.replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]!);
}

type Attrs = Record<string, string | number | boolean | EventListener | undefined>;

/** Creates an element: attributes (on* become listeners) and children. */
export function h<K extends keyof HTMLElementTagNameMap>(
  tag: K,
  attrs: Attrs = {},
  ...children: Array<Node | string | null | undefined | false>
): HTMLElementTagNameMap[K] {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (v === undefined || v === false) continue;
    if (k.startsWith('on') && typeof v === 'function') el.addEventListener(k.slice(2), v as EventListener);
    else if (v === true) el.setAttribute(k, '');
    else el.setAttribute(k, String(v));
  }
  for (const c of children) {
    if (c === null || c === undefined || c === false) continue;
    el.append(typeof c === 'string' ? document.createTextNode(c) : c);
  }
  return el;
}

/** A message box for errors, warnings (something the user should know is
 *  off, e.g. samples missing) and "not available" notes. */
export function notice(kind: 'error' | 'warning' | 'info', text: string): HTMLElement {
  return h('div', { class: `notice ${kind}`, role: kind === 'error' ? 'alert' : 'status' }, text);
}

/** Awaits an admin's change (a row's button), says in `message` that it
 *  was `done` or why the server refused it, then reloads the view. */
export async function reportChange(
  message: HTMLElement,
  change: Promise<unknown>,
  done: string,
  reload: () => Promise<unknown>,
): Promise<void> {
  try {
    await change;
    message.replaceChildren(notice('info', done));
  } catch (err) {
    message.replaceChildren(notice('error', (err as Error).message));
  }
  await reload();
}

/** RFC 3339 from a `datetime-local` input value (taken as UTC). */
export function localInputToIso(value: string): string {
  return value ? new Date(value + 'Z').toISOString() : '';
}

export function isoToLocalInput(d: Date): string {
  return d.toISOString().slice(0, 16);
}

/** Copies `text` to the clipboard: the Clipboard API where the page may
 *  use it, else a selected textarea and `execCommand`. True when copied. */
export async function copyText(text: string): Promise<boolean> {
  try {
    if (navigator.clipboard?.writeText) {
      await navigator.clipboard.writeText(text);
      return true;
    }
  } catch {
    // Refused (no permission, not focused): try the old way.
  }
  const area = h('textarea', { style: 'position:fixed;left:-9999px', 'aria-hidden': 'true' });
  area.value = text;
  document.body.append(area);
  area.select();
  let ok = false;
  try {
    ok = document.execCommand('copy');
  } catch {
    ok = false;
  }
  area.remove();
  return ok;
}
