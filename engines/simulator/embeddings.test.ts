import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Simulator, startSimulator } from './server.ts';

let sim: Simulator;
let client: OpenAI;

beforeAll(async () => {
  sim = await startSimulator({ embeddingMs: 0, embeddingDimensions: 256 });
  client = new OpenAI({ baseURL: `${sim.url}/v1`, apiKey: 'unused', maxRetries: 0 });
});
afterAll(() => sim.close());

const norm = (v: number[]) => Math.sqrt(v.reduce((s, x) => s + x * x, 0));

describe('embeddings', () => {
  it('float and base64 (little-endian float32) carry the same deterministic unit vectors', async () => {
    const input = ['hello world', 'another text'];
    const asFloat = await client.embeddings.create({ model: 'Emb/One', input, encoding_format: 'float' });
    // The official client asks for base64 by default and decodes it to numbers.
    const viaBase64 = await client.embeddings.create({ model: 'Emb/One', input });
    expect(asFloat.model).toBe('Emb/One');
    expect(asFloat.data.map((d) => d.index)).toEqual([0, 1]);
    expect(viaBase64.data.map((d) => d.embedding)).toEqual(asFloat.data.map((d) => d.embedding));
    const v = asFloat.data[0]!.embedding;
    expect(v).toHaveLength(256);
    expect(norm(v)).toBeCloseTo(1, 5);
    expect(asFloat.data[1]!.embedding).not.toEqual(v);
    expect(asFloat.usage).toEqual({ prompt_tokens: 7, total_tokens: 7 });
  });

  it('raw base64 decodes as little-endian float32', async () => {
    const res = await fetch(`${sim.url}/v1/embeddings`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'e', input: 'hello world', encoding_format: 'base64', dimensions: 8 }),
    });
    const body = (await res.json()) as { data: Array<{ embedding: string }> };
    const bytes = Buffer.from(body.data[0]!.embedding, 'base64');
    expect(bytes.length).toBe(32);
    const floats = Array.from({ length: 8 }, (_, i) => bytes.readFloatLE(i * 4));
    const asFloat = await client.embeddings.create({
      model: 'e',
      input: 'hello world',
      dimensions: 8,
      encoding_format: 'float',
    });
    expect(floats).toEqual(asFloat.data[0]!.embedding);
  });

  it('accepts token arrays (one token per element) and honours dimensions', async () => {
    const r = await client.embeddings.create({
      model: 'e',
      input: [
        [1, 2, 3],
        [4, 5],
      ],
      dimensions: 16,
      encoding_format: 'float',
    });
    expect(r.data[0]!.embedding).toHaveLength(16);
    expect(r.usage.prompt_tokens).toBe(5);
  });

  it.each([
    [{ model: 'e', input: '' }, 'input'],
    [{ model: 'e', input: [] }, 'input'],
    [{ model: 'e' }, 'input'],
    [{ input: 'x' }, 'model'],
    [{ model: 'e', input: 'x', dimensions: 10_000 }, 'dimensions'],
    [{ model: 'e', input: 'x', encoding_format: 'hex' }, 'encoding_format'],
  ])('400 for %j', async (body, param) => {
    const res = await fetch(`${sim.url}/v1/embeddings`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });
    expect(res.status).toBe(400);
    expect(await res.json()).toMatchObject({ error: { param } });
  });
});
