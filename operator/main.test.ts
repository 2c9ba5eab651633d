// `make dev`'s path end to end: the operator process in local mode over examples/models, with a
// real Redis; every example is catalogued and the engines it starts answer.
import { type ChildProcess, spawn } from 'node:child_process';
import { resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CatalogueStore } from '../core/catalogue/store.ts';
import { freePort } from '../core/free-port.ts';
import { startRedis, type TestRedis } from '../test/helpers/redis.ts';

const repo = resolve(import.meta.dirname, '..');
let redis: TestRedis;
let proc: ChildProcess;
let port: number;

beforeAll(async () => {
  redis = await startRedis();
  port = await freePort();
  proc = spawn(
    process.execPath,
    [
      '--import',
      'tsx',
      'operator/main.ts',
      '--runtime',
      'local',
      '--models-dir',
      'examples/models',
      '--port',
      String(port),
    ],
    {
      cwd: repo,
      env: { ...process.env, REDIS_URL: redis.url, LOG_LEVEL: 'warn' },
      stdio: ['ignore', 'inherit', 'inherit'],
    },
  );
});

afterAll(async () => {
  if (proc && proc.exitCode === null) {
    const exited = new Promise((r) => proc.once('exit', r));
    proc.kill('SIGTERM');
    await exited;
  }
  await redis?.stop();
});

describe('operator/main.ts --runtime local', () => {
  it('catalogues every examples/models/*.yaml (not cluster/) and is healthy', async () => {
    const store = new CatalogueStore(redis.client());
    const deadline = Date.now() + 25_000;
    let ids: string[] = [];
    while (Date.now() < deadline) {
      const entries = await store.list();
      ids = entries.map((e) => e.id);
      if (
        entries.length === 7 &&
        entries.every((e) => e.availability === 'comingSoon' || e.endpoints.length > 0)
      )
        break;
      await new Promise((r) => setTimeout(r, 100));
    }
    expect(ids).toEqual([
      'Acme/Llama-3.1-8B-Support-Tone',
      'BAAI/bge-m3',
      'Black-Forest-Labs/FLUX.1-Kontext-dev',
      'DeepSeek-AI/DeepSeek-R1',
      'Meta-Llama/Llama-3.1-8B-Instruct',
      'Qwen/Qwen3-235B-A22B-Instruct-2507',
      'Wan-AI/Wan2.2-I2V-A14B',
    ]);
    const health = await fetch(`http://127.0.0.1:${port}/healthz`);
    expect(await health.json()).toMatchObject({ ok: true, runtime: 'local', models: 7 });
    // The adapter is served by its base's engine, which now lists it under the base.
    const tone = (await store.get('acme/llama-3.1-8b-support-tone'))!;
    const base = (await store.get('meta-llama/llama-3.1-8b-instruct'))!;
    expect(tone.endpoints.map((e) => e.url)).toEqual(base.endpoints.map((e) => e.url));
    const listed = (await (await fetch(`${base.endpoints[0]!.url}/v1/models`)).json()) as {
      data: { id: string; parent?: string }[];
    };
    expect(listed.data).toContainEqual(
      expect.objectContaining({ id: tone.id, parent: 'Meta-Llama/Llama-3.1-8B-Instruct' }),
    );
    // The example's aliases (Claude Code's and Codex CLI's hard-coded names) are catalogued.
    expect(base.aliases).toEqual(expect.arrayContaining(['claude-haiku-*', 'gpt-6.1-sol']));
    const embed = (await store.get('baai/bge-m3'))!;
    const res = await fetch(`${embed.endpoints[0]!.url}/v1/embeddings`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ model: embed.id, input: 'hello' }),
    });
    expect(res.status).toBe(200);
    const metrics = await (await fetch(`http://127.0.0.1:${port}/metrics`)).text();
    expect(metrics).toContain('modelplane_operator_catalogue_writes_total');
  }, 30_000);
});
