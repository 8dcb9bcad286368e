// Profile labels as people type them: `env=prod, team=checkout` in the
// start form, `env:prod,team:checkout` as the list filter (the API's
// `labels=` syntax). Both accept either separator; the value is what
// follows the first one, so values may hold `:` or `=`.

export type Labels = Record<string, string>;

/** Splits `key=value` (or `key:value`) at the first separator. */
function splitPair(pair: string): [string, string] {
  const eq = pair.indexOf('=');
  const colon = pair.indexOf(':');
  const at = eq < 0 ? colon : colon < 0 ? eq : Math.min(eq, colon);
  if (at < 0) throw new Error(`label "${pair}" is not key=value`);
  const key = pair.slice(0, at).trim();
  if (!key) throw new Error(`label "${pair}" has no key`);
  return [key, pair.slice(at + 1).trim()];
}

/** `k=v, k2=v2` into an object; blank text is no labels. Throws with a
 *  message for people on a pair without a key or separator, or a key given
 *  twice. */
export function parseLabels(text: string): Labels {
  const labels: Labels = {};
  for (const raw of text.split(',')) {
    const pair = raw.trim();
    if (!pair) continue;
    const [key, value] = splitPair(pair);
    if (key in labels) throw new Error(`label "${key}" is given twice`);
    labels[key] = value;
  }
  return labels;
}

/** Labels as `k=v, k2=v2`, keys sorted. */
export function formatLabels(labels: Labels | null | undefined): string {
  return Object.keys(labels ?? {})
    .sort()
    .map((k) => `${k}=${labels![k]}`)
    .join(', ');
}

/** The list filter as the API takes it (`env:prod,team:x`), from what was
 *  typed (spaces, `=` or `:`); `undefined` when blank. Throws like
 *  `parseLabels`. */
export function labelFilter(text: string): string | undefined {
  const labels = parseLabels(text);
  const pairs = Object.keys(labels).map((k) => `${k}:${labels[k]}`);
  return pairs.length ? pairs.join(',') : undefined;
}
