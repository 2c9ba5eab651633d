// API Management in a real browser (issue "Console"): playwright-core driving Debian's Chromium
// (installed by scripts/system-deps.sh), against the console server with its built web app, a
// real Redis and real HTTP. Screenshots of each page at desktop and phone width go to test/out/.
import { randomBytes } from 'node:crypto';
import { mkdirSync } from 'node:fs';
import type { FastifyInstance } from 'fastify';
import { type Browser, chromium, type Page } from 'playwright-core';
import { build } from 'vite';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildConsoleApp } from '../../console/app.ts';
import { Accounts } from '../../core/accounts.ts';
import { loadConfig } from '../../core/config.ts';
import { ApiKeys } from '../../core/keys/index.ts';
import { Team } from '../../core/team.ts';
import { Users } from '../../core/users.ts';
import { startRedis, type TestRedis } from '../helpers/redis.ts';

const out = new URL('../out/', import.meta.url).pathname;
const webDir = new URL('../../console/web/', import.meta.url).pathname;
const EMAIL = `browser-${randomBytes(3).toString('hex')}@example.com`;
const PASSWORD = 'a long test password';

let redis: TestRedis;
let app: FastifyInstance;
let origin: string;
let browser: Browser;
let keys: ApiKeys;
const consoleErrors: string[] = [];

beforeAll(async () => {
  await build({ configFile: `${webDir}vite.config.ts`, logLevel: 'error' });
  redis = await startRedis();
  const r = redis.client();
  const config = loadConfig({ REDIS_URL: redis.url, MODELPLANE_KEK: randomBytes(32).toString('hex') });
  keys = new ApiKeys(r, { brand: config.MODELPLANE_BRAND, kek: config.kek });
  const account = await new Accounts(r).create({ name: 'Browser Co', country: 'US' });
  const user = await new Users(r).create({ email: EMAIL, password: PASSWORD, accountId: account.id });
  await new Team(r).add(account.id, user.id, 'owner');
  app = await buildConsoleApp({ config, redis: r, logger: false });
  origin = await app.listen({ host: '127.0.0.1', port: 0 });
  browser = await chromium.launch({ executablePath: '/usr/bin/chromium', args: ['--no-sandbox'] });
  mkdirSync(out, { recursive: true });
}, 120_000);
afterAll(async () => {
  await browser?.close();
  await app?.close();
  await redis?.stop();
});

async function shoot(page: Page, name: string) {
  await page.setViewportSize({ width: 1280, height: 800 });
  await page.screenshot({ path: `${out}${name}-desktop.png`, fullPage: true });
  await page.setViewportSize({ width: 390, height: 844 });
  await page.screenshot({ path: `${out}${name}-phone.png`, fullPage: true });
  await page.setViewportSize({ width: 1280, height: 800 });
}

const rows = (page: Page) => page.locator('tbody tr');

describe('API Management in Chromium', () => {
  it('KEY-3 KEY-1 KEY-4 KEY-5 KEY-6 sign in; Default minted on the first visit; generate with Enter, cancel with Esc; bad names inline; show, rotate, delete', async () => {
    const page = await browser.newPage();
    page.on('console', (m) => {
      if (m.type() === 'error') consoleErrors.push(m.text());
    });
    page.on('pageerror', (e) => consoleErrors.push(e.message));
    await page.goto(`${origin}/api`);
    await page.getByRole('heading', { name: 'Sign in' }).waitFor();
    await expect(page.title()).resolves.toBe('Sign in');
    await shoot(page, 'sign-in');
    await page.getByLabel('Email').fill(EMAIL);
    await page.getByLabel('Password').fill(PASSWORD);
    await page.getByRole('button', { name: 'Sign in' }).click();

    // The first visit mints Default and shows its secret once.
    await page.getByRole('dialog', { name: 'API Key Created' }).waitFor();
    const defaultSecret = (await page.getByTestId('secret').textContent())!;
    expect(defaultSecret).toMatch(/^sk-service-[0-9a-f]{48}$/);
    await page.getByRole('button', { name: 'Done' }).click();
    await page.getByRole('heading', { name: 'API Management' }).waitFor();
    await expect(page.title()).resolves.toBe('API Management');
    await expect(page.getByTestId('endpoint').textContent()).resolves.toMatch(/\/v1$/);
    await expect(rows(page).count()).resolves.toBe(1);
    await expect(rows(page).first().textContent()).resolves.toContain('Default');
    await shoot(page, 'api-management');

    // Generate with Enter.
    await page.getByRole('button', { name: 'Generate New Key' }).click();
    await page.getByLabel('Name').fill('ci tool');
    await page.getByLabel('Name').press('Enter');
    await page.getByRole('dialog', { name: 'API Key Created' }).waitFor();
    const secret = (await page.getByTestId('secret').textContent())!;
    expect(await keys.authenticate(secret)).not.toBeNull(); // the secret from the dialog works
    await shoot(page, 'key-created');
    await page.getByRole('button', { name: 'Done' }).click();
    await rows(page).nth(1).waitFor();
    await expect(rows(page).count()).resolves.toBe(2);

    // Cancel with Esc: nothing is made.
    await page.getByRole('button', { name: 'Generate New Key' }).click();
    await page.getByLabel('Name').fill('never made');
    await page.keyboard.press('Escape');
    await expect(page.getByRole('dialog').count()).resolves.toBe(0);
    await expect(rows(page).count()).resolves.toBe(2);

    // A duplicate and a 101-character name are refused inline.
    await page.getByRole('button', { name: 'Generate New Key' }).click();
    await page.getByLabel('Name').fill('CI TOOL');
    await page.getByLabel('Name').press('Enter');
    await expect.poll(() => page.getByRole('alert').textContent()).toMatch(/already|unique|exists/i);
    await page.getByLabel('Name').fill('x'.repeat(101));
    await page.getByLabel('Name').press('Enter');
    await expect.poll(() => page.getByRole('alert').textContent()).toMatch(/100/);
    await shoot(page, 'generate-error');
    await page.keyboard.press('Escape');

    const ciRow = rows(page).filter({ hasText: 'ci tool' });
    // Show Key reveals the full secret.
    await ciRow.getByRole('button', { name: 'Show Key' }).click();
    await expect(page.getByTestId('secret').textContent()).resolves.toBe(secret);
    await page.getByRole('button', { name: 'Done' }).click();

    // Rotate: confirmed; the same row, a new secret; the old one is dead.
    const id = await ciRow.getAttribute('data-key-id');
    await ciRow.getByRole('button', { name: 'Rotate Key' }).click();
    await page.getByRole('button', { name: 'Rotate', exact: true }).click();
    await page.getByRole('dialog', { name: 'API Key Rotated' }).waitFor();
    const rotated = (await page.getByTestId('secret').textContent())!;
    expect(rotated).not.toBe(secret);
    await page.getByRole('button', { name: 'Done' }).click();
    expect(await keys.authenticate(secret)).toBeNull();
    expect(await keys.authenticate(rotated)).toMatchObject({ keyId: id });
    await expect(rows(page).filter({ hasText: 'ci tool' }).getAttribute('data-key-id')).resolves.toBe(id);

    // Delete: confirmed; the row is gone and the key no longer works.
    await rows(page).filter({ hasText: 'ci tool' }).getByRole('button', { name: 'Delete Key' }).click();
    await page.getByRole('button', { name: 'Delete', exact: true }).click();
    await rows(page).filter({ hasText: 'ci tool' }).waitFor({ state: 'detached' });
    expect(await keys.authenticate(rotated)).toBeNull();

    // A second visit mints nothing more.
    await page.reload();
    await rows(page).first().waitFor();
    await expect(rows(page).count()).resolves.toBe(1);
    await expect(page.getByRole('dialog').count()).resolves.toBe(0);
    // Chromium logs every 4xx answer to fetch as a console error; the two refused names above are
    // such answers, meant and shown inline. Anything else is an error of the page.
    expect(
      consoleErrors.filter(
        (e) => !/Failed to load resource: the server responded with a status of 4\d\d/.test(e),
      ),
    ).toEqual([]);
    await page.close();
  }, 60_000);
});
