// Every call goes to the REST API with the bearer token. Errors come back
// as `ApiError` with the server's message; a 401 sends the user to sign in.

import { clearToken, getToken } from './auth';

export class ApiError extends Error {
  constructor(
    public status: number,
    message: string,
    public body: unknown = null,
  ) {
    super(message);
  }
  /** The route does not exist on this server (a feature not deployed). */
  get notAvailable(): boolean {
    const b = this.body as { error?: { message?: string } } | null;
    return this.status === 404 && b?.error?.message === 'no such route';
  }
}

type Query = Record<string, string | number | undefined | null>;

export function withQuery(path: string, query: Query = {}): string {
  const params = new URLSearchParams();
  for (const [k, v] of Object.entries(query)) {
    if (v !== undefined && v !== null && v !== '') params.set(k, String(v));
  }
  const qs = params.toString();
  return qs ? `${path}?${qs}` : path;
}

export async function api<T>(method: string, path: string, body?: unknown): Promise<T> {
  const headers: Record<string, string> = { accept: 'application/json' };
  const token = getToken();
  if (token) headers.authorization = `Bearer ${token}`;
  if (body !== undefined) headers['content-type'] = 'application/json';
  let response: Response;
  try {
    response = await fetch(path, {
      method,
      headers,
      body: body === undefined ? undefined : JSON.stringify(body),
    });
  } catch (e) {
    throw new ApiError(0, `network error: ${(e as Error).message}`);
  }
  const text = await response.text();
  let json: unknown = null;
  if (text) {
    try {
      json = JSON.parse(text);
    } catch {
      json = null;
    }
  }
  if (!response.ok) {
    const err = json as { error?: { message?: string } | string } | null;
    const message =
      typeof err?.error === 'string' ? err.error : err?.error?.message ?? `${response.status} ${response.statusText}`;
    if (response.status === 401) {
      clearToken();
      if (!location.hash.startsWith('#/signin')) location.hash = '#/signin';
    }
    throw new ApiError(response.status, message, json);
  }
  return json as T;
}

export const get = <T>(path: string, query?: Query) => api<T>('GET', withQuery(path, query));
export const post = <T>(path: string, body?: unknown, query?: Query) => api<T>('POST', withQuery(path, query), body);
export const patch = <T>(path: string, body: unknown) => api<T>('PATCH', path, body);
export const del = <T>(path: string) => api<T>('DELETE', path);

/** Nodes a flame graph tree (`format=json`, `/aggregate`) is cut to, the
 *  server's `max_nodes`: lighter subtrees come as one `other` node per
 *  parent, opened by asking again with `focus`. A few thousand boxes are
 *  what a screen shows, and parse and draw in milliseconds. */
export const FLAME_MAX_NODES = 8192;

/** A flame graph tree's query: the view's parameters, the node budget and,
 *  when zoomed into a cut subtree, its `focus` path (frame names below the
 *  root, `;`-separated). */
export function flameTreeQuery(query: Query, focus: string[] = []): Query {
  return { ...query, max_nodes: FLAME_MAX_NODES, focus: focus.length ? focus.join(';') : undefined };
}

export interface ProfileView {
  id: string;
  host: string;
  service: string;
  target: unknown;
  mode: string;
  duration_ms: number;
  frequency_hz: number;
  status: string;
  status_reason: string | null;
  requested_by: string;
  event: string | null;
  agent_id: string | null;
  created_at: string;
  updated_at: string;
  started_at: string | null;
  finished_at: string | null;
  /** Free-form `{key: value}` to find profiles by. */
  labels?: Record<string, string>;
  /** Plugin, event and cost control the start asked for. */
  options?: Record<string, unknown>;
  /** What the agent reported about the target (profile detail only). */
  runtime?: ProfileRuntime | null;
}

export interface RuntimeLibrary {
  kind: 'jar' | 'python' | 'shared' | string;
  name: string;
  version?: string;
}

export interface ProfileRuntime {
  language: string | null;
  runtime_version: string | null;
  runtime: {
    flags?: string[];
    libraries?: RuntimeLibrary[];
    libraries_truncated?: boolean;
    executable?: { path: string; build_id?: string };
  };
}

export interface TopFunction {
  function: string;
  self_samples: number;
  total_samples: number;
  self_share: number;
  total_share: number;
  self_share_stderr: number;
}

export interface Issue {
  rule_id: string;
  kind: string;
  title: string;
  explanation: string;
  fix: string;
  link: string;
  share: number;
  threshold_pct: number;
  samples_matched: number;
  samples_total: number;
  stacks: Array<{ stack_id: string; count: number; frames: string[] }>;
  /** What the rule kind found beyond the share (a regression's grown
   *  functions and new rules, the libraries or flags a runtime rule
   *  matched); null for stack-share rules. */
  detail?: unknown;
}

export const LIVE_STATUSES = ['requested', 'dispatched', 'running'];
