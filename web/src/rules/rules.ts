// Detection rules: everyone reads them with each rule's latest re-analysis
// of past profiles; admins enable/disable them, edit thresholds inline and
// create stack-share rules. Every change queues a re-analysis, polled here
// until it ends.

import { get, patch, post, type Schemas } from '../api';
import { hasRole } from '../auth';
import { h, notice, when } from '../format';
import { type ViewScope } from '../router';
import {
  parseThreshold,
  reanalysisActive,
  reanalysisText,
  serviceThresholdsText,
  specText,
  stackShareBody,
  type Reanalysis,
  type RuleView,
} from '../rulefmt';

const POLL_MS = 1000;

function reanalysisCell(r: Reanalysis | null | undefined): HTMLElement {
  const cell = h(
    'td',
    {
      class: 'reanalysis',
      'data-status': r?.status ?? 'none',
      title: r ? `requested by ${r.requested_by} at ${when(r.requested_at)}; finished ${when(r.finished_at)}` : 'never re-analysed',
    },
    reanalysisText(r),
  );
  if (reanalysisActive(r) && r!.profiles_total)
    cell.append(h('progress', { value: r!.profiles_done, max: r!.profiles_total }));
  return cell;
}

function createForm(onCreated: (view: RuleView) => void): HTMLElement {
  const result = h('div', { id: 'rule-create-result' });
  const input = (name: string, attrs: Record<string, string | number | boolean> = {}) =>
    h('input', { name, id: `rule-${name}`, ...attrs });
  const form = h(
    'form',
    {
      class: 'rule-form',
      id: 'rule-create',
      onsubmit: async (e: Event) => {
        e.preventDefault();
        const d = new FormData(form);
        const fields: Record<string, string | boolean> = {};
        for (const [k, v] of d.entries()) fields[k] = String(v);
        fields.leaf_only = d.get('leaf_only') !== null;
        let body: Schemas['RuleBody'];
        try {
          body = stackShareBody(fields);
        } catch (err) {
          result.replaceChildren(notice('error', (err as Error).message));
          return;
        }
        try {
          const view = await post<RuleView>('/api/v1/rules', body);
          result.replaceChildren(notice('info', `Rule ${view.id} created; re-analysing past profiles.`));
          form.reset();
          onCreated(view);
        } catch (err) {
          result.replaceChildren(notice('error', `Not created: ${(err as Error).message}`));
        }
      },
    },
    h('h3', {}, 'New rule (stack share)'),
    h('label', {}, 'Id ', input('id', { required: true, placeholder: 'e.g. team-json-parse', pattern: '[a-z0-9][a-z0-9._\\-]*', size: 20 })),
    h('label', {}, 'Title ', input('title', { required: true, size: 30 })),
    h('label', { class: 'wide' }, 'Explanation ', h('textarea', { name: 'explanation', id: 'rule-explanation', rows: 2, required: true })),
    h('label', { class: 'wide' }, 'Fix ', h('textarea', { name: 'fix', id: 'rule-fix', rows: 2, required: true })),
    h('label', {}, 'Link ', input('link', { required: true, type: 'url', placeholder: 'https://…', size: 30 })),
    h('label', {}, 'Function regex ', input('function', { required: true, placeholder: 'e.g. json[./]parse', size: 24 })),
    h('label', {}, 'Module regex ', input('module', { placeholder: 'optional', size: 16 })),
    h('label', {}, input('leaf_only', { type: 'checkbox', value: 'true' }), ' leaf only'),
    h('label', {}, 'Threshold (%) ', input('threshold_pct', { required: true, type: 'number', min: 0, max: 100, step: 'any', value: 1 })),
    h('button', { type: 'submit' }, 'Create'),
    result,
  );
  return form;
}

export async function rulesView(_route: unknown, scope: ViewScope): Promise<HTMLElement> {
  const admin = hasRole('admin');
  const { rules } = await get<Schemas['RulesResponse']>('/api/v1/rules');
  const views = new Map<string, RuleView>(rules.map((r) => [r.id, { ...r, reanalysis: null }]));
  const rows = new Map<string, HTMLElement>();
  const message = h('div', { id: 'rules-message' });
  const body = h('tbody', {});

  const change = async (id: string, what: Schemas['RulePatch'], done: string) => {
    try {
      const view = await patch<RuleView>(`/api/v1/rules/${encodeURIComponent(id)}`, what);
      message.replaceChildren(notice('info', `${done} Re-analysing past profiles.`));
      show(view);
    } catch (err) {
      message.replaceChildren(notice('error', `${id}: ${(err as Error).message}`));
      show(views.get(id)!); // puts back what the row showed
    }
  };

  const actions = (r: RuleView) =>
    h(
      'span',
      { class: 'rule-actions' },
      h(
        'button',
        {
          class: 'rule-toggle',
          'aria-pressed': String(r.enabled),
          onclick: (e: Event) => {
            (e.currentTarget as HTMLButtonElement).disabled = true;
            void change(r.id, { enabled: !r.enabled }, `${r.id} ${r.enabled ? 'disabled' : 'enabled'}.`);
          },
        },
        r.enabled ? 'Disable' : 'Enable',
      ),
    );

  const thresholdEdit = (r: RuleView) => {
    const input = h('input', {
      name: 'threshold_pct',
      type: 'number',
      min: 0,
      max: 100,
      step: 'any',
      value: r.threshold_pct,
      'aria-label': `threshold of ${r.id} (%)`,
    });
    const form = h(
      'form',
      {
        class: 'threshold-edit',
        onsubmit: (e: Event) => {
          e.preventDefault();
          let threshold: number;
          try {
            threshold = parseThreshold(input.value);
          } catch (err) {
            message.replaceChildren(notice('error', `${r.id}: ${(err as Error).message}`));
            return;
          }
          if (threshold === r.threshold_pct) return;
          void change(r.id, { threshold_pct: threshold }, `${r.id}'s threshold is now ${threshold}%.`);
        },
      },
      input,
      '% ',
      h('button', { type: 'submit' }, 'Save'),
    );
    return form;
  };

  const row = (r: RuleView) =>
    h(
      'tr',
      { 'data-rule': r.id, 'data-enabled': String(r.enabled), 'data-source': r.source },
      h(
        'td',
        { title: r.explanation },
        r.link ? h('a', { href: r.link, target: '_blank', rel: 'noopener' }, r.title) : r.title,
        h('div', { class: 'muted' }, h('code', {}, r.id)),
      ),
      h('td', {}, r.kind),
      h('td', { class: 'spec' }, h('code', {}, specText(r.kind, r.spec))),
      h('td', { class: 'num threshold' }, admin ? thresholdEdit(r) : `${r.threshold_pct}%`),
      h('td', {}, serviceThresholdsText(r.service_thresholds)),
      h('td', { class: 'enabled' }, r.enabled ? 'yes ' : 'no ', admin ? actions(r) : null),
      h('td', {}, r.source),
      reanalysisCell(r.reanalysis),
      h('td', { class: 'fix' }, r.fix),
    );

  /** Draws (or redraws) one rule's row, keeping the table's order. */
  function show(view: RuleView): void {
    views.set(view.id, view);
    const fresh = row(view);
    const old = rows.get(view.id);
    if (old) old.replaceWith(fresh);
    else body.append(fresh);
    rows.set(view.id, fresh);
  }

  /** Refreshes one rule's re-analysis cell (not the row: a threshold being
   *  typed stays). */
  const refreshReanalysis = async (id: string) => {
    const view = await get<RuleView>(`/api/v1/rules/${encodeURIComponent(id)}`);
    const known = views.get(id);
    if (!known) return;
    known.reanalysis = view.reanalysis;
    rows.get(id)?.querySelector('td.reanalysis')?.replaceWith(reanalysisCell(view.reanalysis));
  };

  for (const view of views.values()) show(view);
  // Each rule's latest re-analysis (the list leaves it out).
  await Promise.all(rules.map((r) => refreshReanalysis(r.id).catch(() => undefined)));

  let polling = false;
  scope.every(POLL_MS, async () => {
    if (polling) return;
    polling = true;
    try {
      const active = [...views.values()].filter((v) => reanalysisActive(v.reanalysis)).map((v) => v.id);
      await Promise.all(active.map((id) => refreshReanalysis(id).catch(() => undefined)));
    } finally {
      polling = false;
    }
  });

  return h(
    'section',
    { class: 'rules' },
    h('h2', {}, 'Detection rules'),
    h(
      'p',
      { class: 'muted' },
      admin
        ? 'Changing a rule re-analyses the profiles stored before the change; its progress shows in the re-analysis column.'
        : 'Read-only: an admin token may change rules.',
    ),
    message,
    h(
      'table',
      { class: 'grid', id: 'rules-table' },
      h(
        'thead',
        {},
        h(
          'tr',
          {},
          ...['rule', 'kind', 'matches', 'threshold', 'per service', 'enabled', 'source', 're-analysis', 'fix'].map((t) => h('th', {}, t)),
        ),
      ),
      body,
    ),
    admin
      ? createForm((view) => {
          show(view);
          rows.get(view.id)?.scrollIntoView({ block: 'nearest' });
        })
      : null,
  );
}
