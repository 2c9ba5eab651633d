// What a Playground user sees of a reply and of a refusal (issue 48 items 6, 7 and 10's Compare),
// in Debian's Chromium through playwright-core against the platform as `make dev` starts it, at
// 1440×900 and 390×844. A small real engine on loopback (an external Model) streams a reply taller
// than the window, one paragraph every 40 ms, so a test can watch the newest text while it streams:
// it must stay above the sticky message box during and after each turn, with its metrics and
// buttons. Each refusal is provoked for real at the proxy (a key's spend limit, the account's
// budget, a key's rate limit, no credit) and must be headed with its own cause and what to do.
// Compare's results must come into view when Run all is clicked. Money ends with the ledger check.
import { mkdirSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { BrowserContext, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Accounts } from '../../core/accounts/accounts.ts';
import {
  addExternalChatModel,
  type BrowserPlatform,
  DESKTOP,
  exampleModels,
  newOwner,
  PHONE,
  shoot,
  signIn,
  startBrowserPlatform,
} from '../helpers/browser.ts';
import { ensureConsoleWeb } from '../helpers/console-web.ts';
import { expectLedgerClean } from '../helpers/ledger.ts';

const repo = new URL('../../', import.meta.url).pathname;
const out = `${repo}test/out/`;
const LONG = 'Test/Long-Writer';
const LLAMA = 'Meta-Llama/Llama-3.1-8B-Instruct';
const POLL = { timeout: 20_000 };
/** Paragraphs of the long reply: well over a window's height at either width. */
const PARAGRAPHS = 36;

let started: BrowserPlatform;
let models: ReturnType<typeof exampleModels>;
let engine: Server;

/** An engine whose every chat completion streams PARAGRAPHS paragraphs, one each 40 ms, then its usage. */
async function startLongEngine(): Promise<Server> {
  const server = createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      if (req.method !== 'POST' || !req.url?.endsWith('/chat/completions')) {
        res.writeHead(404).end();
        return;
      }
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      const base = { id: 'chatcmpl-long', object: 'chat.completion.chunk', created: 1, model: LONG };
      const frame = (rest: object) => res.write(`data: ${JSON.stringify({ ...base, ...rest })}\n\n`);
      frame({ choices: [{ index: 0, delta: { role: 'assistant', content: '' }, finish_reason: null }] });
      let i = 0;
      const timer = setInterval(() => {
        if (res.destroyed) return clearInterval(timer);
        i++;
        frame({
          choices: [
            { index: 0, delta: { content: `Paragraph ${i} of the long reply.\n\n` }, finish_reason: null },
          ],
        });
        if (i < PARAGRAPHS) return;
        clearInterval(timer);
        frame({ choices: [{ index: 0, delta: {}, finish_reason: 'stop' }] });
        frame({ choices: [], usage: { prompt_tokens: 9, completion_tokens: 7 * PARAGRAPHS } });
        res.end('data: [DONE]\n\n');
      }, 40);
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return server;
}

beforeAll(async () => {
  await ensureConsoleWeb();
  models = exampleModels('mp-playground-view-');
  engine = await startLongEngine();
  addExternalChatModel(models.modelsDir, {
    name: 'long-writer',
    id: LONG,
    url: `http://127.0.0.1:${(engine.address() as AddressInfo).port}`,
  });
  started = await startBrowserPlatform({ ...models, env: {}, log: () => {} });
  mkdirSync(out, { recursive: true });
}, 300_000);

afterAll(async () => {
  await started?.stop();
  engine?.close();
  models?.remove();
}, 60_000);

/** A signed-in owner (with `credit` USD) on the Playground's Run tab with `model` chosen. */
async function onRun(name: string, credit: string, model = LONG) {
  const owner = await newOwner(started.redis, name, { credit });
  const context: BrowserContext = await started.browser.newContext({ viewport: DESKTOP });
  const page = await context.newPage();
  await signIn(page, started.platform.consoleUrl, owner.email, '/playground');
  await page.getByRole('heading', { name: 'Playground', level: 1 }).waitFor();
  await page.getByRole('tab', { name: 'Run' }).click();
  await page.getByRole('heading', { name: 'Run a prompt' }).waitFor();
  await expect.poll(() => page.getByLabel('Model').locator(`option[value="${model}"]`).count(), POLL).toBe(1);
  await page.getByLabel('Model').selectOption(model);
  await expect.poll(async () => (await started.keys.list(owner.accountId)).length, POLL).toBe(1);
  const key = (await started.keys.list(owner.accountId))[0]!;
  return { owner, context, page, key };
}

/**
 * How far the newest message's end (and, once it ended, its Regenerate button) is below the top
 * of the message box, in CSS pixels (≤ 0: in view above it), and whether its top edge is still on
 * screen or above it (a reply taller than the window shows its newest part). Read after two
 * animation frames, so what a person sees is measured, not a frame in between.
 */
const hiddenBy = (page: Page) =>
  page.evaluate(async () => {
    await new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r)));
    const all = document.querySelectorAll<HTMLElement>('[data-testid="message"]');
    const last = all[all.length - 1]!;
    const composer = document.querySelector<HTMLElement>('.composer')!.getBoundingClientRect();
    const button = [...last.querySelectorAll('button')].find((b) => b.textContent === 'Regenerate');
    const end = Math.max(last.getBoundingClientRect().bottom, button?.getBoundingClientRect().bottom ?? 0);
    return { below: Math.round(end - composer.top), onScreen: end > 0 };
  });

describe('issue 48 item 6: the newest reply stays in view above the message box', () => {
  for (const [width, viewport] of [
    ['desktop', DESKTOP],
    ['phone', PHONE],
  ] as const)
    it(`at ${width} width, during and after each of two turns, the newest text, its metrics and its buttons are above the message box`, async () => {
      const { owner, context, page } = await onRun(`Thread ${width} Co`, '20');
      await page.setViewportSize(viewport);
      for (const turn of [1, 2]) {
        await page.getByLabel(/^Message/).fill(`Write at length, turn ${turn}`);
        await page.getByRole('button', { name: 'Run' }).click();
        await page.getByRole('button', { name: 'Stop' }).waitFor(POLL);
        // While it streams: every look finds the newest text above the box.
        const seen: number[] = [];
        while ((await page.getByRole('button', { name: 'Stop' }).count()) === 1) {
          const h = await hiddenBy(page);
          seen.push(h.below);
          await page.waitForTimeout(150);
        }
        expect(seen.length).toBeGreaterThan(3);
        expect(Math.max(...seen), `during turn ${turn}: ${seen.join(' ')}`).toBeLessThanOrEqual(1);
        // After it ended: the reply's metrics and cost arrive, and it, with Regenerate, stays in view.
        const last = page.locator('[data-testid="message"]').last();
        await expect.poll(() => last.getByTestId('cost').getAttribute('data-cost'), POLL).not.toBe('');
        expect(await last.getByTestId('reply').textContent()).toContain(`Paragraph ${PARAGRAPHS} of`);
        const after = await hiddenBy(page);
        expect([turn, after.below <= 1, after.onScreen]).toEqual([turn, true, true]);
      }
      await page.screenshot({ path: `${out}playground-thread-in-view-${width}.png` });
      await expectLedgerClean(started.redis, [owner.accountId]);
      await context.close();
    }, 120_000);
});

describe('issue 48 item 7: each refusal is headed with its own cause and what to do', () => {
  it('a key over its spend limit, the account budget, a rate limit and no credit each say so; none of the first three says the credit is used up', async () => {
    const { owner, context, page, key } = await onRun('Refusals Co', '117', LLAMA);
    const accounts = new Accounts(started.redis);
    const box = page.getByTestId('error');
    const refusal = async () => {
      await page.getByLabel(/^Message/).fill('hello');
      await page.getByRole('button', { name: 'Run' }).click();
      await box.waitFor(POLL);
      const heading = (await box.locator('strong').textContent())!;
      const whole = (await box.textContent())!;
      return { heading, whole };
    };

    // The key's own spend limit, with 117 USD on the account.
    await started.keys.setSpendLimit(owner.accountId, key.id, 0);
    const limit = await refusal();
    expect(limit.heading).toBe('This key’s monthly spend limit is reached.');
    expect(limit.whole).toMatch(/Spend Limit on API Management/);
    expect(limit.whole).toMatch(/another key/);
    expect(limit.whole).not.toMatch(/credit is used up/);
    await shoot(page, `${out}playground-error-key-limit`);
    await started.keys.setSpendLimit(owner.accountId, key.id, null);

    // The account's budget across its keys.
    await accounts.setBudget(owner.accountId, 0, 'day');
    await page.getByRole('button', { name: 'Run' }).waitFor(POLL);
    const budget = await refusal();
    expect(budget.heading).toBe('The account’s daily budget is reached.');
    expect(budget.whole).toMatch(/owner .* Billing/);
    expect(budget.whole).not.toMatch(/credit is used up/);
    await shoot(page, `${out}playground-error-account-budget`);
    await accounts.setBudget(owner.accountId, null);

    // A rate limit of the key: the first call passes, the second is refused.
    await started.keys.setRateLimits(owner.accountId, key.id, { requestsPerMinute: 1 });
    await page.getByLabel(/^Message/).fill('one call');
    await page.getByRole('button', { name: 'Run' }).click();
    await expect.poll(() => page.locator('[data-testid="message"]').count(), POLL).toBe(2);
    await page.getByRole('button', { name: 'Run' }).waitFor(POLL);
    const rate = await refusal();
    expect(rate.heading).toBe('This key’s rate limit is reached.');
    expect(rate.whole).toMatch(/Wait \d+ s/);
    expect(rate.whole).toMatch(/Limits on API Management/);
    await shoot(page, `${out}playground-error-rate-limit`);
    await context.close();

    // No credit at all: that one says the credit is used up.
    const broke = await onRun('Broke Co', '0', LLAMA);
    await broke.page.getByLabel(/^Message/).fill('hello');
    await broke.page.getByRole('button', { name: 'Run' }).click();
    await broke.page.getByTestId('error').waitFor(POLL);
    expect(await broke.page.getByTestId('error').locator('strong').textContent()).toBe(
      'The account’s credit is used up.',
    );
    await broke.context.close();
    await expectLedgerClean(started.redis, [owner.accountId, broke.owner.accountId]);
  }, 120_000);
});

describe("issue 48 item 10: Compare's results come into view on Run all", () => {
  for (const [width, viewport] of [
    ['desktop', DESKTOP],
    ['phone', PHONE],
  ] as const)
    it(`at ${width} width, with five prompts, Run all brings the first prompt's results into view, Stop all still at hand`, async () => {
      const { owner, context, page } = await onRun(`Compare ${width} Co`, '20');
      await page.setViewportSize(viewport);
      await page.getByRole('tab', { name: 'Compare' }).click();
      await page.getByRole('heading', { name: 'Compare models' }).waitFor();
      const columns = page.getByTestId('column');
      await columns.nth(0).getByLabel('Model').selectOption(LONG);
      await columns.nth(1).getByLabel('Model').selectOption(LLAMA);
      // Five prompts (the most): the results start under them and the columns' settings.
      for (let k = 1; k < 5; k++) await page.getByRole('button', { name: 'Add a prompt' }).click();
      for (let k = 1; k <= 5; k++) await page.getByLabel(new RegExp(`^Prompt ${k}`)).fill(`Prompt ${k}`);
      await page.evaluate(() => window.scrollTo(0, 0));
      await page.getByRole('button', { name: 'Run all' }).click();
      // The first result's reply is on screen, with room to read it.
      await expect
        .poll(
          () =>
            page.evaluate(async () => {
              await new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r)));
              const reply = document.querySelector('[data-testid="column-reply"]')!.getBoundingClientRect();
              // On screen with room to read: two thirds of the window or more are below its top.
              const inView = reply.top >= 0 && reply.top < window.innerHeight / 3;
              return inView || `reply at ${Math.round(reply.top)} px of ${window.innerHeight}`;
            }),
          { timeout: 3_000 },
        )
        .toBe(true);
      // And Stop all is still at hand, above them.
      const stop = await page.getByRole('button', { name: 'Stop all' }).boundingBox();
      expect(stop !== null && stop.y >= 0 && stop.y + stop.height <= viewport.height).toBe(true);
      await page.screenshot({ path: `${out}playground-compare-in-view-${width}.png` });
      await expect
        .poll(() => page.locator('[data-testid="column-reply"][data-done="true"]').count(), {
          timeout: 60_000,
        })
        .toBe(10);
      await expectLedgerClean(started.redis, [owner.accountId]);
      await context.close();
    }, 120_000);
});
