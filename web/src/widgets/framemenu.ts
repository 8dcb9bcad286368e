// The flame graph's right-click menu of a frame, shared by the profile,
// aggregate and run views.

import type { Issue } from '../api';
import type { MenuItem } from '../flame/graph';
import { codeSearchUrl, sourceText, sourceUrl, sourceUrlTemplate, type SourceLocation } from '../settings';

/** "View source" of a frame. With its file (`source`, from the profile's
 *  frames), it shows `file:line` and opens the source URL template's link,
 *  or, without a template, copies `file:line`; without a file, it searches
 *  code for the function's name. */
export function viewSource(name: string, source: SourceLocation | undefined, template = sourceUrlTemplate()): MenuItem {
  if (!source) return { label: 'View source', href: codeSearchUrl(name) };
  const text = sourceText(source);
  const href = sourceUrl(source, template);
  return href
    ? { label: `View source ${text}`, href }
    : { label: `View source ${text}`, title: 'Copies file:line (set a source URL template in Settings to open it)', copy: { text, what: 'source location' } };
}

/** Menu entries of a frame: its source, its trend over time where the
 *  view offers one (`onTrend`), and the known issue it is part of. */
export function frameMenu(issues: Issue[], onTrend?: (name: string) => void): (name: string, stack: string[], source?: SourceLocation) => MenuItem[] {
  return (name, _stack, source) => {
    const items: MenuItem[] = [viewSource(name, source)];
    if (onTrend) items.push({ label: 'Trend of this function', action: () => onTrend(name) });
    for (const issue of issues) {
      if (issue.stacks.some((s) => s.frames.includes(name)) && issue.link)
        items.push({ label: `Known issue: ${issue.title}`, href: issue.link });
    }
    return items;
  };
}
