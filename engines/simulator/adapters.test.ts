import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Simulator, startSimulator } from './server.ts';

let sim: Simulator;
let client: OpenAI;

beforeAll(async () => {
  sim = await startSimulator({ ttftMs: 1, itlMs: 0, models: ['base'] });
  client = new OpenAI({ baseURL: `${sim.url}/v1`, apiKey: 'unused', maxRetries: 0 });
});
afterAll(() => sim.close());

const post = (path: string, body: unknown, url = sim.url) =>
  fetch(`${url}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });

describe('simulator runtime LoRA adapters (vLLM /v1/load_lora_adapter)', () => {
  it('loads an adapter, lists it under its base, serves it, and refuses a second load', async () => {
    const load = await post('/v1/load_lora_adapter', { lora_name: 'tone', lora_path: '/adapters/tone' });
    expect(load.status).toBe(200);
    expect(await load.text()).toBe("Success: LoRA adapter 'tone' added successfully.");
    expect(sim.adapters()).toEqual(new Map([['tone', '/adapters/tone']]));

    const listed = (await client.models.list()).data as unknown as {
      id: string;
      root: string;
      parent: string | null;
    }[];
    expect(listed.map((m) => [m.id, m.root, m.parent])).toEqual([
      ['base', 'base', null],
      ['tone', '/adapters/tone', 'base'],
    ]);
    const chat = await client.chat.completions.create({
      model: 'tone',
      messages: [{ role: 'user', content: 'hi' }],
      max_tokens: 3,
    });
    expect(chat.model).toBe('tone');

    const again = await post('/v1/load_lora_adapter', { lora_name: 'tone', lora_path: '/adapters/tone' });
    expect(again.status).toBe(400);
    expect(((await again.json()) as { error: { message: string; code: number } }).error).toMatchObject({
      message: "The lora adapter 'tone' has already been loaded.",
      code: 400,
    });
  });

  it('unloads a loaded adapter, 404s an unknown one and 400s a body without a name or path', async () => {
    await post('/v1/load_lora_adapter', { lora_name: 'gone', lora_path: 'org/gone' });
    const unload = await post('/v1/unload_lora_adapter', { lora_name: 'gone' });
    expect(unload.status).toBe(200);
    expect(sim.adapters().has('gone')).toBe(false);
    expect((await client.models.list()).data.map((m) => m.id)).not.toContain('gone');

    expect((await post('/v1/unload_lora_adapter', { lora_name: 'gone' })).status).toBe(404);
    expect((await post('/v1/load_lora_adapter', { lora_name: 'x' })).status).toBe(400);
    expect((await post('/v1/unload_lora_adapter', {})).status).toBe(400);
  });

  it('with knownModelsOnly, a chat for an adapter it does not hold is 404 NotFoundError, as vLLM answers', async () => {
    const strict = await startSimulator({ ttftMs: 1, itlMs: 0, models: ['base'], knownModelsOnly: true });
    try {
      const chat = (model: string) =>
        fetch(`${strict.url}/v1/chat/completions`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({ model, messages: [{ role: 'user', content: 'hi' }], max_tokens: 2 }),
        });
      expect((await chat('base')).status).toBe(200);
      await post('/v1/load_lora_adapter', { lora_name: 'tone', lora_path: '/adapters/tone' }, strict.url);
      expect((await chat('tone')).status).toBe(200);
      await post('/v1/unload_lora_adapter', { lora_name: 'tone' }, strict.url);
      const gone = await chat('tone');
      expect(gone.status).toBe(404);
      expect(await gone.json()).toEqual({
        error: expect.objectContaining({
          message: 'The model `tone` does not exist.',
          type: 'NotFoundError',
          code: 404,
        }),
      });
    } finally {
      await strict.close();
    }
  });
});
