// The console's Batches page (issue 35 item 5), in Debian's Chromium through playwright-core against
// the platform started as `make dev` starts it. Batches are made through the official openai SDK
// against the real proxy: one on the example chat model (the operator's simulator) runs to the end
// and the page shows its counts and cost and hands out its output file; two more run on a model
// whose engine (a small real server on loopback) holds every call until the test lets go, so they
// are still running when the page cancels them — a member cancels the batch of their own key and
// may not cancel the owner's (no button, and a 403 when asked anyway), the owner cancels that one.
// Each batch is charged for the lines that finished and no more: the ledger check ends the file.
import { mkdirSync, readFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import Anthropic from '@anthropic-ai/sdk';
import OpenAI, { toFile } from 'openai';
import type { BrowserContext, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Team } from '../../core/accounts/team.ts';
import { Users } from '../../core/accounts/users.ts';
import {
  addExternalChatModel,
  type BrowserPlatform,
  DESKTOP,
  exampleModels,
  newOwner,
  PASSWORD,
  shoot,
  signIn,
  startBrowserPlatform,
} from '../helpers/browser.ts';
import { ensureConsoleWeb } from '../helpers/console-web.ts';
import { expectLedgerClean } from '../helpers/ledger.ts';

const repo = new URL('../../', import.meta.url).pathname;
const out = `${repo}test/out/`;
const POLL = { timeout: 60_000 };
const CHAT = 'Meta-Llama/Llama-3.1-8B-Instruct';
/** Two models on the held engine: a model runs one batch line at a time here (BATCH_CONCURRENCY). */
const HELD = 'Test/Held-Chat';
const HELD_TOO = 'Test/Held-Chat-Too';

let started: BrowserPlatform;
let models: ReturnType<typeof exampleModels>;
let engine: Server;
/** Calls the held engine is holding: each answers when the test lets go. */
const holding: (() => void)[] = [];
let letGo = false;

/** Answers a chat completion (streamed or not) — once the test lets go. */
async function startHeldEngine(): Promise<Server> {
  const server = createServer((req, res) => {
    let raw = '';
    req.on('data', (c: Buffer) => {
      raw += c.toString();
    });
    req.on('end', () => {
      if (req.method !== 'POST' || !req.url?.endsWith('/chat/completions')) {
        res.writeHead(404).end();
        return;
      }
      const body = JSON.parse(raw) as { stream?: boolean };
      const usage = { prompt_tokens: 10, completion_tokens: 5, total_tokens: 15 };
      const answer = () => {
        if (!body.stream) {
          res.writeHead(200, { 'content-type': 'application/json' }).end(
            JSON.stringify({
              id: 'chatcmpl-held',
              object: 'chat.completion',
              created: 1,
              model: 'held',
              choices: [
                { index: 0, message: { role: 'assistant', content: 'Held.' }, finish_reason: 'stop' },
              ],
              usage,
            }),
          );
          return;
        }
        res.writeHead(200, { 'content-type': 'text/event-stream' });
        const base = { id: 'chatcmpl-held', object: 'chat.completion.chunk', created: 1, model: 'held' };
        const frame = (rest: object) => res.write(`data: ${JSON.stringify({ ...base, ...rest })}\n\n`);
        frame({
          choices: [{ index: 0, delta: { role: 'assistant', content: 'Held.' }, finish_reason: null }],
        });
        frame({ choices: [{ index: 0, delta: {}, finish_reason: 'stop' }] });
        frame({ choices: [], usage });
        res.end('data: [DONE]\n\n');
      };
      if (letGo) answer();
      else holding.push(answer);
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return server;
}

beforeAll(async () => {
  await ensureConsoleWeb();
  models = exampleModels('mp-batches-page-');
  const { dataDir, modelsDir } = models;
  engine = await startHeldEngine();
  const url = `http://127.0.0.1:${(engine.address() as AddressInfo).port}`;
  const spec = { batchDiscountPercent: 50, pricing: { USD: { input: '1', output: '2' } } };
  addExternalChatModel(modelsDir, { name: 'held-chat', id: HELD, url, spec });
  addExternalChatModel(modelsDir, { name: 'held-chat-too', id: HELD_TOO, url, spec });
  // One line at a time per model: a held batch has one line running and the rest waiting, so a
  // cancel leaves lines that never ran.
  started = await startBrowserPlatform({
    dataDir,
    modelsDir,
    env: { BATCH_CONCURRENCY: '1', BATCH_POLL_MS: '100' },
    log: () => {},
  });
  mkdirSync(out, { recursive: true });
}, 300_000);

afterAll(async () => {
  letGo = true;
  for (const answer of holding.splice(0)) answer();
  await started?.stop();
  engine?.close();
  models?.remove();
}, 60_000);

const lines = (prefix: string, model: string, n: number) =>
  Array.from({ length: n }, (_, i) =>
    JSON.stringify({
      custom_id: `${prefix}-${i}`,
      method: 'POST',
      url: '/v1/chat/completions',
      body: { model, messages: [{ role: 'user', content: `Say ${i}` }], max_tokens: 8 },
    }),
  ).join('\n');

async function batch(client: OpenAI, prefix: string, model: string, n: number) {
  const file = await client.files.create({
    file: await toFile(Buffer.from(lines(prefix, model, n)), `${prefix}.jsonl`),
    purpose: 'batch',
  });
  return client.batches.create({
    input_file_id: file.id,
    endpoint: '/v1/chat/completions',
    completion_window: '24h',
  });
}

async function ended(client: OpenAI, id: string) {
  for (let i = 0; i < 1200; i++) {
    const b = await client.batches.retrieve(id);
    if (['completed', 'failed', 'expired', 'cancelled'].includes(b.status)) return b;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`batch ${id} did not end`);
}

describe('the Batches page (issue 35 item 5)', () => {
  let owner: Awaited<ReturnType<typeof newOwner>>;
  let memberEmail: string;
  let ownerClient: OpenAI;
  let memberClient: OpenAI;
  let ownerSecret: string;
  let ownerContext: BrowserContext;
  let memberContext: BrowserContext;
  let ownerPage: Page;
  let memberPage: Page;
  const errors: string[] = [];
  const row = (page: Page, id: string) => page.locator(`tr[data-batch="${id}"]`);
  let done: OpenAI.Batches.Batch;
  let ownersHeld: OpenAI.Batches.Batch;
  let membersHeld: OpenAI.Batches.Batch;

  beforeAll(async () => {
    owner = await newOwner(started.redis, 'Batch Co');
    memberEmail = `batch-member-${Date.now().toString(36)}@example.com`;
    const member = await new Users(started.redis).create({
      email: memberEmail,
      password: PASSWORD,
      accountId: owner.accountId,
    });
    await new Team(started.redis).add(owner.accountId, member.id, 'member');
    const mint = async (createdBy: string, name: string) =>
      (await started.keys.create(owner.accountId, { name, createdBy })).secret;
    const openai = (apiKey: string) =>
      new OpenAI({ apiKey, baseURL: started.platform.apiBase, maxRetries: 0 });
    ownerSecret = await mint(owner.userId, 'owner-batches');
    ownerClient = openai(ownerSecret);
    memberClient = openai(await mint(member.id, 'member-batches'));
    for (const which of ['owner', 'member'] as const) {
      const context = await started.browser.newContext({ viewport: DESKTOP, acceptDownloads: true });
      const page = await context.newPage();
      page.on('pageerror', (e) => errors.push(e.message));
      await signIn(
        page,
        started.platform.consoleUrl,
        which === 'owner' ? owner.email : memberEmail,
        '/batches',
      );
      await page.getByRole('heading', { name: 'Batches' }).waitFor(POLL);
      if (which === 'owner') [ownerContext, ownerPage] = [context, page];
      else [memberContext, memberPage] = [context, page];
    }
  }, 120_000);
  afterAll(async () => {
    await ownerContext?.close();
    await memberContext?.close();
  });

  it('a batch made with the openai SDK shows its counts and cost, and its output file downloads', async () => {
    done = await ended(ownerClient, (await batch(ownerClient, 'done', CHAT, 3)).id);
    expect(done.status).toBe('completed');
    const cost = (done as unknown as { usage: { cost: string } }).usage.cost;
    expect(Number(cost)).toBeGreaterThan(0);
    await ownerPage.reload();
    const r = row(ownerPage, done.id);
    await r.waitFor(POLL);
    expect(await r.locator('td').first().textContent()).toBe('Completed');
    expect(await r.locator('td.requests').textContent()).toBe('3 done, 0 failed of 3');
    // The page's cost so far is what the lines were charged (6 decimals shown: the test's cost has fewer).
    expect(Number((await r.locator('td.cost').textContent())!.replace(/[^0-9.]/g, ''))).toBeCloseTo(
      Number(cost),
      6,
    );
    expect(await r.getByRole('link', { name: 'Errors' }).count()).toBe(0);
    const download = ownerPage.waitForEvent('download');
    await r.getByRole('link', { name: 'Output' }).click();
    const file = await (await download).path();
    const got = readFileSync(file, 'utf8')
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as { custom_id: string; response: { status_code: number } });
    expect(got.map((l) => l.custom_id).sort()).toEqual(['done-0', 'done-1', 'done-2']);
    for (const l of got) expect(l.response.status_code).toBe(200);
    // The same bytes the API's files.content gives.
    expect(readFileSync(file, 'utf8')).toBe(
      await (await ownerClient.files.content(done.output_file_id!)).text(),
    );
  }, 180_000);

  it('an Anthropic Message Batch is listed beside them, and its results download as /results gives them', async () => {
    const anthropic = new Anthropic({
      apiKey: ownerSecret,
      baseURL: started.platform.apiBase.replace(/\/v1$/, ''),
      maxRetries: 0,
    });
    const created = await anthropic.messages.batches.create({
      requests: ['a', 'b'].map((id) => ({
        custom_id: `msg-${id}`,
        params: { model: CHAT, max_tokens: 8, messages: [{ role: 'user' as const, content: `Say ${id}` }] },
      })),
    });
    await expect
      .poll(async () => (await anthropic.messages.batches.retrieve(created.id)).processing_status, POLL)
      .toBe('ended');
    await ownerPage.reload();
    const r = row(ownerPage, created.id);
    await r.waitFor(POLL);
    expect(await r.locator('th').textContent()).toContain('Anthropic · /v1/messages');
    expect(await r.locator('td.requests').textContent()).toBe('2 done, 0 failed of 2');
    const download = ownerPage.waitForEvent('download');
    await r.getByRole('link', { name: 'Output' }).click();
    const got = readFileSync(await (await download).path(), 'utf8');
    const results: string[] = [];
    for await (const line of await anthropic.messages.batches.results(created.id))
      results.push(`${line.custom_id}:${line.result.type}`);
    expect(
      got
        .trim()
        .split('\n')
        .map((l) => JSON.parse(l) as { custom_id: string; result: { type: string } })
        .map((l) => `${l.custom_id}:${l.result.type}`),
    ).toEqual(results);
    expect(results).toEqual(['msg-a:succeeded', 'msg-b:succeeded']);
  }, 120_000);

  it("a member cancels their own key's batch, but not the owner's: no button, and a 403 when asked anyway", async () => {
    ownersHeld = await batch(ownerClient, 'owners', HELD, 3);
    membersHeld = await batch(memberClient, 'members', HELD_TOO, 3);
    // Each batch's first line has reached the engine (and is held there): both are running.
    await expect.poll(() => holding.length, POLL).toBe(2);
    await memberPage.reload();
    const theirs = row(memberPage, ownersHeld.id);
    const mine = row(memberPage, membersHeld.id);
    await theirs.waitFor(POLL);
    await mine.waitFor(POLL);
    expect(await theirs.getByRole('button', { name: 'Cancel' }).count()).toBe(0);
    const refused = await memberPage.evaluate(async (id) => {
      const me = (await (await fetch('/api/session')).json()) as { csrfToken: string };
      const res = await fetch(`/api/batches/${id}/cancel`, {
        method: 'POST',
        headers: { 'x-csrf-token': me.csrfToken },
      });
      return { status: res.status, body: (await res.json()) as { error: { message: string } } };
    }, ownersHeld.id);
    expect(refused.status).toBe(403);
    expect(refused.body.error.message).toMatch(/keys they created/);
    expect((await ownerClient.batches.retrieve(ownersHeld.id)).status).toBe('in_progress');

    // The member's own batch: Cancel, confirmed in the dialog.
    await mine.getByRole('button', { name: 'Cancel' }).click();
    await memberPage.getByRole('dialog', { name: 'Cancel batch?' }).waitFor();
    await memberPage.getByRole('button', { name: 'Cancel batch' }).click();
    await expect.poll(() => mine.locator('td').first().textContent(), POLL).toMatch(/^Cancell(ing|ed)$/);
    expect(await mine.getByRole('button', { name: 'Cancel' }).count()).toBe(0);
  }, 180_000);

  it('the owner cancels the other; the running lines finish and are charged, the rest are cancelled and free', async () => {
    await ownerPage.reload();
    const r = row(ownerPage, ownersHeld.id);
    await r.waitFor(POLL);
    await r.getByRole('button', { name: 'Cancel' }).click();
    await ownerPage.getByRole('button', { name: 'Cancel batch' }).click();
    await expect.poll(() => r.locator('td').first().textContent(), POLL).toMatch(/^Cancell(ing|ed)$/);
    // The engine answers what it held: each batch's one running line finishes.
    letGo = true;
    for (const answer of holding.splice(0)) answer();
    for (const [client, b] of [
      [ownerClient, ownersHeld],
      [memberClient, membersHeld],
    ] as const) {
      const end = await ended(client, b.id);
      expect(end.status).toBe('cancelled');
      expect(end.request_counts).toEqual({ total: 3, completed: 1, failed: 0 });
    }
    // The page, refreshing itself, shows the end: one line done, two cancelled, an errors file.
    await expect
      .poll(() => r.locator('td.requests').textContent(), POLL)
      .toBe('1 done, 0 failed, 2 cancelled of 3');
    expect(await r.locator('td').first().textContent()).toBe('Cancelled');
    expect(await r.getByRole('link', { name: 'Errors' }).count()).toBe(1);
    // One line at the batch price (half of 10 × $1 + 5 × $2 per 1M tokens).
    expect(await r.locator('td.cost').textContent()).toBe('0.000010 USD');
    expect(errors).toEqual([]);
    await ownerPage.reload();
    await row(ownerPage, membersHeld.id).waitFor(POLL);
    await shoot(ownerPage, `${out}batches`);
    await expectLedgerClean(started.redis, [owner.accountId]);
  }, 180_000);
});
