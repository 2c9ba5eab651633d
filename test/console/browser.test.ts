// The console in a real browser (issue "Console", "Done means"): playwright-core driving Debian's
// Chromium (installed by scripts/system-deps.sh) against the platform started exactly as `make dev`
// starts it (cli/platform.ts: Redis, the operator's local runtime with simulator engines, the proxy,
// the console), on free ports in a folder of its own, with Stripe pointed at stripe-mock. Secrets
// from the pages are used against the real API. Every page is photographed at desktop and phone
// width into test/out/.
import { execFile, execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { promisify } from 'node:util';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { exampleModelIds, type Platform } from '../../cli/platform.ts';
import { Team } from '../../core/accounts/team.ts';
import { Users } from '../../core/accounts/users.ts';
import { Metering } from '../../core/billing/index.ts';
import { newRequestId } from '../../core/ids.ts';
import { Archiver } from '../../core/journal/index.ts';
import type { ApiKeys } from '../../core/keys/index.ts';
import { TopUpRequests } from '../../core/payments/index.ts';
import type { Redis } from '../../core/redis/client.ts';
import { recordCallFact, recordRefused } from '../../core/usage/call-facts.ts';
import { gradientPng } from '../../engines/simulator/media/png.ts';
import {
  type BrowserPlatform,
  DESKTOP,
  newOwner as newOwnerIn,
  PASSWORD,
  shoot as shootAt,
  signIn as signInAt,
  startBrowserPlatform,
} from '../helpers/browser.ts';
import { ensureConsoleWeb } from '../helpers/console-web.ts';
import { expectLedgerClean } from '../helpers/ledger.ts';
import { journalForFile } from '../helpers/postgres.ts';
import { registerSecrets } from '../helpers/run-log.ts';
import { deliverStripeEvent, paidSession } from '../helpers/stripe-events.ts';
import { startStripeMock, type TestStripeMock } from '../helpers/stripe-mock.ts';
import { type ConsoleHarness, PASSWORD as HARNESS_PASSWORD, startConsole } from './harness.ts';

const run = promisify(execFile);
const repo = new URL('../../', import.meta.url).pathname;
const out = `${repo}test/out/`;
const WEBHOOK_SECRET = 'whsec_browser_test_secret';
/** The calls one by one need the durable journal: a database of this file's own. */
const db = journalForFile();

let started: BrowserPlatform;
let platform: Platform;
let stripe: TestStripeMock;
let browser: Browser;
let redis: Redis;
let keys: ApiKeys;
let dataDir: string;
const serviceLog: string[] = [];
/** Every console error of every page, by page. */
const consoleErrors: string[] = [];
/** The refusals the tests provoke on purpose (Chromium logs each 4xx answer to fetch as an error). */
let meantRefusals = 0;

beforeAll(async () => {
  await ensureConsoleWeb();
  stripe = await startStripeMock();
  dataDir = mkdtempSync(join(tmpdir(), 'mp-browser-'));
  registerSecrets(WEBHOOK_SECRET);
  started = await startBrowserPlatform({
    dataDir,
    modelsDir: 'examples/models',
    env: {
      CONSOLE_PAYMENT_PROVIDERS: 'stripe,approval',
      STRIPE_SECRET_KEY: 'sk_test_browser',
      STRIPE_WEBHOOK_SECRET: WEBHOOK_SECRET,
      STRIPE_API_URL: stripe.url,
      VIDEO_POLL_MS: '100',
    },
    log: (line) => {
      serviceLog.push(line);
      if (serviceLog.length > 400) serviceLog.shift();
    },
  });
  ({ platform, redis, keys, browser } = started);
  mkdirSync(out, { recursive: true });
}, 240_000);

afterAll(async () => {
  await started?.stop();
  await stripe?.stop();
  if (dataDir) rmSync(dataDir, { recursive: true, force: true });
}, 60_000);

/** A new account (US) whose owner has never opened the console: no key yet; `credit` USD on it. */
const newOwner = (name: string, country: string | null = 'US', credit = '20') =>
  newOwnerIn(redis, name, { country, credit });

async function newContext(): Promise<BrowserContext> {
  const context = await browser.newContext({ viewport: DESKTOP });
  await context.grantPermissions(['clipboard-read', 'clipboard-write'], { origin: platform.consoleUrl });
  context.on('page', watch);
  return context;
}

function watch(page: Page) {
  page.on('console', (m) => {
    if (m.type() === 'error') consoleErrors.push(`${page.url()}: ${m.text()}`);
  });
  page.on('pageerror', (e) => consoleErrors.push(`${page.url()}: ${e.message}`));
}

const signIn = (page: Page, email: string, path = '/api') => signInAt(page, platform.consoleUrl, email, path);

/** Both widths, full page; at phone width nothing may stick out sideways (tables scroll inside). */
const shoot = (page: Page, name: string) => shootAt(page, `${out}${name}`);

/** The API as a client would call it with a secret read off a page. */
const apiStatus = async (secret: string) =>
  (await fetch(`${platform.apiBase}/models`, { headers: { authorization: `Bearer ${secret}` } })).status;

/**
 * Every read of the page after an action polls (up to 10 s): the page may still be fetching, and a
 * loaded CI machine is slow — a plain read once saw the day table where the key table was coming.
 */
const POLL = { timeout: 10_000 };

const rows = (page: Page) => page.locator('tbody tr');
const dialog = (page: Page) => page.getByRole('dialog');

describe('the platform as make dev starts it', () => {
  it('its banner is printed only once every example model is listed for the demo key, each with a ready engine', async () => {
    // startPlatform has returned (make dev prints the banner at this point).
    const want = exampleModelIds(`${repo}examples/models`);
    expect(want.length).toBeGreaterThan(3);
    const res = await fetch(`${platform.apiBase}/models`, {
      headers: { authorization: `Bearer ${platform.demo.secret}` },
    });
    const listed = ((await res.json()) as { data: { id: string }[] }).data.map((m) => m.id.toLowerCase());
    expect(want.filter((id) => !listed.includes(id.toLowerCase()))).toEqual([]);
    // The banner's curl works as printed.
    const chat = await fetch(`${platform.apiBase}/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${platform.demo.secret}`, 'content-type': 'application/json' },
      body: JSON.stringify({
        model: 'Meta-Llama/Llama-3.1-8B-Instruct',
        messages: [{ role: 'user', content: 'Hello' }],
      }),
    });
    expect(chat.status).toBe(200);
  });
});

describe('API Management', () => {
  let context: BrowserContext;
  let page: Page;
  let owner: Awaited<ReturnType<typeof newOwner>>;
  beforeAll(async () => {
    context = await newContext();
    page = await context.newPage();
    owner = await newOwner('Browser Co');
  });
  afterAll(async () => context?.close());

  it('CON-1 CON-2 CON-3 KEY-3 KEY-1 sign in; the first visit mints Default, shown once; the endpoint row copies', async () => {
    await page.goto(`${platform.consoleUrl}/api`);
    await page.getByRole('heading', { name: 'Sign in' }).waitFor();
    await expect.poll(() => page.title(), POLL).toBe('Sign in');
    await shoot(page, 'sign-in');
    await signIn(page, owner.email);

    await dialog(page).filter({ hasText: 'API Key Created' }).waitFor();
    const defaultSecret = (await page.getByTestId('secret').textContent())!;
    expect(defaultSecret).toMatch(/^sk-service-[0-9a-f]{48}$/);
    expect(await apiStatus(defaultSecret)).toBe(200);
    await shoot(page, 'default-key-created');
    await page.getByRole('button', { name: 'Done' }).click();

    await expect.poll(() => page.title(), POLL).toBe('API Management');
    await expect.poll(() => page.getByTestId('endpoint').textContent(), POLL).toBe(platform.apiBase);
    await page.getByRole('button', { name: 'Copy the API endpoint' }).click();
    await expect.poll(() => page.evaluate(() => navigator.clipboard.readText()), POLL).toBe(platform.apiBase);
    const headers = await page.locator('thead th').allTextContents();
    expect(headers).toEqual(['Name', 'Key', 'Created Date', 'Actions']);
    await expect.poll(() => rows(page).count(), POLL).toBe(1);
    const cells = await rows(page).first().locator('td').allTextContents();
    // The Name cell: the name, then (muted, under it) its last use and this month's spend.
    expect(await rows(page).first().getByTestId('key-name').textContent()).toBe('Default');
    expect(cells[0]).toMatch(/^Default/);
    expect(cells[1]).toBe(`sk-…${defaultSecret.slice(-4)}`); // masked to the last four characters
    expect(cells[2]).toBe(
      new Date().toLocaleDateString('en-US', { year: 'numeric', month: 'short', day: 'numeric' }),
    );
    await shoot(page, 'api-management');

    // Another visit mints nothing more.
    await page.reload();
    await rows(page).first().waitFor();
    await expect.poll(() => rows(page).count(), POLL).toBe(1);
    await expect.poll(() => dialog(page).count(), POLL).toBe(0);
  });

  it('CON-5 KEY-2 KEY-4 generate with the keyboard (Enter submits, focus trapped and returned), cancel with Esc; bad names inline', async () => {
    const generate = page.getByRole('button', { name: 'Generate New Key' });
    await generate.focus();
    await page.keyboard.press('Enter');
    await dialog(page).filter({ hasText: 'Generate New Key' }).waitFor();
    // Focus is in the dialog, on the name field, and Tab never leaves the dialog.
    await expect
      .poll(() => page.evaluate(() => document.activeElement?.getAttribute('name')), POLL)
      .toBe('name');
    for (let i = 0; i < 6; i++) {
      await page.keyboard.press('Tab');
      await expect
        .poll(() => page.evaluate(() => !!document.activeElement?.closest('[role="dialog"]')), POLL)
        .toBe(true);
    }
    await page.getByLabel('Name').fill('ci tool');
    await page.getByLabel('Name').press('Enter');
    await dialog(page).filter({ hasText: 'API Key Created' }).waitFor();
    const secret = (await page.getByTestId('secret').textContent())!;
    expect(await apiStatus(secret)).toBe(200); // the secret from the dialog works against the API
    await page.getByRole('button', { name: 'Copy the key' }).click();
    await expect.poll(() => page.evaluate(() => navigator.clipboard.readText()), POLL).toBe(secret);
    await shoot(page, 'key-created');
    await page.keyboard.press('Escape');
    await expect.poll(() => dialog(page).count(), POLL).toBe(0);
    await expect.poll(() => rows(page).count(), POLL).toBe(2);

    // Esc cancels: nothing is made, and focus goes back to the button that opened the dialog.
    await generate.click();
    await page.getByLabel('Name').fill('never made');
    await page.keyboard.press('Escape');
    await expect.poll(() => dialog(page).count(), POLL).toBe(0);
    await expect
      .poll(() => page.evaluate(() => document.activeElement?.textContent), POLL)
      .toBe('Generate New Key');
    await expect.poll(() => rows(page).count(), POLL).toBe(2);

    // A duplicate (any case) and a 101-character name are refused inline, in the dialog.
    await generate.click();
    await page.getByLabel('Name').fill('CI TOOL');
    await page.getByLabel('Name').press('Enter');
    await expect
      .poll(() => dialog(page).getByRole('alert').textContent(), POLL)
      .toMatch(/already|unique|exists/i);
    await page.getByLabel('Name').fill('x'.repeat(101));
    await page.getByLabel('Name').press('Enter');
    await expect.poll(() => dialog(page).getByRole('alert').textContent(), POLL).toMatch(/100/);
    meantRefusals += 2;
    await expect.poll(() => page.getByLabel('Name').getAttribute('aria-invalid'), POLL).toBe('true');
    await shoot(page, 'generate-error');
    await page.keyboard.press('Escape');
    await expect.poll(() => rows(page).count(), POLL).toBe(2);
  });

  it('CON-6 KEY-4 KEY-5 KEY-6 Show Key reveals the secret; Rotate and Delete ask first, then act as the state table says', async () => {
    const ciRow = rows(page).filter({ hasText: 'ci tool' });
    const id = (await ciRow.getAttribute('data-key-id'))!;
    await ciRow.getByRole('button', { name: 'Show Key' }).click();
    const secret = (await page.getByTestId('secret').textContent())!;
    expect(secret).toMatch(/^sk-service-[0-9a-f]{48}$/);
    expect(await keys.authenticate(secret)).toMatchObject({ keyId: id });
    await page.getByRole('button', { name: 'Done' }).click();

    // Rotate, cancelled: nothing changes.
    await ciRow.getByRole('button', { name: 'Rotate Key' }).click();
    await dialog(page).filter({ hasText: 'Rotate Key?' }).waitFor();
    await shoot(page, 'rotate-confirm');
    await page.getByRole('button', { name: 'Cancel' }).click();
    expect(await apiStatus(secret)).toBe(200);

    // Rotate, confirmed: same row and id, a new secret shown once; the old one is refused at once.
    await ciRow.getByRole('button', { name: 'Rotate Key' }).click();
    await page.getByRole('button', { name: 'Rotate', exact: true }).click();
    await dialog(page).filter({ hasText: 'API Key Rotated' }).waitFor();
    const rotated = (await page.getByTestId('secret').textContent())!;
    expect(rotated).not.toBe(secret);
    await page.getByRole('button', { name: 'Done' }).click();
    expect(await apiStatus(secret)).toBe(401);
    expect(await apiStatus(rotated)).toBe(200);
    await expect
      .poll(() => rows(page).filter({ hasText: 'ci tool' }).getAttribute('data-key-id'), POLL)
      .toBe(id);

    // Delete, confirmed: the row is gone and the key is refused.
    await rows(page).filter({ hasText: 'ci tool' }).getByRole('button', { name: 'Delete Key' }).click();
    await dialog(page).filter({ hasText: 'Delete Key?' }).waitFor();
    await page.getByRole('button', { name: 'Delete', exact: true }).click();
    await rows(page).filter({ hasText: 'ci tool' }).waitFor({ state: 'detached' });
    expect(await apiStatus(rotated)).toBe(401);
    expect((await keys.get(owner.accountId, id))?.status).toBe('deleted');
  });

  it('CON-7 KEY-10 View Usage opens Inference API Usage filtered to that key, with its calls; CSV export', async () => {
    // Two keys call the API; the page filtered to one shows only its call.
    await page.getByRole('button', { name: 'Generate New Key' }).click();
    await page.getByLabel('Name').fill('editor');
    await page.getByLabel('Name').press('Enter');
    await dialog(page).filter({ hasText: 'API Key Created' }).waitFor();
    const editor = (await page.getByTestId('secret').textContent())!;
    await page.getByRole('button', { name: 'Done' }).click();
    const chat = (secret: string, n: number) =>
      fetch(`${platform.apiBase}/chat/completions`, {
        method: 'POST',
        headers: { authorization: `Bearer ${secret}`, 'content-type': 'application/json' },
        body: JSON.stringify({
          model: 'Meta-Llama/Llama-3.1-8B-Instruct',
          messages: [{ role: 'user', content: 'hello' }],
          max_tokens: n,
        }),
      });
    expect((await chat(editor, 5)).status).toBe(200);
    const defaultKey = await keys.show(
      owner.accountId,
      (await rows(page).first().getAttribute('data-key-id'))!,
    );
    expect((await chat(defaultKey, 5)).status).toBe(200);
    expect((await chat(defaultKey, 5)).status).toBe(200);

    const editorRow = rows(page).filter({ hasText: 'editor' });
    const editorId = await editorRow.getAttribute('data-key-id');
    await editorRow.getByRole('button', { name: 'View Usage' }).click();
    await page.getByRole('heading', { name: 'Inference API Usage' }).waitFor();
    expect(new URL(page.url()).searchParams.get('keyId')).toBe(editorId);
    await expect.poll(() => page.getByTestId('usage-filter').textContent(), POLL).toContain('editor');
    // The settlement lands on the proxy's next settle tick: poll the page, as a user would reload.
    await expect
      .poll(
        async () => {
          await page.reload();
          await page
            .locator('#usage-table tbody tr')
            .first()
            .waitFor({ timeout: 2_000 })
            .catch(() => {});
          return page.locator('#usage-table tbody tr td').first().textContent();
        },
        { timeout: 15_000 },
      )
      .toBe('1');
    await shoot(page, 'usage-filtered');
    await page.getByRole('tab', { name: 'By key' }).click();
    await expect
      .poll(() => page.locator('#usage-table tbody th').allTextContents(), POLL)
      .toEqual(['editor']);

    const [download] = await Promise.all([
      page.waitForEvent('download'),
      page.getByRole('link', { name: 'Export CSV' }).click(),
    ]);
    const csv = await (await download.createReadStream()).toArray();
    const text = Buffer.concat(csv as Buffer[]).toString();
    expect(text.split('\r\n')[0]).toBe(
      'key,label,requests,input tokens,cached tokens,output tokens,images,video seconds,cost (USD)',
    );
    expect(text).toContain(`${editorId},editor,1,`);

    // All keys: the two calls of Default are there too.
    await page.getByRole('button', { name: 'Show all keys' }).click();
    await expect
      .poll(() => page.locator('#usage-table tbody th').allTextContents(), POLL)
      .toEqual(expect.arrayContaining(['Default', 'editor']));
    await page.getByRole('tab', { name: 'By day' }).click();
    await expect.poll(() => page.locator('figure.chart svg rect').count(), POLL).toBeGreaterThan(0);
    await shoot(page, 'usage');
    await expectLedgerClean(redis, [owner.accountId]);
  });

  it('CON-4 every Sample API Implementation runs as shown: CURL, Python and TypeScript, five tasks', async () => {
    await page.goto(`${platform.consoleUrl}/api`);
    await page.getByRole('heading', { name: 'Sample API Implementation' }).waitFor();
    const secret = await keys.show(owner.accountId, (await rows(page).first().getAttribute('data-key-id'))!);
    const work = mkdtempSync(join(tmpdir(), 'mp-snippets-'));
    writeFileSync(join(work, 'input.png'), gradientPng(200, 64, 64));
    const python = execFileSync(`${repo}test/sdk/python-sdks.sh`, ['--check'], { encoding: 'utf8' }).trim();
    const env = { ...process.env, MODELPLANE_API_KEY: secret };
    const tasks = ['Text Generation', 'Image Generation', 'Image Edit', 'Video Generation', 'Image to Video'];
    const ran: string[] = [];
    for (const task of tasks) {
      await page.getByRole('tab', { name: task }).click();
      for (const language of ['CURL', 'Python', 'TypeScript']) {
        await page.getByRole('tab', { name: language, exact: true }).click();
        const snippet = page.getByTestId('snippet');
        await expect.poll(() => snippet.getAttribute('data-task'), POLL).toBe(task);
        await expect.poll(() => snippet.getAttribute('data-language'), POLL).toBe(language);
        const text = (await snippet.textContent())!;
        expect(text).toContain(platform.apiBase); // pre-filled with the endpoint
        const model = await page.getByLabel('Model').inputValue();
        expect(text).toContain(model); // and the chosen model
        const shown = `${task} / ${language}`;
        let result: { stdout: string; stderr: string };
        if (language === 'CURL') {
          result = await run('bash', ['-e', '-c', text], { cwd: work, env, timeout: 60_000 });
          const answer = JSON.parse(result.stdout) as { error?: unknown; status?: string };
          expect([shown, answer.error ?? null]).toEqual([shown, null]); // a video job carries error: null
          if (task.includes('Video')) expect(answer.status).toBe('queued');
        } else if (language === 'Python') {
          writeFileSync(join(work, 'snippet.py'), text);
          result = await run(python, ['snippet.py'], { cwd: work, env, timeout: 90_000 });
        } else {
          // In the repo, so `import 'openai'` resolves to the project's own package.
          const file = `${out}snippet-${task.replace(/\W+/g, '-').toLowerCase()}.mts`;
          writeFileSync(file, text);
          result = await run(
            process.execPath,
            ['--import', pathToFileURL(createRequire(import.meta.url).resolve('tsx')).href, file],
            {
              cwd: work,
              env,
              timeout: 90_000,
            },
          );
        }
        if (task.includes('Video') && language !== 'CURL')
          expect([shown, result.stdout.trim()]).toEqual([shown, 'completed']);
        if (task === 'Text Generation' && language !== 'CURL')
          expect(result.stdout.trim().length).toBeGreaterThan(0);
        if (task.startsWith('Image') && language !== 'CURL' && task !== 'Image to Video')
          expect([shown, result.stdout.trim()]).toEqual([shown, expect.stringMatching(/^https?:\/\//)]);
        ran.push(shown);
      }
      await shoot(page, `samples-${task.replace(/\W+/g, '-').toLowerCase()}`);
    }
    expect(ran).toHaveLength(15);
    rmSync(work, { recursive: true, force: true });
    await expectLedgerClean(redis, [owner.accountId]);
  }, 300_000);
});

describe('Key limits (issue 34)', () => {
  it("an owner sets each rate limit and a daily budget, sees the day's use and clears them; the key is held to them; a member only sees them", async () => {
    const context = await newContext();
    const page = await context.newPage();
    const owner = await newOwner('Limits Browser Co');
    const { key, secret } = await keys.create(owner.accountId, { name: 'limited tool' });
    // The account has a key already, so the first visit mints no Default.
    await signIn(page, owner.email);
    const row = rows(page).filter({ hasText: 'limited tool' });
    await row.getByRole('button', { name: 'Limits' }).click();
    const box = dialog(page).filter({ hasText: 'Limits: limited tool' });
    await box.getByTestId('budget-use').waitFor();
    expect(await box.getByTestId('budget-use').textContent()).toMatch(
      /^No budget: 0\.00 USD spent this month\.$/,
    );
    await box.getByLabel('Spend limit (USD)').fill('5');
    await box.getByLabel('Resets').selectOption('day');
    await box.getByLabel('Requests per minute').fill('1');
    await box.getByLabel('Input tokens per minute').fill('100000');
    await box.getByLabel('Output tokens per minute').fill('50000');
    await box.getByLabel('Calls at once').fill('2');
    await shoot(page, 'key-limits');
    await box.getByRole('button', { name: 'Save' }).click();
    await box.waitFor({ state: 'detached' });
    expect(await keys.get(owner.accountId, key.id)).toMatchObject({
      spendLimit: 5_000_000_000,
      spendWindow: 'day',
      rateLimits: {
        requestsPerMinute: 1,
        inputTokensPerMinute: 100_000,
        outputTokensPerMinute: 50_000,
        concurrentCalls: 2,
      },
    });
    // Held to them: one request a minute, the second refused with its own code and retry-after.
    const chat = () =>
      fetch(`${platform.apiBase}/chat/completions`, {
        method: 'POST',
        headers: { authorization: `Bearer ${secret}`, 'content-type': 'application/json' },
        body: JSON.stringify({
          model: 'Meta-Llama/Llama-3.1-8B-Instruct',
          messages: [{ role: 'user', content: 'hi' }],
          max_tokens: 3,
        }),
      });
    const first = await chat();
    expect(first.status).toBe(200);
    expect(first.headers.get('x-ratelimit-limit-requests')).toBe('1');
    const second = await chat();
    expect(second.status).toBe(429);
    expect(((await second.json()) as { error: { code: string } }).error.code).toBe('rate_limit_exceeded');
    expect(Number(second.headers.get('retry-after'))).toBeGreaterThan(0);
    // The day's use, as the ledger charged it, in the table and the dialog.
    await expectLedgerClean(redis, [owner.accountId]);
    await page.reload();
    await expect
      .poll(() => row.getByTestId('limit').textContent(), POLL)
      .toMatch(/^0\.\d+ USD of 5\.00 USD today$/);
    await row.getByRole('button', { name: 'Limits' }).click();
    await expect
      .poll(() => box.getByTestId('budget-use').textContent(), POLL)
      .toMatch(/^0\.\d+ USD of 5\.00 USD spent today; resets \d{4}-\d\d-\d\d 00:00:00 UTC\.$/);
    // What each limit has in use now: the minute's one request (a bucket of 1 a minute drains for
    // a minute), no call running.
    expect(await box.getByTestId('use-requestsPerMinute').textContent()).toBe('1 of 1 in use now');
    expect(await box.getByTestId('use-concurrentCalls').textContent()).toBe('0 of 2 in use now');

    // A member of the account sees the limits, cannot edit them (and the server would refuse).
    const member = `limits-member-${Date.now().toString(36)}@example.com`;
    const user = await new Users(redis).create({
      email: member,
      password: PASSWORD,
      accountId: owner.accountId,
    });
    await new Team(redis).add(owner.accountId, user.id, 'member');
    const memberContext = await newContext();
    const memberPage = await memberContext.newPage();
    await signIn(memberPage, member);
    await rows(memberPage)
      .filter({ hasText: 'limited tool' })
      .getByRole('button', { name: 'Limits' })
      .click();
    const seen = dialog(memberPage).filter({ hasText: 'Limits: limited tool' });
    await seen.getByTestId('budget-use').waitFor();
    expect(await seen.getByLabel('Requests per minute').inputValue()).toBe('1');
    expect(await seen.getByLabel('Requests per minute').isDisabled()).toBe(true);
    expect(await seen.getByRole('button', { name: 'Save' }).count()).toBe(0);
    await memberContext.close();

    // Cleared: the key answers as an unlimited key again (no rate-limit headers).
    await box.getByRole('button', { name: 'Clear All' }).click();
    await box.waitFor({ state: 'detached' });
    expect(await keys.get(owner.accountId, key.id)).toMatchObject({
      spendLimit: null,
      spendWindow: 'month',
      rateLimits: {
        requestsPerMinute: null,
        inputTokensPerMinute: null,
        outputTokensPerMinute: null,
        concurrentCalls: null,
      },
    });
    const after = await chat();
    expect(after.status).toBe(200);
    expect(after.headers.get('x-ratelimit-limit-requests')).toBeNull();
    await expect.poll(() => row.getByTestId('limit').count(), POLL).toBe(0);
    await expectLedgerClean(redis, [owner.accountId]);
    await context.close();
  }, 120_000);
});

describe('Billing, Pricing, Profile', () => {
  let context: BrowserContext;
  let page: Page;
  let owner: Awaited<ReturnType<typeof newOwner>>;
  beforeAll(async () => {
    context = await newContext();
    page = await context.newPage();
    owner = await newOwner('Payer Co', 'US', '0');
    await signIn(page, owner.email, '/billing');
    await page.getByRole('heading', { name: 'Billing' }).waitFor();
  });
  afterAll(async () => context?.close());

  it('CON-12 a Stripe top-up through stripe-mock, its webhook delivered twice, raises the balance once', async () => {
    await expect.poll(() => page.getByTestId('balance').textContent(), POLL).toBe('0.00 USD');
    await shoot(page, 'billing-empty');
    // The browser goes to Stripe's Checkout page: the test plays that page (no internet here).
    await context.route('https://checkout.stripe.com/**', (route) =>
      route.fulfill({ contentType: 'text/html', body: '<title>Checkout</title><h1>Stripe Checkout</h1>' }),
    );
    await page.getByLabel('Amount (USD)').fill('25');
    await page.getByLabel('How').selectOption('stripe');
    await page.getByRole('button', { name: 'Top up' }).click();
    await page.waitForURL(/checkout\.stripe\.com/);

    const [request] = await new TopUpRequests(redis).list(owner.accountId);
    expect(request).toMatchObject({ provider: 'stripe', status: 'pending', amount: 25_000_000_000 });
    const event = `evt_browser_${Date.now()}`;
    for (let i = 0; i < 2; i++) {
      const res = await deliverStripeEvent('checkout.session.completed', paidSession(request!), {
        origin: platform.consoleUrl,
        secret: WEBHOOK_SECRET,
        id: event,
      });
      expect(res.status).toBe(200);
    }
    // Stripe sends the payer back to the billing page (its success_url), which says the payment was credited.
    await page.goto(`${platform.consoleUrl}/billing?topup=${request!.id}&checkout=success`);
    await expect.poll(() => page.getByTestId('balance').textContent(), POLL).toBe('25.00 USD');
    await expect.poll(() => page.getByTestId('topup-status').first().textContent(), POLL).toBe('credited');
    await expect
      .poll(() => page.getByTestId('checkout-notice').textContent(), POLL)
      .toBe('Payment received: 25.00 USD was credited.');
    await expectLedgerClean(redis, [owner.accountId]);
  });

  it('CON-12 a top-up by operator approval waits, then the CLI approves it once', async () => {
    await page.getByLabel('Amount (USD)').fill('10');
    await page.getByLabel('How').selectOption('approval');
    await page.getByRole('button', { name: 'Top up' }).click();
    await expect.poll(() => page.getByTestId('topup-status').first().textContent(), POLL).toBe('pending');
    const [pending] = await new TopUpRequests(redis).list(owner.accountId);
    const cli = [`${repo}cli/bin.mjs`, 'topups', 'approve', pending!.id];
    const env = { ...process.env, REDIS_URL: platform.redisUrl, MODELPLANE_KEK: platform.kek };
    const first = await run(process.execPath, cli, { cwd: repo, env });
    expect(first.stdout).toMatch(/^credited\n/);
    const second = await run(process.execPath, cli, { cwd: repo, env });
    expect(second.stdout).toMatch(/^already credited; nothing was credited now\n/);
    await page.reload();
    await expect.poll(() => page.getByTestId('balance').textContent(), POLL).toBe('35.00 USD');
    await expect
      .poll(() => page.locator('section', { hasText: 'Ledger' }).locator('tbody tr').count(), POLL)
      .toBeGreaterThan(1);
    await shoot(page, 'billing');
    await expectLedgerClean(redis, [owner.accountId]);
  });

  it('CON-11 the pricing table shows every visible model with its prices in the account currency', async () => {
    await page.getByRole('link', { name: 'Pricing' }).click();
    await page.getByRole('heading', { name: 'Pricing' }).waitFor();
    await expect.poll(() => page.title(), POLL).toBe('Pricing');
    const llama = page.locator('tbody tr', { hasText: 'Meta-Llama/Llama-3.1-8B-Instruct' });
    await expect
      .poll(() => llama.locator('td').allTextContents(), POLL)
      .toEqual([
        'Text',
        '131,072',
        expect.stringMatching(/USD/),
        expect.stringMatching(/USD/),
        expect.stringMatching(/USD/),
        'Available',
      ]);
    await expect
      .poll(() => page.locator('tbody tr', { hasText: 'Coming Soon' }).count(), POLL)
      .toBeGreaterThan(0);
    await expect
      .poll(() => page.locator('tbody tr', { hasText: 'per image' }).count(), POLL)
      .toBeGreaterThan(0);
    await expect
      .poll(() => page.locator('tbody tr', { hasText: 'per second' }).count(), POLL)
      .toBeGreaterThan(0);
    await shoot(page, 'pricing');
  });

  it('CON-13 an account without a country is told why its calls get 403, and the profile sets it', async () => {
    const nomad = await newOwner('Nomad Co', null);
    const other = await newContext();
    const p = await other.newPage();
    await signIn(p, nomad.email, '/profile');
    await p.getByRole('heading', { name: 'Profile' }).waitFor();
    await expect
      .poll(() => p.getByRole('status').filter({ hasText: 'billing_currency_unset' }).count(), POLL)
      .toBe(1);
    await shoot(p, 'profile-no-country');
    await p.getByLabel('Country').selectOption('DE');
    await p.getByRole('button', { name: 'Save' }).click();
    await expect.poll(() => p.getByTestId('currency').textContent(), POLL).toBe('EUR');
    await expect
      .poll(() => p.getByRole('status').filter({ hasText: 'billing_currency_unset' }).count(), POLL)
      .toBe(0);
    await shoot(p, 'profile');
    await other.close();
  });
});

describe('Team', () => {
  it('KEY-7 removal with "Also revoke" revokes exactly that member’s keys; without it, none', async () => {
    const owner = await newOwner('Team Co');
    const ownerContext = await newContext();
    const page = await ownerContext.newPage();
    // The owner's own key, made before anyone joins (so no member's first visit mints Default).
    const ownerSecret = (await keys.create(owner.accountId, { name: 'owner key', createdBy: owner.userId }))
      .secret;
    await signIn(page, owner.email, '/team');
    await page.getByRole('heading', { name: 'Team' }).waitFor();

    const secrets: Record<string, string> = {};
    let lastLink: string | null = null;
    for (const name of ['keeper', 'leaver']) {
      const email = `${name}-${Date.now().toString(36)}@example.com`;
      await page.getByLabel('Email').fill(email);
      await page.getByRole('button', { name: 'Invite' }).click();
      // Each invitation shows its own link: wait for this one (the last one stays on screen).
      await expect.poll(() => page.getByTestId('invitation-link').textContent(), POLL).toContain('/invite/');
      await expect.poll(() => page.getByTestId('invitation-link').textContent(), POLL).not.toBe(lastLink);
      const link = (await page.getByTestId('invitation-link').textContent())!;
      lastLink = link;
      expect(link).toMatch(new RegExp(`^${platform.consoleUrl}/invite/`));
      if (name === 'keeper') await shoot(page, 'team-invited');
      // The invited person opens the link in a browser of their own and sets a password.
      const theirs = await newContext();
      const p = await theirs.newPage();
      await p.goto(link);
      await p.getByRole('heading', { name: 'Join Team Co' }).waitFor();
      if (name === 'keeper') await shoot(p, 'invitation');
      await p.getByLabel(/Choose a password/).fill(PASSWORD);
      await p.getByRole('button', { name: 'Create user and join' }).click();
      await p.getByRole('heading', { name: 'API Management' }).waitFor();
      await p.getByRole('button', { name: 'Generate New Key' }).click();
      await p.getByLabel('Name').fill(`${name}'s key`);
      await p.getByLabel('Name').press('Enter');
      await dialog(p).filter({ hasText: 'API Key Created' }).waitFor();
      secrets[name] = (await p.getByTestId('secret').textContent())!;
      await theirs.close();
    }
    await page.reload();
    await expect.poll(() => page.locator('tbody tr').count(), POLL).toBe(3);
    await shoot(page, 'team');

    const remove = async (who: string, revoke: boolean) => {
      await page.locator('tbody tr', { hasText: who }).getByRole('button', { name: 'Remove' }).click();
      await dialog(page).filter({ hasText: 'Remove member?' }).waitFor();
      const box = page.getByLabel('Also revoke the API keys this member created');
      if (revoke) await box.check();
      await expect.poll(() => box.isChecked(), POLL).toBe(revoke);
      if (revoke) await shoot(page, 'team-remove');
      await page.getByRole('button', { name: 'Remove', exact: true }).last().click();
      await page.locator('tbody tr', { hasText: who }).waitFor({ state: 'detached' });
    };
    await remove('keeper', false);
    expect(await apiStatus(secrets.keeper!)).toBe(200);
    await remove('leaver', true);
    expect(await apiStatus(secrets.leaver!)).toBe(401);
    expect(await apiStatus(secrets.keeper!)).toBe(200);
    expect(await apiStatus(ownerSecret)).toBe(200);
    await ownerContext.close();
  }, 120_000);
});

/** A call as the proxy settles it (a hold, then its charge with the call's usage); its request id. */
async function settleCall(
  metering: Metering,
  accountId: string,
  keyId: string,
  cost: number,
): Promise<string> {
  const requestId = newRequestId();
  await metering.reserve({
    accountId,
    holdId: requestId,
    min: 1,
    max: 10_000_000,
    ttlMs: 60_000,
  });
  await metering.settle({
    accountId,
    holdId: requestId,
    cost,
    usage: {
      keyId,
      model: 'Org/Chat-1',
      kind: 'chat',
      inputTokens: 12,
      cachedTokens: 4,
      outputTokens: 3,
      requestId,
    },
  });
  return requestId;
}

describe('Usage calls one by one (the durable journal)', () => {
  // A console with a journal on a real PostgreSQL (the platform above runs without one, as the
  // page must too): calls settled and refunded as the proxy and the video worker write them.
  let c: ConsoleHarness;
  let context: BrowserContext;
  let page: Page;
  beforeAll(async () => {
    c = await startConsole({}, { journal: db.journal });
    context = await newContext();
    page = await context.newPage();
  });
  afterAll(async () => {
    await context?.close();
    await c?.stop();
  });

  it('KEY-6 KEY-10 the calls table names a deleted key’s call; a refunded call looked up by request id shows its charge and refund', async () => {
    const owner = await c.newOwner('Journal Co');
    const metering = new Metering(c.redis);
    await metering.topUp({ accountId: owner.accountId, topUpId: 'seed', amount: 5_000_000_000 });
    const { key: kept } = await c.keys.create(owner.accountId, { name: 'kept key', createdBy: owner.userId });
    const { key: gone } = await c.keys.create(owner.accountId, { name: 'gone key', createdBy: owner.userId });
    const settle = (keyId: string, cost: number) => settleCall(metering, owner.accountId, keyId, cost);
    const goneCall = await settle(gone.id, 2_500_000);
    const refunded = await settle(kept.id, 4_000_000);
    await metering.refund({
      accountId: owner.accountId,
      refundId: `r-${refunded}`,
      of: `settle:${refunded}`,
      amount: 1_500_000,
      usage: { keyId: kept.id, model: 'Org/Chat-1', kind: 'chat', requestId: refunded },
    });
    // Part archived into the journal (and trimmed from Redis), part not yet: the page shows both.
    await new Archiver(c.redis, db.journal).pass();
    await settle(kept.id, 1_000_000);
    await c.keys.delete(owner.accountId, gone.id);

    await page.goto(`${c.origin}/usage`);
    await page.getByRole('heading', { name: 'Sign in' }).waitFor();
    await page.getByLabel('Email').fill(owner.email);
    await page.getByLabel('Password').fill(HARNESS_PASSWORD);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByRole('heading', { name: 'Calls one by one' }).waitFor();
    const calls = page.locator('#calls-table tbody tr');
    await expect.poll(() => calls.count(), POLL).toBe(4);
    const goneRow = calls.filter({ hasText: goneCall });
    await expect.poll(() => goneRow.getByTestId('call-key').textContent(), POLL).toBe('gone key (deleted)');
    expect(await goneRow.locator('td').allTextContents()).toEqual([
      expect.any(String),
      goneCall,
      'gone key (deleted)',
      'Org/Chat-1',
      '12 in · 4 cached · 3 out',
      '—', // how it ended: not recorded for a call settled outside the proxy
      '0.0025 USD',
    ]);
    // Issue 37 item 7: seven columns fit the page at 1440 px, the amount in view (thirteen scrolled sideways).
    await page.setViewportSize(DESKTOP);
    const fit = await page.locator('#calls-table').evaluate((e) => ({
      scroll: e.scrollWidth,
      client: e.clientWidth,
      right: e.getBoundingClientRect().right,
    }));
    expect(fit.scroll).toBeLessThanOrEqual(fit.client);
    const amountCell = await goneRow
      .getByTestId('call-amount')
      .evaluate((e) => e.getBoundingClientRect().right);
    expect(amountCell).toBeLessThanOrEqual(fit.right);
    // The chart has a slot for each of the range's 30 days: today's calls are one slim bar, not one across it.
    const bars = page.locator('figure.chart svg rect');
    await expect.poll(() => bars.count(), POLL).toBe(30);
    const heights = await bars.evaluateAll((rs) => rs.map((r) => Number(r.getAttribute('height'))));
    expect(heights.filter((h) => h > 0)).toHaveLength(1);
    expect(await bars.last().getAttribute('width')).toMatch(/^\d+(\.\d+)?$/);
    expect(Number(await bars.last().getAttribute('width'))).toBeLessThan(640 / 20);
    await shoot(page, 'usage-calls');

    // The refunded call, from its row's request id: its charge and its refund.
    await page
      .locator('#calls-table tbody tr[data-type="charge"]')
      .filter({ hasText: refunded })
      .getByRole('button', { name: refunded })
      .click();
    const lookup = page.getByTestId('request-lookup');
    await expect
      .poll(
        () => lookup.locator('tbody tr').evaluateAll((rs) => rs.map((r) => r.getAttribute('data-type'))),
        POLL,
      )
      .toEqual(['charge', 'refund']);
    expect(await lookup.getByTestId('call-amount').allTextContents()).toEqual(['0.004 USD', '−0.0015 USD']);
    // The lookup lists every figure of each transfer.
    const figures = await lookup.getByTestId('call-figures').first().locator('div').allTextContents();
    expect(figures).toEqual(
      expect.arrayContaining(['Input tokens12', 'Cached tokens4', 'Output tokens3', 'Cost0.004']),
    );
    expect(new URL(page.url()).searchParams.get('request')).toBe(refunded);
    await shoot(page, 'usage-call-lookup');

    // The billing page's refund links to the same lookup.
    await page.goto(`${c.origin}/billing`);
    // Every amount on Billing has one number of decimals (issue 37 item 7: 7 beside 2 read badly).
    await page.getByTestId('balance').filter({ hasText: 'USD' }).waitFor(POLL);
    await page.getByRole('link', { name: refunded }).waitFor(POLL);
    const cells = await page.locator('main .card .big, main table td').allTextContents();
    const amounts = cells.filter((t) => /^-?[\d,]+\.\d+ USD$/.test(t));
    expect(amounts.length).toBeGreaterThan(4);
    expect(new Set(amounts.map((a) => a.split('.')[1]!.length)).size).toBe(1);
    await page.getByRole('link', { name: refunded }).click();
    await expect.poll(() => page.getByTestId('request-lookup').locator('tbody tr').count(), POLL).toBe(2);

    // Fifty more calls: the table shows the newest 50, Load more the older four.
    const newer: string[] = [];
    for (let i = 0; i < 50; i++) newer.push(await settle(kept.id, 10_000));
    await page.goto(`${c.origin}/usage`);
    await expect.poll(() => calls.count(), POLL).toBe(50);
    // Calls in the same millisecond are ordered by id, so the set, not the order, is compared.
    expect((await calls.locator('td:nth-child(2)').allTextContents()).sort()).toEqual([...newer].sort());
    await page.getByRole('button', { name: 'Load more' }).click();
    await expect.poll(() => calls.count(), POLL).toBe(54);
    await expect(page.getByRole('button', { name: 'Load more' }).count()).resolves.toBe(0);
    expect(await calls.filter({ hasText: goneCall }).count()).toBe(1);
    await expectLedgerClean(c.redis, [owner.accountId], 5_000, db.journal);
  });

  it('issue 37 item 7: how each call ended, in its row and its dialog; refused calls at zero cost; the key table’s last use and month spend', async () => {
    const owner = await c.newOwner('Facts Co');
    const metering = new Metering(c.redis);
    await metering.topUp({ accountId: owner.accountId, topUpId: 'seed', amount: 1_000_000_000 });
    const { key } = await c.keys.create(owner.accountId, { name: 'used key', createdBy: owner.userId });
    await c.keys.create(owner.accountId, { name: 'idle key', createdBy: owner.userId });
    const requestId = await settleCall(metering, owner.accountId, key.id, 3_000_000);
    // As the proxy records them when the responses end (proxy/plugins/call-facts.ts).
    await recordCallFact(
      c.redis,
      owner.accountId,
      { requestId, keyId: key.id },
      { status: 200, latencyMs: 1830, ttftMs: 212, finishReason: 'length' },
    );
    const refusedId = newRequestId();
    await recordRefused(c.redis, owner.accountId, {
      requestId: refusedId,
      status: 400,
      code: 'invalid_request',
      latencyMs: 3,
      keyId: key.id,
      model: 'Org/Chat-1',
      route: '/v1/chat/completions',
    });
    // A context of its own: the one above is signed in as another account.
    const own = await newContext();
    const p = await own.newPage();
    await p.goto(`${c.origin}/usage`);
    await p.getByLabel('Email').fill(owner.email);
    await p.getByLabel('Password').fill(HARNESS_PASSWORD);
    await p.getByRole('button', { name: 'Sign in' }).click();
    const row = p.locator('#calls-table tbody tr').filter({ hasText: requestId });
    await expect
      .poll(() => row.getByTestId('call-result').textContent(), POLL)
      .toBe('200 · length1.83 s · first token 212 ms');
    // Still fits at desktop width with the amount in view.
    const fit = await p
      .locator('#calls-table')
      .evaluate((e) => ({ scroll: e.scrollWidth, client: e.clientWidth }));
    expect(fit.scroll).toBeLessThanOrEqual(fit.client);
    await row.getByRole('button', { name: requestId }).click();
    const figures = dialog(p).getByTestId('call-figures');
    await expect
      .poll(() => figures.locator('div').allTextContents(), POLL)
      .toEqual(
        expect.arrayContaining([
          'HTTP status200',
          'Finish reasonlength',
          'Latency1.83 s',
          'Time to first token212 ms',
        ]),
      );
    await p.keyboard.press('Escape');
    await expect.poll(() => dialog(p).count(), POLL).toBe(0);

    // Refused calls: their own view, never charged; a row opens what was kept of it.
    await p.getByLabel('Show').selectOption('refused');
    const refused = p.getByTestId('refused-row');
    await expect.poll(() => refused.count(), POLL).toBe(1);
    expect(await refused.locator('td').allTextContents()).toEqual([
      expect.any(String),
      refusedId,
      'used key',
      'Org/Chat-1',
      '400 invalid_request',
      '0',
    ]);
    await refused.getByRole('button', { name: refusedId }).click();
    await expect
      .poll(() => dialog(p).getByTestId('refused-figures').locator('div').allTextContents(), POLL)
      .toEqual(expect.arrayContaining(['Error codeinvalid_request', 'Route/v1/chat/completions']));
    await shoot(p, 'usage-refused');
    await dialog(p).getByRole('button', { name: 'Close' }).click();

    // The key table: every key's last use and this month's spend, under its name (SPEC's four columns),
    // in the one money format (issue 48 item 8): two decimals, so 0.003 reads 0.00.
    await p.goto(`${c.origin}/api`);
    const keyRow = (name: string) => p.locator('#keys-table tbody tr').filter({ hasText: name });
    await expect
      .poll(() => keyRow('used key').getByTestId('month-spend').textContent(), POLL)
      .toBe('0.00 USD');
    expect(await keyRow('used key').getByTestId('last-used').textContent()).toMatch(/^last used /);
    expect(await keyRow('idle key').getByTestId('last-used').textContent()).toBe('never used');
    expect(await keyRow('idle key').getByTestId('month-spend').textContent()).toBe('0.00 USD');
    await own.close();
    await expectLedgerClean(c.redis, [owner.accountId], 5_000, db.journal);
  });

  it('without a journal the usage page says calls one by one need it, and the daily figures still show', async () => {
    const who = await newOwner('No Journal Co');
    const p = await context.newPage();
    await signIn(p, who.email, '/usage');
    await p.getByRole('heading', { name: 'Inference API Usage' }).waitFor();
    await expect
      .poll(() => p.getByTestId('calls-unavailable').textContent(), POLL)
      .toMatch(/needs the durable journal/);
    expect(await p.locator('#calls-table').count()).toBe(0);
    await p.locator('#usage-table').waitFor();
    await p.close();
  });
});

describe('every page', () => {
  it('has a title, works at phone width, and the API reference renders the proxy’s OpenAPI', async () => {
    const context = await newContext();
    const page = await context.newPage();
    await signIn(page, (await newOwner('Tour Co')).email);
    await page.getByRole('heading', { name: 'API Management' }).waitFor();
    const titles: Record<string, string> = {
      '/playground': 'Playground',
      '/usage': 'Inference API Usage',
      '/pricing': 'Pricing',
      '/billing': 'Billing',
      '/team': 'Team',
      '/profile': 'Profile',
      '/nowhere': 'Page not found',
    };
    for (const [path, title] of Object.entries(titles)) {
      await page.goto(`${platform.consoleUrl}${path}`);
      await page.getByRole('heading', { name: title, level: 1 }).waitFor();
      if (path === '/nowhere') meantRefusals++; // the page itself comes with a 404 status
      await expect.poll(() => page.title(), POLL).toBe(title);
      // The skip link is the first stop of the keyboard and lands on the page's content.
      await page.keyboard.press('Tab');
      await expect
        .poll(() => page.evaluate(() => document.activeElement?.textContent), POLL)
        .toBe('Skip to content');
    }
    await page.goto(`${platform.consoleUrl}/docs`);
    await expect.poll(() => page.title(), POLL).toBe('API Reference');
    await page
      .getByText('/v1/chat/completions')
      .first()
      .waitFor({ timeout: 30_000 })
      .catch(async (err) => {
        await page.screenshot({ path: `${out}docs-failed.png` });
        throw new Error(`${(err as Error).message}\n${consoleErrors.join('\n')}`);
      });
    await shoot(page, 'api-reference');
    await context.close();
  }, 60_000);

  it('no page wrote an error to the browser console (beyond the refusals the tests provoked)', () => {
    const refused = consoleErrors.filter((e) =>
      /Failed to load resource: the server responded with a status of 4\d\d/.test(e),
    );
    expect(consoleErrors.filter((e) => !refused.includes(e))).toEqual([]);
    expect([refused.length, refused]).toEqual([meantRefusals, refused]);
  });
});
