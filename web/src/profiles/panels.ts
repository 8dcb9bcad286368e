// The profile page's panels: the timeline of samples per window, the
// profile's sample coverage and the target's runtime.

import { ApiError, get, LIVE_STATUSES, type ProfileView, type Schemas } from '../api';
import { MISSING_WARNING_SHARE, windowCoverageText, windowIsShort } from '../coveragefmt';
import { isImported } from '../profilefmt';
import { h, notice, when } from '../format';
import { executableText, librariesByKind, optionsText, runtimeTitle } from '../runtimefmt';
import { coverageBlock } from '../widgets/coverage';

/** A window's bar height: samples stand for 1/f s each at f Hz, so windows
 *  FDA sampled at different rates compare by time, not by raw count. */
export function timelineWeight(w: { samples: number; frequency_hz: number }): number {
  return w.frequency_hz > 0 ? w.samples / w.frequency_hz : w.samples;
}

/** The y axis of the timeline: time when every window has a rate, else
 *  raw samples (imported profiles have no rate). */
export function timelineAxis(windows: Array<{ frequency_hz: number }>): { label: string; unit: string } {
  return windows.every((w) => w.frequency_hz > 0)
    ? { label: 'time sampled per window', unit: 's' }
    : { label: 'samples per window', unit: '' };
}

/** Bars per window, as time sampled (FDA may change the frequency between
 *  windows), labelled with the frequency used, on labelled axes: time
 *  sampled up, windows in time order across. Says so when the server has
 *  no timeline. */
export async function timelinePanel(profileId: string): Promise<HTMLElement> {
  let windows: Schemas['TimelineWindow'][];
  try {
    windows = (await get<Schemas['TimelineJson']>(`/api/v1/profiles/${profileId}/timeline`)).windows;
  } catch (err) {
    if (err instanceof ApiError && err.status === 404)
      return notice('info', `Timeline not available on this server (${err.message}).`);
    return notice('error', (err as Error).message);
  }
  if (!windows.length) return notice('info', 'No windows stored yet.');
  const axis = timelineAxis(windows);
  const weight = (w: Schemas['TimelineWindow']) => (axis.unit ? timelineWeight(w) : w.samples);
  const max = Math.max(...windows.map(weight), Number.MIN_VALUE);
  const tick = (v: number) => (axis.unit ? `${Number(v.toPrecision(3))} ${axis.unit}` : String(Math.round(v)));
  const short = windows.filter(windowIsShort).length;
  const bars = h(
    'div',
    { class: 'timeline', id: 'timeline' },
    ...windows.map((w) => {
      const coverage = windowCoverageText(w);
      return h(
        'div',
        {
          class: windowIsShort(w) ? 'tl-bar tl-short' : 'tl-bar',
          title:
            `${w.host} ${when(w.window_start)} – ${when(w.window_end)}: ${w.samples} ${w.event} samples` +
            (w.frequency_hz > 0 ? ` at ${w.frequency_hz} Hz (${timelineWeight(w).toFixed(2)} s sampled)` : ' (rate not recorded)') +
            (coverage ? `\n${coverage}` : ''),
        },
        h('div', { class: 'tl-fill', style: `height:${Math.max(2, (weight(w) / max) * 80)}px` }),
        h('div', { class: 'tl-label' }, w.frequency_hz > 0 ? `${w.frequency_hz} Hz` : 'n/a'),
      );
    }),
  );
  return h(
    'figure',
    { class: 'timeline-chart', id: 'timeline-chart' },
    h('div', { class: 'tl-y-title', id: 'timeline-y' }, `${axis.label}${axis.unit ? ` (${axis.unit})` : ''}`),
    h('div', { class: 'tl-y-ticks' }, h('span', {}, tick(max)), h('span', {}, tick(0))),
    bars,
    h(
      'div',
      { class: 'tl-x-ticks' },
      h('span', {}, when(windows[0].window_start)),
      h('span', {}, when(windows[windows.length - 1].window_end)),
    ),
    h('figcaption', { class: 'tl-x-title', id: 'timeline-x' }, 'windows in time order (UTC), each labelled with its sampling rate'),
    short
      ? h(
          'p',
          { class: 'tl-short-note', id: 'timeline-short' },
          `${short} of ${windows.length} ${windows.length === 1 ? 'window' : 'windows'} (hatched) captured less than ` +
            `${100 - MISSING_WARNING_SHARE * 100}% of the samples their target earned; hover for why.`,
        )
      : null,
  );
}

/** The profile's samples against what its target earned, lost samples by
 *  reason, and a warning when more than 2% are missing. None for imported
 *  profiles: the file's samples are all there is, nothing was earned. */
export function coveragePanel(profile: ProfileView): HTMLElement | null {
  const c = profile.coverage;
  if (!c || isImported(profile)) return null;
  return coverageBlock(c, 'profile');
}

/** What the start asked for and what the agent found the target runs:
 *  runtime and version, executable and build id, flags, libraries (folded,
 *  there may be hundreds). */
export function runtimePanel(profile: ProfileView): HTMLElement {
  const r = profile.runtime;
  const title = runtimeTitle(r);
  const flags = r?.runtime?.flags ?? [];
  const groups = librariesByKind(r);
  const count = groups.reduce((n, [, libs]) => n + libs.length, 0);
  return h(
    'details',
    { class: 'runtime', id: 'runtime' },
    h(
      'summary',
      {},
      title
        ? `Runtime: ${title}`
        : isImported(profile)
          ? `Runtime: none recorded (imported from a ${(profile.target as { value: string }).value} file)`
          : LIVE_STATUSES.includes(profile.status)
            ? 'Runtime: not reported yet'
            : 'Runtime: not reported',
      isImported(profile) ? '' : ` · options: ${optionsText(profile.options)}`,
    ),
    executableText(r) ? h('p', {}, h('i', {}, 'Executable: '), executableText(r)!) : null,
    flags.length ? h('p', { class: 'flags' }, h('i', {}, 'Flags: '), h('code', {}, flags.join(' '))) : null,
    count
      ? h(
          'div',
          { class: 'libraries' },
          h('i', {}, `Libraries (${count}${r?.runtime?.libraries_truncated ? ', cut at the agent\'s limit' : ''}):`),
          ...groups.map(([kind, libs]) => h('p', {}, h('b', {}, `${kind}: `), libs.join(', '))),
        )
      : null,
  );
}
