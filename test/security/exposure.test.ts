// Issue 24 items 6 and 8: what the public ports show and where links and cookies point. /metrics
// (invite-only model names, revenue per model) is not on the API port but on its own; signed media
// links take their origin from configuration in production, never from the Host header; session
// cookies are Secure unless the console is plain http on localhost.
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CatalogueSnapshot } from '../../core/catalogue/index.ts';
import { loadConfig } from '../../core/config/index.ts';
import { buildProxyApp } from '../../proxy/app.ts';
import { startConsole } from '../console/harness.ts';
import { CHAT_MODEL, type Harness, startHarness } from '../proxy/harness.ts';

describe('metrics are off the public port', () => {
  let h: Harness;
  beforeAll(async () => {
    h = await startHarness();
  });
  afterAll(async () => h?.stop());

  it('CAT-5 the API port answers /metrics with 404 (invite-only model names stay hidden); the metrics port serves them', async () => {
    await h.client().chat.completions.create({
      model: CHAT_MODEL,
      max_tokens: 3,
      messages: [{ role: 'user', content: 'hi' }],
    });
    const origin = h.baseURL.replace(/\/v1$/, '');
    const open = await fetch(`${origin}/metrics`);
    expect(open.status).toBe(404);
    expect(await open.text()).not.toContain('mp_proxy_');
    const scraped = await fetch(h.metricsURL);
    expect(scraped.status).toBe(200);
    expect(await scraped.text()).toContain(
      `mp_proxy_requests_total{route="/v1/chat/completions",model="${CHAT_MODEL}"`,
    );
    expect(new URL(h.metricsURL).port).not.toBe(new URL(origin).port);
  });

  it('the console has no /metrics on its port', async () => {
    const c = await startConsole();
    try {
      const res = await fetch(`${c.origin}/metrics`);
      expect(res.status).toBe(404);
      expect(await res.text()).not.toMatch(/^# (HELP|TYPE) /m);
    } finally {
      await c.stop();
    }
  });
});

describe('signed links take a configured origin in production', () => {
  let h: Harness;
  beforeAll(async () => {
    h = await startHarness();
  });
  afterAll(async () => h?.stop());

  it('the proxy refuses to start with NODE_ENV=production and no PROXY_PUBLIC_URL, naming it', async () => {
    const config = loadConfig({
      ...Object.fromEntries(Object.entries(h.config).filter(([, v]) => typeof v === 'string')),
      MODELPLANE_KEK: randomBytes(32).toString('hex'),
      NODE_ENV: 'production',
    });
    expect(config.PROXY_PUBLIC_URL).toBeUndefined();
    const redis = h.redis.client();
    const catalogue = new CatalogueSnapshot(redis, { subscriber: h.redis.client(), refreshMs: 60_000 });
    const built = buildProxyApp({ config, redis, subscriber: h.redis.client(), catalogue, logger: false });
    await expect(built).rejects.toThrow(/PROXY_PUBLIC_URL: required when NODE_ENV=production/);
  });
});

describe('session cookies are Secure by default', () => {
  const cookieOf = async (env: Record<string, string>) => {
    const c = await startConsole(env);
    try {
      const owner = await c.newOwner('Cookie');
      const res = await c.signIn(owner.email);
      expect(res.status).toBe(200);
      return res.headers.get('set-cookie') ?? '';
    } finally {
      await c.stop();
    }
  };

  it('Secure when the console is served anywhere but plain http on localhost; an explicit setting wins', async () => {
    expect(await cookieOf({ CONSOLE_PUBLIC_URL: 'https://console.example.com' })).toMatch(/;\s*Secure/i);
    expect(await cookieOf({ CONSOLE_PUBLIC_URL: 'http://console.example.com' })).toMatch(/;\s*Secure/i);
    expect(await cookieOf({})).not.toMatch(/;\s*Secure/i); // http://localhost:3000, make dev
    expect(await cookieOf({ CONSOLE_PUBLIC_URL: 'http://127.0.0.1:3000' })).not.toMatch(/;\s*Secure/i);
    expect(
      await cookieOf({ CONSOLE_PUBLIC_URL: 'https://console.example.com', CONSOLE_SECURE_COOKIES: 'false' }),
    ).not.toMatch(/;\s*Secure/i);
  });
});
