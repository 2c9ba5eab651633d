// The console server's JSON API, with the session's CSRF token on every call that needs it.
export interface Me {
  user: { id: string; email: string };
  account: { id: string; name: string; currency: string | null };
  csrfToken: string;
  apiBaseUrl: string;
}

export interface KeyRow {
  id: string;
  name: string;
  key: string;
  createdAt: string;
}

export class ApiError extends Error {}

let csrf = '';

async function call<T>(method: string, path: string, body?: unknown): Promise<T> {
  const res = await fetch(`/api${path}`, {
    method,
    headers: {
      ...(csrf ? { 'x-csrf-token': csrf } : {}),
      ...(body !== undefined ? { 'content-type': 'application/json' } : {}),
    },
    ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
  });
  const json = (await res.json().catch(() => ({}))) as { error?: { message?: string } };
  if (!res.ok) throw new ApiError(json.error?.message ?? `request failed (${res.status})`);
  return json as T;
}

export const api = {
  async me(): Promise<Me | null> {
    try {
      const me = await call<Me>('GET', '/session');
      csrf = me.csrfToken;
      return me;
    } catch {
      return null;
    }
  },
  async signIn(email: string, password: string): Promise<Me> {
    const me = await call<Me>('POST', '/session', { email, password });
    csrf = me.csrfToken;
    return me;
  },
  signOut: () => call('DELETE', '/session'),
  keys: async () => (await call<{ data: KeyRow[] }>('GET', '/keys')).data,
  ensureDefault: () => call<{ minted: { key: KeyRow; secret: string } | null }>('POST', '/keys/default'),
  create: (name: string) => call<{ key: KeyRow; secret: string }>('POST', '/keys', { name }),
  show: async (id: string) => (await call<{ secret: string }>('GET', `/keys/${id}/secret`)).secret,
  rotate: (id: string) => call<{ key: KeyRow; secret: string }>('POST', `/keys/${id}/rotate`),
  remove: (id: string) => call('DELETE', `/keys/${id}`),
};
