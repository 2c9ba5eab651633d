// The dashboards and alerts against the running platform: the platform as `make dev` runs it
// (cli/platform.ts: Redis, the operator on the local runtime with simulator engines, the proxy,
// the console) under a little load, scraped by a real Prometheus. Every panel's expression of every
// dashboard in the chart, and every alert's expression (its comparison taken off), returns data —
// so no panel or alert queries a metric, a label or a suffix the code does not export.
import {
  copyFileSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { type Platform, startPlatform } from '../../cli/platform.ts';
import { Accounts } from '../../core/accounts/accounts.ts';
import { CatalogueStore } from '../../core/catalogue/index.ts';
import { freePort } from '../../core/free-port.ts';
import { connectRedis } from '../../core/redis/client.ts';
import { postgresForFile } from '../helpers/postgres.ts';
import { startPrometheus, type TestPrometheus } from './prometheus.ts';

const repo = new URL('../../', import.meta.url).pathname;
const chart = join(repo, 'charts', 'modelplane', 'files');
const CHAT = 'Meta-Llama/Llama-3.1-8B-Instruct';
const BROKEN = 'Test/Broken-External';
const SLEEPY = 'Test/Sleepy-Autoscaled';

/**
 * Expressions that only have data once money went wrong (a proxy died holding credit; a delivered
 * call could not be charged): a healthy platform under load exports these families with no series.
 * For them the test checks the family is exported by the proxy (its `# TYPE` line), and nothing else
 * may be on this list.
 */
const FAULT_ONLY = ['mp_proxy_holds_voided_total', 'mp_proxy_credits_uncollected_nano_total'];

interface Expr {
  where: string;
  expr: string;
}

function dashboardExprs(): Expr[] {
  const out: Expr[] = [];
  for (const file of readdirSync(join(chart, 'dashboards')).filter((f) => f.endsWith('.json'))) {
    const dash = JSON.parse(readFileSync(join(chart, 'dashboards', file), 'utf8')) as {
      panels: { title: string; targets?: { expr: string; refId: string }[] }[];
    };
    for (const p of dash.panels)
      for (const t of p.targets ?? []) out.push({ where: `${file} "${p.title}" ${t.refId}`, expr: t.expr });
  }
  // Grafana's interval variable: one minute holds many one-second scrapes.
  return out.map((e) => ({ ...e, expr: e.expr.replaceAll('$__rate_interval', '1m') }));
}

function alertExprs(): Expr[] {
  const rules = parse(readFileSync(join(chart, 'prometheus-rules.yaml'), 'utf8')) as {
    groups: { rules: { alert: string; expr: string }[] }[];
  };
  return rules.groups.flatMap((g) =>
    g.rules.map((r) => {
      // The alert's threshold taken off: what is compared must exist, whether or not it is over.
      const lhs = r.expr.trim().replace(/\s*(>|<|==|!=|>=|<=)\s*[0-9.e+-]+$/, '');
      expect(lhs, `${r.alert}: its expression ends in a comparison with a number`).not.toBe(r.expr.trim());
      return { where: `alert ${r.alert}`, expr: lhs };
    }),
  );
}

let platform: Platform;
// The durable journal, as make dev runs it: the archiver's panels and alerts need its metrics.
const db = postgresForFile();
let prometheus: TestPrometheus;
let dataDir: string;
let proxyPort: number;
// The proxy serves /metrics on a port of its own (docs/security.md "Metrics port"), which is what
// Prometheus scrapes.
let proxyMetricsPort: number;

beforeAll(async () => {
  dataDir = mkdtempSync(join(tmpdir(), 'mp-live-metrics-'));
  const models = join(dataDir, 'models');
  mkdirSync(models);
  copyFileSync(join(repo, 'examples', 'models', 'llama-3.1-8b-instruct.yaml'), join(models, 'llama.yaml'));
  // An external model whose endpoint refuses connections: engine errors and 5xx answers.
  const deadPort = await freePort();
  writeFileSync(
    join(models, 'broken.yaml'),
    `apiVersion: modelplane.dev/v1alpha1
kind: Model
metadata: { name: broken }
spec:
  id: ${BROKEN}
  kind: chat
  external: { url: "http://127.0.0.1:${deadPort}" }
  pricing: { USD: { input: "0.1", output: "0.2" } }
`,
  );
  // An engine that runs but never listens: the operator keeps that Model not Ready. Invite-only, so
  // the platform's start does not wait for it to be callable.
  writeFileSync(
    join(models, 'stuck.yaml'),
    `apiVersion: modelplane.dev/v1alpha1
kind: Model
metadata: { name: stuck }
spec:
  id: Test/Never-Ready
  kind: chat
  availability: inviteOnly
  engine:
    type: custom
    image: unused-locally
    command: [${JSON.stringify(process.execPath)}, "-e", "setInterval(() => {}, 60000)"]
  pricing: { USD: { input: "0.1", output: "0.2" } }
`,
  );
  // An autoscaled model asleep at zero with one call per replica: a call wakes it (held for its
  // cold start) and the calls sent with it queue — the autoscaling panels' series. Invite-only, so
  // the platform's start does not wait for an engine it does not run yet.
  writeFileSync(
    join(models, 'sleepy.yaml'),
    `apiVersion: modelplane.dev/v1alpha1
kind: Model
metadata: { name: sleepy }
spec:
  id: ${SLEEPY}
  kind: chat
  availability: inviteOnly
  engine:
    type: simulator
    args: ["--itl-ms", "20"]
    minReplicas: 0
    maxReplicas: 1
    autoscaling: { idleSeconds: 600, coldStartTimeoutSeconds: 120 }
    queue: { perReplica: 1, maxWaitSeconds: 60 }
  pricing: { USD: { input: "0.1", output: "0.2" } }
`,
  );
  const [redisPort, consolePort, operatorPort] = [await freePort(), await freePort(), await freePort()];
  proxyPort = await freePort();
  proxyMetricsPort = await freePort();
  platform = await startPlatform({
    dataDir,
    modelsDir: models,
    redisPort,
    proxyPort,
    proxyMetricsPort,
    consolePort,
    operatorPort,
    databaseUrl: db.url,
    env: { PROXY_ENGINE_ATTEMPTS: '1' },
    log: () => {},
  });
  const redis = connectRedis(platform.redisUrl);
  const entry = await new CatalogueStore(redis).get(CHAT);
  redis.disconnect();
  const engines = (entry?.endpoints ?? []).map((e, i) => ({
    address: new URL(e.url).host,
    labels: { pod: `engine-${i}` },
  }));
  expect(engines.length).toBeGreaterThan(0);
  prometheus = await startPrometheus([
    { job: 'proxy', targets: [{ address: `127.0.0.1:${proxyMetricsPort}`, labels: { pod: 'proxy-0' } }] },
    { job: 'operator', targets: [{ address: `127.0.0.1:${operatorPort}`, labels: { pod: 'operator-0' } }] },
    { job: 'engines', targets: engines },
  ]);
}, 240_000);

afterAll(async () => {
  await prometheus?.stop();
  await platform?.stop();
  if (dataDir) rmSync(dataDir, { recursive: true, force: true });
});

async function load(): Promise<void> {
  const client = new OpenAI({ baseURL: platform.apiBase, apiKey: platform.demo.secret, maxRetries: 0 });
  // One long prompt sent again and again: the engine's prefix cache answers its prefix (cached input).
  const prompt = 'Describe the water cycle in detail, step by step. '.repeat(40);
  for (let i = 0; i < 4; i++) {
    await client.chat.completions.create({
      model: CHAT,
      messages: [{ role: 'user', content: prompt }],
      max_tokens: 16,
    });
    const stream = await client.chat.completions.create({
      model: CHAT,
      messages: [{ role: 'user', content: prompt }],
      max_tokens: 16,
      stream: true,
      stream_options: { include_usage: true },
    });
    for await (const _ of stream) {
      // drained
    }
  }
  // The sleeping model woken by three calls at once: one held for the cold start, two queued
  // behind it (one call per replica).
  const redis = connectRedis(platform.redisUrl);
  await new Accounts(redis).grantModel(platform.demo.accountId, SLEEPY);
  redis.disconnect();
  await Promise.all(
    [0, 1, 2].map(async (i) => {
      const s = await client.chat.completions.create({
        model: SLEEPY,
        messages: [{ role: 'user', content: `wake ${i}` }],
        max_tokens: 20,
        stream: true,
      });
      for await (const _ of s) {
        // drained
      }
    }),
  );
  // Client errors (401 a wrong key, 404 an unknown model) and a server error (the dead engine).
  const bad = new OpenAI({ baseURL: platform.apiBase, apiKey: 'sk-wrong', maxRetries: 0 });
  await expect(bad.models.list()).rejects.toMatchObject({ status: 401 });
  await expect(
    client.chat.completions.create({ model: 'No/Such-Model', messages: [{ role: 'user', content: 'x' }] }),
  ).rejects.toMatchObject({ status: 404 });
  await expect(
    client.chat.completions.create({
      model: BROKEN,
      messages: [{ role: 'user', content: 'x' }],
      max_tokens: 4,
    }),
  ).rejects.toMatchObject({ status: 500 });
}

describe('dashboards and alerts against live metrics', () => {
  it('every panel and every alert expression returns data from the running platform', async () => {
    const deadline = Date.now() + 120_000;
    while (!(await prometheus.allUp())) {
      if (Date.now() > deadline) throw new Error('not every scrape target came up');
      await new Promise((r) => setTimeout(r, 250));
    }
    await load();
    const exprs = [...dashboardExprs(), ...alertExprs()];
    expect(exprs.length).toBeGreaterThanOrEqual(30);
    const faultOnly = (e: Expr) => FAULT_ONLY.some((m) => e.expr.includes(m));
    const expected = exprs.filter((e) => !faultOnly(e));
    // Scrapes land every second; wait until each expression has data (or the deadline passes).
    let missing: Expr[] = expected;
    while (missing.length > 0 && Date.now() < deadline) {
      const still: Expr[] = [];
      for (const e of missing) if ((await prometheus.query(e.expr)).length === 0) still.push(e);
      missing = still;
      if (missing.length > 0) await new Promise((r) => setTimeout(r, 500));
    }
    expect(missing.map((e) => `${e.where}: ${e.expr}`)).toEqual([]);
    // The fault-only families are exported (declared) by the proxy even with no series yet.
    const exposition = await (await fetch(`http://127.0.0.1:${proxyMetricsPort}/metrics`)).text();
    for (const m of FAULT_ONLY) expect(exposition).toContain(`# TYPE ${m} counter`);
    expect(exprs.filter(faultOnly).length).toBeGreaterThan(0);
  }, 300_000);
});
