// Form fields shared by the start and schedule forms: the host, picked
// from the live agents (GET /api/v1/hosts) or typed, and the target, by
// process name, PID, command line regex or cgroup.

import { get, type Schemas } from '../api';
import { h } from '../format';
import { needsService, TARGET_KINDS, targetFields, type TargetFields, type TargetKind } from '../profilefmt';

const OTHER = '__other';

export interface HostPicker {
  /** The labelled fields. */
  root: HTMLElement;
  /** The host chosen or typed ('' when none). */
  value(): string;
  /** Resolves once the live hosts are listed. */
  ready: Promise<void>;
}

/**
 * A pick-list of the live hosts (`<prefix>-host`), with "other host…"
 * revealing a text field (`<prefix>-host-other`) for one not heard from
 * (or when the hosts cannot be listed). `initial` is chosen when listed.
 */
export function hostPicker(prefix: string, initial = ''): HostPicker {
  const select = h('select', { id: `${prefix}-host`, name: 'host', 'aria-label': 'host' });
  const other = h('input', {
    id: `${prefix}-host-other`,
    name: 'host_other',
    placeholder: 'host name',
    'aria-label': 'other host',
    pattern: '[A-Za-z0-9._-]+',
  });
  const otherLabel = h('label', { class: 'host-other', hidden: true }, other);
  const sync = () => {
    const typed = select.value === OTHER;
    otherLabel.hidden = !typed;
    other.required = typed;
  };
  select.addEventListener('change', sync);
  const fill = (agents: Schemas['AgentView'][]) => {
    const live = agents.filter((a) => a.live).sort((a, b) => a.host.localeCompare(b.host));
    select.replaceChildren(
      ...(live.length ? [] : [h('option', { value: '', disabled: true }, 'no live host')]),
      ...live.map((a) =>
        h('option', { value: a.host }, `${a.host} (${a.plugins.join(', ') || 'no plugins'}${a.running_profiles.length ? `, ${a.running_profiles.length} running` : ''})`),
      ),
      h('option', { value: OTHER }, 'other host…'),
    );
    if (initial && live.some((a) => a.host === initial)) select.value = initial;
    else if (initial) {
      select.value = OTHER;
      other.value = initial;
    } else select.value = live.length ? live[0].host : OTHER;
    sync();
  };
  const ready = get<Schemas['HostsResponse']>('/api/v1/hosts').then(
    (r) => fill(r.agents),
    () => fill([]),
  );
  select.required = true;
  select.append(h('option', { value: '' }, 'listing live hosts…'));
  return {
    root: h('label', { class: 'host-picker' }, 'Host ', select, otherLabel),
    value: () => (select.value === OTHER ? other.value.trim() : select.value),
    ready,
  };
}

export interface TargetPicker {
  root: HTMLElement[];
  /** The request fields, or throws with a reason for people. */
  fields(service: string): TargetFields;
  kind(): TargetKind;
}

/** "Target by" (`<prefix>-target-by`) and its value (`<prefix>-target`);
 *  `service` is marked required for kinds that name no program. */
export function targetPicker(prefix: string, service: HTMLInputElement): TargetPicker {
  const by = h(
    'select',
    { id: `${prefix}-target-by`, name: 'target_by', 'aria-label': 'target by' },
    ...TARGET_KINDS.map((k) => h('option', { value: k.by }, k.label)),
  );
  const value = h('input', { id: `${prefix}-target`, name: 'target', 'aria-label': 'target', size: 30 });
  const sync = () => {
    const kind = TARGET_KINDS.find((k) => k.by === by.value)!;
    value.placeholder = kind.placeholder;
    value.type = kind.by === 'pid' ? 'number' : 'text';
    service.required = needsService(kind.by);
    service.placeholder = service.required ? 'required for this target' : 'defaults to the process name';
  };
  by.addEventListener('change', sync);
  sync();
  return {
    root: [h('label', {}, 'Target by ', by), h('label', {}, 'Target ', value)],
    fields: (svc) => targetFields(by.value as TargetKind, value.value, svc),
    kind: () => by.value as TargetKind,
  };
}
