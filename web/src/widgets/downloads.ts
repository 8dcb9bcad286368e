// Downloads of what a flame graph view shows, in the formats the API's
// stack routes render (`format=`): an SVG flame graph, gzip pprof (`go
// tool pprof`), speedscope JSON and folded stacks (inferno, Brendan
// Gregg's scripts). Fetched with the token (a plain link would not carry
// it) and saved under the view's name.

import { withQuery } from '../api';
import { getToken } from '../auth';
import { h } from '../format';
import { flameOrientation, type Orientation } from '../settings';

export const DOWNLOAD_FORMATS = [
  { format: 'svg', label: 'SVG', suffix: '.svg', title: 'flame graph image, the same way up as on screen' },
  { format: 'pprof', label: 'pprof', suffix: '.pb.gz', title: 'gzip protocol buffers for go tool pprof' },
  { format: 'speedscope', label: 'speedscope', suffix: '.speedscope.json', title: 'for speedscope.app' },
  { format: 'folded', label: 'folded', suffix: '.folded.txt', title: 'one line per stack with its count' },
] as const;

export type DownloadFormat = (typeof DOWNLOAD_FORMATS)[number]['format'];

/** The file name of a download: the view's stem and the format's suffix. */
export function downloadName(stem: string, format: DownloadFormat): string {
  return stem + DOWNLOAD_FORMATS.find((f) => f.format === format)!.suffix;
}

/** The request of a download: the view's path and query with `format`
 *  (and without the JSON tree's node budget and focus); an SVG drawn
 *  `orientation` way up, when the route takes one. */
export function downloadUrl(
  path: string,
  query: Record<string, string | undefined>,
  format: DownloadFormat,
  orientation?: Orientation,
): string {
  const q: Record<string, string | undefined> = { ...query, format };
  delete q.max_nodes;
  delete q.focus;
  if (format === 'svg' && orientation) q.orientation = orientation;
  return withQuery(path, q);
}

async function download(url: string, name: string, status: HTMLElement): Promise<void> {
  status.textContent = `Preparing ${name}…`;
  try {
    const response = await fetch(url, { headers: { authorization: `Bearer ${getToken()}` } });
    if (!response.ok) {
      const body = await response.json().catch(() => null);
      status.textContent = `${name}: ${body?.error?.message ?? `HTTP ${response.status}`}`;
      return;
    }
    const blobUrl = URL.createObjectURL(await response.blob());
    h('a', { href: blobUrl, download: name }).click();
    setTimeout(() => URL.revokeObjectURL(blobUrl), 10_000);
    status.textContent = '';
  } catch (e) {
    status.textContent = `${name}: ${(e as Error).message}`;
  }
}

/** "Download: SVG pprof speedscope folded" for the stacks at `path` with
 *  `query` (the view's filters), saved as `stem` + suffix; `formats` for a
 *  route that renders fewer (a diff: SVG only). SVGs come the way up the
 *  screen draws flame graphs, unless `oriented` is false (the diff route
 *  draws one way only). */
export function downloadBar(
  path: string,
  query: Record<string, string | undefined>,
  stem: string,
  formats: readonly DownloadFormat[] = DOWNLOAD_FORMATS.map((f) => f.format),
  oriented = true,
): HTMLElement {
  const status = h('span', { class: 'download-status muted', role: 'status' });
  return h(
    'span',
    { class: 'downloads', id: 'downloads' },
    'Download: ',
    ...DOWNLOAD_FORMATS.filter((f) => formats.includes(f.format)).map((f) =>
      h(
        'button',
        {
          type: 'button',
          class: 'download',
          'data-format': f.format,
          title: f.title,
          onclick: () =>
            void download(
              downloadUrl(path, query, f.format, oriented ? flameOrientation() : undefined),
              downloadName(stem, f.format),
              status,
            ),
        },
        f.label,
      ),
    ),
    status,
  );
}
