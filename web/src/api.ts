// Every call goes to the REST API with the bearer token. Errors come back
// as `ApiError` with the server's message; a 401 sends the user to sign in.

import type { components } from './api.gen';
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
    const b = this.body as Partial<Schemas['ErrorBody']> | null;
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
    // The API answers errors with an ErrorBody; a proxy in between may not.
    const err = json as { error?: Partial<Schemas['ErrorDetail']> | string } | null;
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

/** The API's schemas, generated from the api-server's OpenAPI document
 *  (`npm run gen:api` writes src/api.gen.ts from openapi.json). Use these
 *  for responses and request bodies; the few hand-written types below only
 *  refine fields the document types as free-form objects. */
export type Schemas = components['schemas'];

/** A profile (`GET /api/v1/profiles/{id}`, the list's rows, a start's
 *  answer); `runtime` only on the profile's own page. */
export type ProfileView = Schemas['Profile'];

export type ProfilesPage = Schemas['ProfilesPage'];

/** What the agent reported about the target once it started. */
export type ProfileRuntime = Schemas['ProfileRuntime'];

/** One library the agent found in the target. */
export type RuntimeLibrary = Schemas['Library'];

/** A row of `/top`: a function's self and total share. */
export type TopFunction = Schemas['FunctionShare'];

/** A detection in a profile (`/issues`). Its `detail` is free-form in the
 *  document; `regressionDetail` and `runtimeMatchText` (rulefmt.ts) read it
 *  per rule kind. */
export type Issue = Schemas['Issue'];

export const LIVE_STATUSES = ['requested', 'dispatched', 'running'];
