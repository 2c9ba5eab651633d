// A signed-in console user over real HTTP, for tests of the console's JSON API: sign in for the
// session cookie and CSRF token, then call /api routes with or without them.
import { expect } from 'vitest';

export interface Signed {
  cookie: string;
  csrf: string;
}

/** Signs in at `origin` (expects success) and returns the session cookie and its CSRF token. */
export async function signedIn(origin: string, email: string, password: string): Promise<Signed> {
  const res = await fetch(`${origin}/api/session`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ email, password }),
  });
  expect(res.status).toBe(200);
  return {
    cookie: res.headers.get('set-cookie')!.split(';')[0]!,
    csrf: ((await res.json()) as { csrfToken: string }).csrfToken,
  };
}

/** `method /api<path>` as the web app sends it: the session's cookie, its CSRF token unless `csrf` is false. */
export function consoleCall(
  origin: string,
  s: Signed | null,
  method: string,
  path: string,
  body?: unknown,
  csrf = true,
): Promise<Response> {
  return fetch(`${origin}/api${path}`, {
    method,
    headers: {
      ...(s ? { cookie: s.cookie } : {}),
      ...(s && csrf ? { 'x-csrf-token': s.csrf } : {}),
      ...(body !== undefined ? { 'content-type': 'application/json' } : {}),
    },
    ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
  });
}
