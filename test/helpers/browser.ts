// What the console's browser tests share: the platform started as `make dev` starts it (on free
// ports, in a folder of the test's own), Debian's Chromium through playwright-core, a new account
// whose owner can sign in, the sign-in form, and a screenshot at desktop and phone width that also
// checks nothing sticks out sideways at phone width.
import { cpSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type Browser, chromium, type Page } from 'playwright-core';
import { expect } from 'vitest';
import { stringify as stringifyYaml } from 'yaml';
import { type Platform, startPlatform } from '../../cli/platform.ts';
import { Accounts } from '../../core/accounts/accounts.ts';
import { Team } from '../../core/accounts/team.ts';
import { Users } from '../../core/accounts/users.ts';
import { Metering } from '../../core/billing/index.ts';
import { freePort } from '../../core/free-port.ts';
import { ApiKeys } from '../../core/keys/index.ts';
import { parseDecimalToNano } from '../../core/money.ts';
import { connectRedis, type Redis } from '../../core/redis/client.ts';
import { runLogStream } from './run-log.ts';

export const PASSWORD = 'a long test password';
export const PHONE = { width: 390, height: 844 };
export const DESKTOP = { width: 1440, height: 900 };

export const launchChromium = (extraArgs: string[] = []): Promise<Browser> =>
  chromium.launch({
    executablePath: '/usr/bin/chromium',
    args: [
      '--no-sandbox',
      '--disable-gpu',
      '--disable-background-networking',
      '--disable-component-update',
      ...extraArgs,
    ],
  });

/** A new account whose owner has never opened the console (no key yet), with `credit` on it. */
export async function newOwner(
  redis: Redis,
  name: string,
  o: { country?: string | null; credit?: string } = {},
) {
  const account = await new Accounts(redis).create({
    name,
    country: o.country === undefined ? 'US' : o.country,
  });
  const credit = o.credit ?? '20';
  if (credit !== '0')
    await new Metering(redis).topUp({
      accountId: account.id,
      topUpId: `browser-${account.id}`,
      amount: parseDecimalToNano(credit),
      note: 'browser test credits',
    });
  const email = `${name.toLowerCase().replace(/\W+/g, '-')}-${Date.now().toString(36)}@example.com`;
  const user = await new Users(redis).create({ email, password: PASSWORD, accountId: account.id });
  await new Team(redis).add(account.id, user.id, 'owner');
  return { accountId: account.id, email, userId: user.id };
}

export async function signIn(page: Page, consoleUrl: string, email: string, path = '/api') {
  await page.goto(`${consoleUrl}${path}`);
  await page.getByRole('heading', { name: 'Sign in' }).waitFor();
  await page.getByLabel('Email').fill(email);
  await page.getByLabel('Password').fill(PASSWORD);
  await page.getByRole('button', { name: 'Sign in' }).click();
}

/** Both widths, full page, to `<path>-desktop.png` and `<path>-phone.png`; at phone width nothing may stick out sideways. */
export async function shoot(page: Page, path: string) {
  await page.setViewportSize(DESKTOP);
  await page.screenshot({ path: `${path}-desktop.png`, fullPage: true });
  await page.setViewportSize(PHONE);
  await page.waitForTimeout(50);
  const overflow = await page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
  expect([path, overflow]).toEqual([path, 0]);
  await page.screenshot({ path: `${path}-phone.png`, fullPage: true });
  await page.setViewportSize(DESKTOP);
}

export interface BrowserPlatform {
  platform: Platform;
  redis: Redis;
  keys: ApiKeys;
  browser: Browser;
  stop(): Promise<void>;
}

/** The platform as `make dev` starts it, on free ports, a Redis client and the key store on it, and Chromium. */
export async function startBrowserPlatform(o: {
  dataDir: string;
  modelsDir: string;
  env: Record<string, string>;
  log: (line: string) => void;
}): Promise<BrowserPlatform> {
  // Every service logs at info into the run's log folder: the final credential scan reads what real
  // sign-ins, invitation links, Playground calls and Stripe webhooks put there (docs/security.md "Logs").
  const runLog = runLogStream('platform');
  const platform = await startPlatform({
    ...o,
    env: { LOG_LEVEL: 'info', ...o.env },
    log: (line) => {
      runLog.write(`${line}\n`);
      o.log(line);
    },
    redisPort: await freePort(),
    proxyPort: await freePort(),
    consolePort: await freePort(),
    operatorPort: await freePort(),
  });
  const redis = connectRedis(platform.redisUrl);
  const keys = new ApiKeys(redis, { brand: 'service', kek: Buffer.from(platform.kek, 'hex') });
  const browser = await launchChromium();
  return {
    platform,
    redis,
    keys,
    browser,
    async stop() {
      await browser.close();
      redis.disconnect();
      await platform.stop();
    },
  };
}

/**
 * A folder of the suite's own holding a copy of examples/models (the cluster-only ones aside), for
 * the suite to add Model files to before it starts the platform on it; `remove` deletes it all.
 */
export function exampleModels(prefix: string): { dataDir: string; modelsDir: string; remove(): void } {
  const dataDir = mkdtempSync(join(tmpdir(), prefix));
  const modelsDir = join(dataDir, 'models');
  cpSync(new URL('../../examples/models', import.meta.url).pathname, modelsDir, { recursive: true });
  rmSync(join(modelsDir, 'cluster'), { recursive: true, force: true });
  return { dataDir, modelsDir, remove: () => rmSync(dataDir, { recursive: true, force: true }) };
}

/** Writes a chat Model served by an engine of the test's own at `url` (`spec.external`), priced in USD. */
export function addExternalChatModel(
  modelsDir: string,
  m: { name: string; id: string; url: string; spec?: Record<string, unknown> },
): void {
  writeFileSync(
    join(modelsDir, `${m.name}.yaml`),
    stringifyYaml({
      apiVersion: 'modelplane.dev/v1alpha1',
      kind: 'Model',
      metadata: { name: m.name },
      spec: {
        id: m.id,
        kind: 'chat',
        external: { url: m.url },
        contextLength: 16384,
        maxOutputTokens: 2048,
        pricing: { USD: { input: '0.2', output: '0.8' } },
        ...m.spec,
      },
    }),
  );
}
