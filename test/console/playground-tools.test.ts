// The Playground's tools parameter (issue 37 item 3), in Debian's Chromium through playwright-core
// against the platform started as `make dev` starts it. A small real engine on loopback (an
// external Model) answers a request that offers tools with a streamed tool call, as vLLM does, and
// keeps the body it got: the test sees the tools the page sent in each dialect reach the engine,
// the call shown in the reply (its name, its JSON arguments), a bad tools text said in words and
// nothing sent, and every call charged once (the ledger check). 1440×900 and 390×844.
import { mkdirSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import type { BrowserContext, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { stringify as stringifyYaml } from 'yaml';
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
const POLL = { timeout: 20_000 };
const TOOLER = 'Test/Tool-Caller';
const TOOLS = JSON.stringify([
  {
    type: 'function',
    function: {
      name: 'get_weather',
      description: 'The weather in a city now',
      parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
    },
  },
]);

let started: BrowserPlatform;
let models: ReturnType<typeof exampleModels>;
let engine: Server;
/** The bodies the engine got, newest last. */
const bodies: Record<string, unknown>[] = [];

/** Streams a tool call (get_weather, its arguments in two pieces) when offered tools, else a word. */
async function startToolEngine(): Promise<Server> {
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
      const body = JSON.parse(raw) as Record<string, unknown>;
      bodies.push(body);
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      const base = { id: 'chatcmpl-tool', object: 'chat.completion.chunk', created: 1, model: TOOLER };
      const frame = (delta: unknown, finish: string | null = null) =>
        res.write(
          `data: ${JSON.stringify({ ...base, choices: [{ index: 0, delta, finish_reason: finish }] })}\n\n`,
        );
      frame({ role: 'assistant', content: '' });
      if (Array.isArray(body.tools) && body.tools.length > 0) {
        frame({
          tool_calls: [
            { index: 0, id: 'call_1', type: 'function', function: { name: 'get_weather', arguments: '' } },
          ],
        });
        frame({ tool_calls: [{ index: 0, function: { arguments: '{"city": ' } }] });
        frame({ tool_calls: [{ index: 0, function: { arguments: '"Paris"}' } }] });
        frame({}, 'tool_calls');
      } else {
        frame({ content: 'No tools here.' });
        frame({}, 'stop');
      }
      res.write(
        `data: ${JSON.stringify({ ...base, choices: [], usage: { prompt_tokens: 20, completion_tokens: 9, total_tokens: 29 } })}\n\n`,
      );
      res.end('data: [DONE]\n\n');
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return server;
}

beforeAll(async () => {
  await ensureConsoleWeb();
  models = exampleModels('mp-playground-tools-');
  const { dataDir, modelsDir } = models;
  engine = await startToolEngine();
  writeFileSync(
    join(modelsDir, 'tool-caller.yaml'),
    stringifyYaml({
      apiVersion: 'modelplane.dev/v1alpha1',
      kind: 'Model',
      metadata: { name: 'tool-caller' },
      spec: {
        id: TOOLER,
        kind: 'chat',
        external: { url: `http://127.0.0.1:${(engine.address() as AddressInfo).port}` },
        contextLength: 16384,
        maxOutputTokens: 2048,
        capabilities: { tools: true },
        pricing: { USD: { input: '0.2', output: '0.8' } },
      },
    }),
  );
  started = await startBrowserPlatform({ dataDir, modelsDir, env: {}, log: () => {} });
  mkdirSync(out, { recursive: true });
}, 300_000);

afterAll(async () => {
  await started?.stop();
  engine?.close();
  models?.remove();
}, 60_000);

describe('the tools parameter (issue 37 item 3)', () => {
  let context: BrowserContext;
  let page: Page;
  let owner: Awaited<ReturnType<typeof newOwner>>;
  const errors: string[] = [];

  beforeAll(async () => {
    context = await started.browser.newContext({ viewport: DESKTOP });
    page = await context.newPage();
    page.on('pageerror', (e) => errors.push(e.message));
    owner = await newOwner(started.redis, 'Tools Co');
    await signIn(
      page,
      started.platform.consoleUrl,
      owner.email,
      `/playground?tab=run&model=${encodeURIComponent(TOOLER)}`,
    );
    await page.getByLabel('Model').waitFor(POLL);
    await page.locator('section.run button.primary:not([disabled])').waitFor(POLL);
  }, 60_000);
  afterAll(async () => context?.close());

  const tools = () => page.getByLabel(/^Tools/);
  const lastReply = () => page.locator('[data-testid="message"][data-role="assistant"]').last();
  const ask = async (text: string) => {
    await page.getByLabel(/^Message/).fill(text);
    const replies = await page.locator('[data-testid="message"][data-role="assistant"]').count();
    await page.getByLabel(/^Message/).press('Enter');
    // The reply is there, and Run is back (the call ended).
    await expect
      .poll(() => page.locator('[data-testid="message"][data-role="assistant"]').count(), POLL)
      .toBe(replies + 1);
    await page.getByRole('button', { name: 'Run', exact: true }).waitFor(POLL);
  };

  it('tools written in OpenAI’s shape reach the engine with the tool choice; the reply shows the call and its arguments (chat completions)', async () => {
    await page.getByLabel('Dialect').selectOption('chat');
    await tools().fill(TOOLS);
    await page.getByLabel('Tool choice').selectOption('required');
    await ask('What is the weather in Paris?');
    const sent = bodies.at(-1)!;
    expect(sent.tool_choice).toBe('required');
    expect(sent.tools).toEqual(JSON.parse(TOOLS));
    const reply = lastReply();
    await expect
      .poll(() => reply.getByTestId('reply').textContent(), POLL)
      .toContain('Tool call: get_weather');
    expect(await reply.locator('pre code').textContent()).toContain('"city": "Paris"');
    await expect.poll(() => reply.getByTestId('cost').getAttribute('data-cost'), POLL).toBeTruthy();
    await shoot(page, `${out}playground-run-tools`);
  }, 90_000);

  it('on Messages the page sends Anthropic’s shape (input_schema, tool_choice any), and the same call comes back', async () => {
    await page.getByLabel('Dialect').selectOption('messages');
    await page.getByRole('button', { name: 'New conversation' }).click();
    const request = page.waitForRequest((r) => r.url().endsWith('/v1/messages') && r.method() === 'POST');
    await ask('Weather in Paris, please');
    const body = JSON.parse((await request).postData() ?? '{}') as Record<string, unknown>;
    expect(body.tool_choice).toEqual({ type: 'any' });
    expect(body.tools).toEqual([
      {
        name: 'get_weather',
        description: 'The weather in a city now',
        input_schema: JSON.parse(TOOLS)[0].function.parameters,
      },
    ]);
    expect(Array.isArray(bodies.at(-1)!.tools)).toBe(true); // translated for the engine by the proxy
    await expect
      .poll(() => lastReply().getByTestId('reply').textContent(), POLL)
      .toContain('Tool call: get_weather');
  }, 90_000);

  it('a tools text that is not an array of functions is said in words, and nothing is sent', async () => {
    await tools().fill('{"name": "get_weather"}');
    await page.getByTestId('tools-error').waitFor(POLL);
    expect(await page.getByTestId('tools-error').textContent()).toMatch(/array of functions/);
    const before = bodies.length;
    await page.getByLabel(/^Message/).fill('Again');
    await page.getByLabel(/^Message/).press('Enter');
    await page.getByTestId('error').waitFor(POLL);
    expect(bodies.length).toBe(before);
    // Emptied, no tools are offered at all.
    await tools().fill('');
    await page.getByRole('button', { name: 'New conversation' }).click();
    await ask('No tools now');
    expect(bodies.at(-1)).not.toHaveProperty('tools');
    await expect.poll(() => lastReply().getByTestId('reply').textContent(), POLL).toContain('No tools here.');
  }, 90_000);

  it('View code is on Compare too: each column’s own call (issue 37 item 3)', async () => {
    await page.getByRole('tab', { name: 'Compare' }).click();
    await page.getByRole('heading', { name: 'Compare models' }).waitFor(POLL);
    await page.getByLabel(/^Prompt/).fill('Compare this');
    const columns = page.getByTestId('column');
    for (const i of [0, 1]) {
      const model = await columns.nth(i).getByLabel('Model').inputValue();
      await columns.nth(i).getByRole('button', { name: 'View code' }).click();
      const code = page.getByTestId('code');
      await code.waitFor(POLL);
      expect(await code.textContent()).toContain(model);
      expect(await code.textContent()).toContain('Compare this');
      await page.keyboard.press('Escape');
      await expect.poll(() => page.getByRole('dialog').count(), POLL).toBe(0);
    }
    await expectLedgerClean(started.redis, [owner.accountId]);
    expect(errors).toEqual([]);
  }, 60_000);
});
