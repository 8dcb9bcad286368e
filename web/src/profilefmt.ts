// How a profile's header and list row word its target, duration, rate and
// requester: imported profiles (uploaded files) have no process, and may
// have no duration or rate; a schedule's runs are requested by
// `schedule:<id>`, shown by the schedule's name. Pure, so it unit-tests.

import type { ProfileView, Schemas } from './api';

export function isImported(p: Pick<ProfileView, 'target'>): boolean {
  return p.target?.by === 'imported';
}

export function targetText(target: Schemas['Target'] | null | undefined): string {
  switch (target?.by) {
    case 'pid':
      return `pid ${target.value}`;
    case 'process_name':
      return target.value;
    case 'cmdline':
      return `cmdline /${target.value}/`;
    case 'cgroup':
      return `cgroup ${target.value}`;
    case 'imported':
      return `imported ${target.value} file`;
    default:
      return target ? `${(target as { by: string }).by} ${(target as { value: unknown }).value}` : '—';
  }
}

/** `12.5 s`; an import's file without a duration says so. */
export function durationText(p: Pick<ProfileView, 'target' | 'duration_ms'>): string {
  if (p.duration_ms > 0) return `${p.duration_ms / 1000} s`;
  return isImported(p) ? 'duration not in the file' : '0 s';
}

/** `99 Hz`; an import's file without a sampling period says so. */
export function rateText(p: Pick<ProfileView, 'target' | 'frequency_hz'>): string {
  if (p.frequency_hz > 0) return `${p.frequency_hz} Hz`;
  return isImported(p) ? 'rate not in the file' : '0 Hz';
}

/** Where a profile came from, for its header. */
export function sourceText(p: Pick<ProfileView, 'target' | 'requested_by'>): string | null {
  return isImported(p) ? `uploaded as a ${(p.target as { value: string }).value} file by ${p.requested_by}` : null;
}

const SCHEDULE_PREFIX = 'schedule:';

/** The schedule id of a scheduled run's requester, else null. */
export function scheduleIdOf(requestedBy: string): string | null {
  return requestedBy.startsWith(SCHEDULE_PREFIX) ? requestedBy.slice(SCHEDULE_PREFIX.length) : null;
}

/** Who asked for a profile: a schedule by name (`schedule nightly`), one
 *  deleted since by its short id, anyone else as the token's subject. */
export function requesterText(requestedBy: string, scheduleNames: ReadonlyMap<string, string>): string {
  const id = scheduleIdOf(requestedBy);
  if (id === null) return requestedBy;
  const name = scheduleNames.get(id);
  return name ? `schedule ${name}` : `schedule ${id.slice(0, 8)} (deleted)`;
}

/** The ways a start or schedule names its processes. */
export const TARGET_KINDS = [
  { by: 'process_name', label: 'process name', placeholder: 'e.g. cpu-split (/proc/PID/comm)' },
  { by: 'pid', label: 'PID', placeholder: 'e.g. 4242' },
  { by: 'cmdline', label: 'command line (regex)', placeholder: 'e.g. java .*-jar checkout\\.jar' },
  { by: 'cgroup', label: 'cgroup or container', placeholder: '/system.slice/x.service or a container id' },
] as const;

export type TargetKind = (typeof TARGET_KINDS)[number]['by'];

/** Kinds that name no program, so the service must be given. */
export function needsService(kind: TargetKind): boolean {
  return kind === 'cmdline' || kind === 'cgroup';
}

export type TargetFields = Pick<Schemas['StartRequest'], 'pid' | 'process_name' | 'cmdline' | 'cgroup'>;

/** The request fields of a target typed in a form; throws with a message
 *  for people when the value does not fit the kind. */
export function targetFields(kind: TargetKind, raw: string, service = ''): TargetFields {
  const value = raw.trim();
  if (!value) throw new Error(`give the ${TARGET_KINDS.find((k) => k.by === kind)!.label} to profile`);
  if (needsService(kind) && !service.trim())
    throw new Error(`a ${kind} target names no program: give the service it belongs to`);
  switch (kind) {
    case 'pid': {
      const pid = Number(value);
      if (!Number.isInteger(pid) || pid < 1) throw new Error(`"${value}" is not a process id`);
      return { pid };
    }
    case 'process_name':
      if (value.includes('/')) throw new Error('a process name has no "/" (it is /proc/PID/comm, not a path)');
      return { process_name: value };
    case 'cmdline':
      try {
        new RegExp(value);
      } catch (e) {
        throw new Error(`the command line is not a regex: ${(e as Error).message}`);
      }
      return { cmdline: value };
    case 'cgroup':
      return { cgroup: value };
  }
}
