// Compare with several prompts (issue 37 item 4), in Debian's Chromium through playwright-core
// against the platform started as `make dev` starts it (the example models on the simulator).
// Three prompts in two columns (the example Llama and a copy of it): every prompt reaches every column's model (the page's own calls
// are watched), each result is laid out in its prompt's row — level across the columns — with its
// own cost, and the results add up to the run's balance change; the prompts travel in the copied
// link, a prompt is removed, and the ledger check ends it. 1440×900 and 390×844.
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { BrowserContext, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse as parseYaml, stringify as stringifyYaml } from 'yaml';
import { Metering } from '../../core/billing/index.ts';
import { parseDecimalToNano } from '../../core/money.ts';
import {
  type BrowserPlatform,
  DESKTOP,
  exampleModels,
  newOwner,
  shoot,
  signIn,
  startBrowserPlatform,
} from '../helpers/browser.ts';
import { ensureConsoleWeb } from '../helpers/console-web.ts';
import { expectLedgerClean } from '../helpers/ledger.ts';

const repo = new URL('../../', import.meta.url).pathname;
const out = `${repo}test/out/`;
const POLL = { timeout: 30_000 };
const LLAMA = 'Meta-Llama/Llama-3.1-8B-Instruct';
/** A second text model on the simulator (the example's other, DeepSeek, is invite-only). */
const SECOND = 'Test/Chat-Two';
const PROMPTS = ['Name a colour', 'Name a river', 'Name a mountain'];

let started: BrowserPlatform;
let models: ReturnType<typeof exampleModels>;

beforeAll(async () => {
  await ensureConsoleWeb();
  models = exampleModels('mp-playground-compare-');
  const llama = parseYaml(readFileSync(join(models.modelsDir, 'llama-3.1-8b-instruct.yaml'), 'utf8')) as {
    metadata: { name: string };
    spec: { id: string };
  };
  llama.metadata.name = 'chat-two';
  llama.spec.id = SECOND;
  writeFileSync(join(models.modelsDir, 'chat-two.yaml'), stringifyYaml(llama));
  started = await startBrowserPlatform({ ...models, env: {}, log: () => {} });
  mkdirSync(out, { recursive: true });
}, 300_000);

afterAll(async () => {
  await started?.stop();
  models?.remove();
}, 60_000);

describe('Compare with several prompts (issue 37 item 4)', () => {
  let context: BrowserContext;
  let page: Page;
  let owner: Awaited<ReturnType<typeof newOwner>>;
  const errors: string[] = [];
  /** The Compare calls the page made: model and the user's prompt. */
  const sent: { model: string; prompt: string }[] = [];

  beforeAll(async () => {
    context = await started.browser.newContext({ viewport: DESKTOP });
    await context.grantPermissions(['clipboard-read', 'clipboard-write']);
    page = await context.newPage();
    page.on('pageerror', (e) => errors.push(e.message));
    page.on('request', (r) => {
      if (r.method() !== 'POST' || !/\/v1\/(chat\/completions|messages)$/.test(r.url())) return;
      const body = JSON.parse(r.postData() ?? '{}') as {
        model: string;
        messages: { role: string; content: string }[];
      };
      sent.push({
        model: body.model,
        prompt: body.messages.filter((m) => m.role === 'user').at(-1)!.content,
      });
    });
    owner = await newOwner(started.redis, 'Compare Co');
    const q = new URLSearchParams([
      ['tab', 'compare'],
      ['model', LLAMA],
      ['model', SECOND],
    ]);
    await signIn(page, started.platform.consoleUrl, owner.email, `/playground?${q}`);
    await page.getByRole('heading', { name: 'Compare models' }).waitFor(POLL);
    await page.locator('button:has-text("Run all"):not([disabled])').waitFor(POLL);
  }, 60_000);
  afterAll(async () => context?.close());

  it('every prompt runs in every column; results sit in one row per prompt, each with its cost, adding up to the balance change', async () => {
    await page.getByLabel(/^Prompt/).fill(PROMPTS[0]!);
    for (const text of PROMPTS.slice(1)) {
      await page.getByRole('button', { name: 'Add a prompt' }).click();
      await page
        .getByLabel(/^Prompt \d/)
        .last()
        .fill(text);
    }
    for (const [k, text] of PROMPTS.entries())
      expect(await page.getByLabel(`Prompt ${k + 1}`, { exact: false }).inputValue()).toBe(text);
    const metering = new Metering(started.redis);
    const before = (await metering.balance(owner.accountId)).balance;
    await page.getByRole('button', { name: 'Run all' }).click();
    await expect
      .poll(() => page.locator('[data-testid="column-reply"][data-done="true"]').count(), { timeout: 90_000 })
      .toBe(6);
    // Each (model, prompt) pair was asked once.
    expect(sent.map((s) => `${s.model} | ${s.prompt}`).sort()).toEqual(
      [LLAMA, SECOND].flatMap((m) => PROMPTS.map((p) => `${m} | ${p}`)).sort(),
    );
    const columns = page.getByTestId('column');
    for (let i = 0; i < 2; i++) {
      const results = columns.nth(i).getByTestId('result');
      expect(await results.count()).toBe(3);
      for (let k = 0; k < 3; k++) {
        expect(await results.nth(k).locator('.result-prompt').textContent()).toBe(
          `Prompt ${k + 1}: ${PROMPTS[k]}`,
        );
        expect((await results.nth(k).getByTestId('column-reply').textContent())!.length).toBeGreaterThan(0);
      }
    }
    // Laid out per prompt: a prompt's results start at one height in both columns.
    const tops = await columns.evaluateAll((cs) =>
      cs.map((c) =>
        [...c.querySelectorAll('[data-testid="result"]')].map((r) =>
          Math.round(r.getBoundingClientRect().top),
        ),
      ),
    );
    expect(tops[1]).toEqual(tops[0]);
    // Six exact costs, adding up to the run's balance change.
    await page.getByTestId('compare-total').waitFor(POLL);
    const costs = await page
      .getByTestId('columns')
      .getByTestId('cost')
      .evaluateAll((ds) => ds.map((d) => d.getAttribute('data-cost') ?? ''));
    expect(costs).toHaveLength(6);
    const total = /All columns: ([\d.,]+) USD/.exec(
      (await page.getByTestId('compare-total').textContent())!,
    )![1]!;
    const sum = costs.reduce((s, c) => s + parseDecimalToNano(c), 0);
    expect(sum).toBe(parseDecimalToNano(total.replaceAll(',', '')));
    await expect.poll(async () => (await metering.balance(owner.accountId)).held, POLL).toBe(0);
    expect(before - (await metering.balance(owner.accountId)).balance).toBe(sum);
    await shoot(page, `${out}playground-compare-prompts`);
  }, 150_000);

  it('the prompts travel in the copied link, in order; removing one keeps the others', async () => {
    await page.getByRole('button', { name: 'Copy the link to this set-up' }).click();
    const link = await page.evaluate(() => navigator.clipboard.readText());
    expect(new URL(link).searchParams.getAll('prompt')).toEqual(PROMPTS);
    const other = await context.newPage();
    await other.goto(link);
    await other.getByRole('heading', { name: 'Compare models' }).waitFor(POLL);
    for (const [k, text] of PROMPTS.entries())
      expect(await other.getByLabel(`Prompt ${k + 1}`, { exact: false }).inputValue()).toBe(text);
    await other.getByRole('button', { name: 'Remove prompt 2' }).click();
    expect(
      await other
        .getByLabel(/^Prompt \d/)
        .evaluateAll((ts) => ts.map((t) => (t as HTMLTextAreaElement).value)),
    ).toEqual([PROMPTS[0], PROMPTS[2]]);
    expect(new URL(other.url()).searchParams.getAll('prompt')).toEqual([PROMPTS[0], PROMPTS[2]]);
    await other.close();
    expect(errors).toEqual([]);
    await expectLedgerClean(started.redis, [owner.accountId]);
  }, 60_000);
});
