// Who requested a profile, as the profiles, profile and runs pages show it:
// a user or token by name, a schedule by its name (linked to the schedules).

import { get, type Schemas } from '../api';
import { h } from '../format';
import { requesterText, scheduleIdOf } from '../profilefmt';

let scheduleNamesCache: { at: number; names: Promise<Map<string, string>> } | null = null;

/** Schedule names by id, to name a scheduled run's requester: listed at
 *  most once a minute unless one of `wanted` is missing (a schedule made
 *  since); empty when the server has no schedules. */
export async function scheduleNames(wanted: string[] = []): Promise<Map<string, string>> {
  const fresh = scheduleNamesCache && Date.now() - scheduleNamesCache.at < 60_000;
  if (fresh) {
    const names = await scheduleNamesCache!.names;
    if (wanted.every((id) => names.has(id))) return names;
  }
  scheduleNamesCache = {
    at: Date.now(),
    names: get<Schemas['SchedulesResponse']>('/api/v1/schedules').then(
      (r) => new Map(r.schedules.map((s) => [s.id, s.name])),
      () => new Map(),
    ),
  };
  return scheduleNamesCache.names;
}

/** Who requested a profile, a schedule by its name (linked). */
export function requesterCell(requestedBy: string, names: ReadonlyMap<string, string>): HTMLElement | string {
  const text = requesterText(requestedBy, names);
  return scheduleIdOf(requestedBy) ? h('a', { href: '#/schedules', class: 'requester', title: requestedBy }, text) : text;
}
