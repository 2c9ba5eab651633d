import { describe, expect, it } from 'vitest';
import { loadConfig } from './index.ts';

const KEK = { MODELPLANE_KEK: 'ab'.repeat(32) };

describe('configuration: media storage', () => {
  it('defaults to the filesystem store under .data/media', () => {
    const c = loadConfig(KEK);
    expect(c.MEDIA_STORE).toBe('fs');
    expect(c.MEDIA_DIR).toBe('.data/media');
    expect(c.S3_REGION).toBe('us-east-1');
    expect(c.S3_FORCE_PATH_STYLE).toBeUndefined(); // the factory decides from S3_ENDPOINT
  });

  it('an S3 store with a bucket and no keys uses the SDK default chain', () => {
    const c = loadConfig({ ...KEK, MEDIA_STORE: 's3', S3_BUCKET: 'media' });
    expect(c.S3_BUCKET).toBe('media');
    expect(c.S3_ACCESS_KEY_ID).toBeUndefined();
  });

  it.each([
    ['s3 with no bucket', { MEDIA_STORE: 's3' }, /S3_BUCKET: required when MEDIA_STORE=s3/],
    ['one key without the other', { S3_ACCESS_KEY_ID: 'id' }, /S3_SECRET_ACCESS_KEY: set both/],
    ['an endpoint that is not a URL', { S3_ENDPOINT: 'minio:9000' }, /S3_ENDPOINT/],
    ['an unknown store', { MEDIA_STORE: 'gcs' }, /MEDIA_STORE/],
    ['a path style that is not a boolean', { S3_FORCE_PATH_STYLE: 'yes' }, /S3_FORCE_PATH_STYLE/],
  ])('refuses %s, naming the variable', (_, env, message) => {
    expect(() => loadConfig({ ...KEK, ...env })).toThrow(message);
  });

  it('reads S3_FORCE_PATH_STYLE as a boolean', () => {
    expect(loadConfig({ ...KEK, S3_FORCE_PATH_STYLE: 'false' }).S3_FORCE_PATH_STYLE).toBe(false);
    expect(loadConfig({ ...KEK, S3_FORCE_PATH_STYLE: '1' }).S3_FORCE_PATH_STYLE).toBe(true);
  });
});

describe('configuration: billing', () => {
  it('defaults to approval top-ups, no service ledger API, the console on localhost', () => {
    const c = loadConfig(KEK);
    expect(c.CONSOLE_PAYMENT_PROVIDERS).toEqual(['approval']);
    expect(c.CONSOLE_SERVICE_TOKEN).toBeUndefined();
    expect(c.CONSOLE_PUBLIC_URL).toBe('http://localhost:3000');
    expect([c.CONSOLE_TOPUP_MIN, c.CONSOLE_TOPUP_MAX]).toEqual(['5', '10000']);
  });

  it('takes Stripe with both of its keys; the public URL loses a trailing slash', () => {
    const c = loadConfig({
      ...KEK,
      CONSOLE_PAYMENT_PROVIDERS: 'stripe, approval,stripe',
      STRIPE_SECRET_KEY: 'sk_test_x',
      STRIPE_WEBHOOK_SECRET: 'whsec_x',
      CONSOLE_PUBLIC_URL: 'https://console.example.com/',
    });
    expect(c.CONSOLE_PAYMENT_PROVIDERS).toEqual(['stripe', 'approval']);
    expect(c.CONSOLE_PUBLIC_URL).toBe('https://console.example.com');
  });

  it.each([
    [
      'stripe without its secret key',
      { CONSOLE_PAYMENT_PROVIDERS: 'stripe', STRIPE_WEBHOOK_SECRET: 'whsec_x' },
      /STRIPE_SECRET_KEY: required when CONSOLE_PAYMENT_PROVIDERS includes stripe/,
    ],
    [
      'stripe without its webhook secret',
      { CONSOLE_PAYMENT_PROVIDERS: 'stripe', STRIPE_SECRET_KEY: 'sk_test_x' },
      /STRIPE_WEBHOOK_SECRET: required/,
    ],
    ['a publishable key for the secret one', { STRIPE_SECRET_KEY: 'pk_test_x' }, /STRIPE_SECRET_KEY/],
    ['an unknown provider', { CONSOLE_PAYMENT_PROVIDERS: 'paypal' }, /CONSOLE_PAYMENT_PROVIDERS/],
    [
      'no provider at all',
      { CONSOLE_PAYMENT_PROVIDERS: ' , ' },
      /CONSOLE_PAYMENT_PROVIDERS: name at least one/,
    ],
    ['a short service token', { CONSOLE_SERVICE_TOKEN: 'secret' }, /CONSOLE_SERVICE_TOKEN: at least 32/],
    [
      'a minimum above the maximum',
      { CONSOLE_TOPUP_MIN: '50', CONSOLE_TOPUP_MAX: '10' },
      /CONSOLE_TOPUP_MAX: must not be below/,
    ],
    ['a Stripe API URL that is not http(s)', { STRIPE_API_URL: 'localhost:12111' }, /STRIPE_API_URL/],
  ])('refuses %s, naming the variable', (_, env, message) => {
    expect(() => loadConfig({ ...KEK, ...env })).toThrow(message);
  });
});

describe('configuration by owner', () => {
  it('each service parses its own settings: a bad console setting does not stop a proxy, nor a bad proxy setting a console; both stop what parses everything', async () => {
    const { loadConsoleConfig, loadProxyConfig } = await import('./index.ts');
    const badConsole = { ...KEK, CONSOLE_PORT: 'abc' };
    const badProxy = { ...KEK, PROXY_PORT: 'abc', PROXY_LEASES: 'maybe' };
    expect(loadProxyConfig(badConsole).PROXY_PORT).toBe(8080);
    expect(() => loadConsoleConfig(badConsole)).toThrow(/CONSOLE_PORT/);
    // The console's own rules too: stripe without its keys stops a console, not a proxy.
    const stripeKeyless = { ...KEK, CONSOLE_PAYMENT_PROVIDERS: 'stripe' };
    expect(() => loadConsoleConfig(stripeKeyless)).toThrow(/STRIPE_SECRET_KEY/);
    expect(loadProxyConfig(stripeKeyless).PROXY_PORT).toBe(8080);
    expect(loadConsoleConfig(badProxy).CONSOLE_PORT).toBe(3000);
    expect(() => loadProxyConfig(badProxy)).toThrow(/PROXY_PORT[\s\S]*PROXY_LEASES/);
    expect(() => loadConfig(badProxy)).toThrow(/PROXY_PORT/);
    expect(() => loadConfig(badConsole)).toThrow(/CONSOLE_PORT/);
    // Shared and media settings stop both.
    for (const load of [loadProxyConfig, loadConsoleConfig])
      expect(() => load({ ...KEK, MEDIA_STORE: 's3' })).toThrow(/S3_BUCKET/);
  });
});
