// The bearer token, kept for the browser tab only (sessionStorage). Its
// payload is decoded only to decide what to show; the server enforces.

const TOKEN_KEY = 'odp.token';

export type Role = 'viewer' | 'profiler' | 'admin';

export interface Claims {
  sub: string;
  role: Role;
  services: string[];
  exp: number;
}

export function getToken(): string | null {
  return sessionStorage.getItem(TOKEN_KEY);
}

export function setToken(token: string): void {
  sessionStorage.setItem(TOKEN_KEY, token.trim());
}

export function clearToken(): void {
  sessionStorage.removeItem(TOKEN_KEY);
}

/** Decodes a JWT's payload (base64url JSON) without verifying it. */
export function decodeClaims(token: string): Claims | null {
  const parts = token.split('.');
  if (parts.length !== 3) return null;
  try {
    const b64 = parts[1].replace(/-/g, '+').replace(/_/g, '/');
    const padded = b64 + '='.repeat((4 - (b64.length % 4)) % 4);
    const bytes = Uint8Array.from(atob(padded), (c) => c.charCodeAt(0));
    const json = JSON.parse(new TextDecoder().decode(bytes));
    const role: Role = json.role === 'admin' || json.role === 'profiler' ? json.role : 'viewer';
    return {
      sub: String(json.sub ?? ''),
      role,
      services: Array.isArray(json.services) ? json.services.map(String) : [],
      exp: Number(json.exp ?? 0),
    };
  } catch {
    return null;
  }
}

export function claims(): Claims | null {
  const t = getToken();
  return t ? decodeClaims(t) : null;
}

const RANK: Record<Role, number> = { viewer: 0, profiler: 1, admin: 2 };

export function hasRole(min: Role): boolean {
  const c = claims();
  return !!c && RANK[c.role] >= RANK[min];
}

/** Whether a `services` glob (`*` any run, `?` one char) matches. */
export function globMatch(pattern: string, text: string): boolean {
  const re = new RegExp(
    '^' + pattern.replace(/[.+^${}()|[\]\\]/g, '\\$&').replace(/\*/g, '.*').replace(/\?/g, '.') + '$',
  );
  return re.test(text);
}

/** Whether the signed-in role may start/stop profiles of `service`. */
export function mayProfile(service: string): boolean {
  const c = claims();
  if (!c) return false;
  if (c.role === 'admin') return true;
  return c.role === 'profiler' && c.services.some((p) => globMatch(p, service));
}
