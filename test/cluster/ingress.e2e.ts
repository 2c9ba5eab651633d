// make e2e-cluster: the way in from outside, through a real ingress controller (issue 36). Traefik
// (test/cluster/build-traefik.sh) runs as a process against the test's kube-apiserver and reads
// the chart's own Ingresses (console, API; TLS from a Secret) and the API's Gateway API HTTPRoute.
// The chart names the test's real Redis and PostgreSQL in Secrets. No container runs here, so the
// console, a proxy and the operator run from the source tree on loopback with the environment the
// chart gives their pods (Secrets resolved as a kubelet would; only ports and data folders
// changed), and the Services get EndpointSlices naming them, as the endpointslice controller would
// for ready pods. There is no controller-manager: nothing else writes slices, so the controller
// never sees a pod address (kwok's 10.244.x.x lead nowhere and are never a target).
// Then: the first user is made exactly as NOTES.txt says, Chromium opens the console at its public
// address, signs in and runs a Playground call that crosses the API's ingress; a streamed call
// through the Ingress and through the HTTPRoute arrives token by token, not in one piece.
import { type ChildProcess, execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import OpenAI from 'openai';
import type { Browser } from 'playwright-core';
import { Agent } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseAllDocuments } from 'yaml';
import { Metering } from '../../core/billing/index.ts';
import { freePort } from '../../core/free-port.ts';
import { Journal } from '../../core/journal/index.ts';
import { parseDecimalToNano } from '../../core/money.ts';
import type { Redis } from '../../core/redis/client.ts';
import { chartDir, helm, helmBinary } from '../chart/helm.ts';
import { launchChromium } from '../helpers/browser.ts';
import { ensureConsoleWeb } from '../helpers/console-web.ts';
import { expectLedgerClean } from '../helpers/ledger.ts';
import { createTestDatabase } from '../helpers/postgres.ts';
import { startRedis, type TestRedis } from '../helpers/redis.ts';
import { startCluster, type TestCluster } from '../k8s/cluster.ts';
import { waitUntil } from '../k8s/helpers.ts';
import { writeKubeconfig } from '../k8s/kubeconfig-file.ts';
import { spawnWatched, stopWatched } from './control-plane.ts';

const repo = new URL('../../', import.meta.url).pathname;
const NS = 'modelplane';
const MODEL = 'E2E/Ingress-Chat';
const PASSWORD = 'the first user’s password';

let cluster: TestCluster;
let redis: TestRedis;
let database: Awaited<ReturnType<typeof createTestDatabase>>;
let browser: Browser | undefined;
let dir: string;
let web: number; // Traefik's plain HTTP entrypoint: the Gateway's listener
let websecure: number; // its TLS entrypoint: the Ingresses' hosts
let cert: { crt: string; key: string };
let notes = '';
const procs: ChildProcess[] = [];
const hosts = {
  console: 'console.modelplane.test',
  api: 'api.modelplane.test',
  gw: 'api-gw.modelplane.test',
};
/** The console and the API over TLS (the Ingresses' certificate); the route's host over plain HTTP. */
const publicUrl = (host: string) =>
  host === hosts.gw ? `http://${host}:${web}` : `https://${host}:${websecure}`;
/** Every *.modelplane.test name is the controller's loopback address, for Node as for Chromium. */
const toController = () =>
  new Agent({
    connect: {
      // The certificate the Ingresses name, and no other, is trusted.
      ca: cert.crt,
      lookup: (_host, opts, cb) =>
        (opts as { all?: boolean }).all
          ? (cb as (e: null, a: { address: string; family: number }[]) => void)(null, [
              { address: '127.0.0.1', family: 4 },
            ])
          : cb(null, '127.0.0.1', 4),
    },
  });

async function api(method: string, path: string, body?: unknown): Promise<Response> {
  return fetch(`${cluster.server}${path}`, {
    method,
    headers: { authorization: `Bearer ${cluster.token}`, 'content-type': 'application/json' },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    dispatcher: new Agent({ connect: { ca: cluster.ca } }),
  } as RequestInit);
}
async function ok<T>(r: Promise<Response>): Promise<T> {
  const res = await r;
  if (!res.ok) throw new Error(`${res.status} ${await res.text()}`);
  return (await res.json()) as T;
}

function run(name: string, cmd: string, args: string[], env: NodeJS.ProcessEnv): ChildProcess {
  const p = spawnWatched(name, cmd, args, { cwd: repo, env }, () => stopping);
  procs.push(p);
  return p;
}
let stopping = false;

interface EnvVar {
  name: string;
  value?: string;
  valueFrom?: { secretKeyRef?: { name: string; key: string; optional?: boolean } };
}
/** A workload's first container's environment as its pod gets it: Secret references resolved. */
async function podEnv(workload: string): Promise<Record<string, string>> {
  const o = await ok<{ spec: { template: { spec: { containers: { env?: EnvVar[] }[] } } } }>(
    api('GET', `/apis/apps/v1/namespaces/${NS}/${workload}`),
  );
  const env: Record<string, string> = {};
  for (const e of o.spec.template.spec.containers[0]?.env ?? []) {
    const ref = e.valueFrom?.secretKeyRef;
    if (e.value !== undefined) env[e.name] = e.value;
    else if (ref) {
      const s = await api('GET', `/api/v1/namespaces/${NS}/secrets/${ref.name}`);
      const data = s.ok ? ((await s.json()) as { data?: Record<string, string> }).data : undefined;
      const v = data?.[ref.key];
      if (v !== undefined) env[e.name] = Buffer.from(v, 'base64').toString();
      else if (!ref.optional) throw new Error(`${workload}: ${e.name} names a missing Secret key`);
    }
  }
  return env;
}

/** What the endpointslice controller writes for a ready pod: here the part's loopback process. */
const slice = (service: string, port: number) => ({
  apiVersion: 'discovery.k8s.io/v1',
  kind: 'EndpointSlice',
  metadata: { name: `${service}-local`, labels: { 'kubernetes.io/service-name': service } },
  // The API server refuses loopback IPs in IPv4 slices; an FQDN slice carries the address as is.
  addressType: 'FQDN',
  endpoints: [{ addresses: ['127.0.0.1'], conditions: { ready: true, serving: true } }],
  ports: [{ name: 'http', port, protocol: 'TCP' }],
});

/** Gateway API's standard CRDs of the release Traefik is built against (kept by the build script). */
async function installGatewayApi(traefik: string): Promise<void> {
  const crdDir = join(traefik, '..', 'gateway-api-crds');
  for (const f of readdirSync(crdDir).filter((n) => n.endsWith('.yaml'))) {
    for (const doc of parseAllDocuments(readFileSync(join(crdDir, f), 'utf8'))) {
      const crd = doc.toJS() as { kind?: string; metadata: { name: string } } | null;
      if (crd?.kind !== 'CustomResourceDefinition') continue;
      await ok(api('POST', '/apis/apiextensions.k8s.io/v1/customresourcedefinitions', crd));
      await waitUntil(
        `CRD ${crd.metadata.name} established`,
        async () =>
          (
            await ok<{ status?: { conditions?: { type: string; status: string }[] } }>(
              api('GET', `/apis/apiextensions.k8s.io/v1/customresourcedefinitions/${crd.metadata.name}`),
            )
          ).status?.conditions?.some((c) => c.type === 'Established' && c.status === 'True'),
        30_000,
      );
    }
  }
}

beforeAll(async () => {
  helmBinary();
  const traefik = execFileSync(join(repo, 'test/cluster/build-traefik.sh'), {
    encoding: 'utf8',
    stdio: ['ignore', 'pipe', 'inherit'],
  }).trim();
  [cluster, redis, database] = await Promise.all([
    startCluster(),
    startRedis(),
    createTestDatabase(),
    ensureConsoleWeb(),
  ]);
  dir = mkdtempSync(join(tmpdir(), 'mp-ingress-'));
  [web, websecure] = [await freePort(), await freePort()];
  // A certificate for both public hosts, in the TLS Secret the Ingresses name.
  execFileSync(
    'openssl',
    [
      'req',
      '-x509',
      '-newkey',
      'rsa:2048',
      '-nodes',
      '-days',
      '1',
      '-subj',
      '/CN=modelplane.test',
      '-addext',
      `subjectAltName=DNS:${hosts.console},DNS:${hosts.api}`,
      '-keyout',
      join(dir, 'tls.key'),
      '-out',
      join(dir, 'tls.crt'),
    ],
    { stdio: 'ignore' },
  );
  cert = { crt: readFileSync(join(dir, 'tls.crt'), 'utf8'), key: readFileSync(join(dir, 'tls.key'), 'utf8') };
  await installGatewayApi(traefik);
  await ok(api('POST', '/api/v1/namespaces', { metadata: { name: NS } }));
  // What a cluster admin has before installing: an ingress class and a Gateway of Traefik's.
  await ok(
    api('POST', '/apis/networking.k8s.io/v1/ingressclasses', {
      metadata: { name: 'traefik' },
      spec: { controller: 'traefik.io/ingress-controller' },
    }),
  );
  await ok(
    api('POST', '/apis/gateway.networking.k8s.io/v1/gatewayclasses', {
      apiVersion: 'gateway.networking.k8s.io/v1',
      kind: 'GatewayClass',
      metadata: { name: 'traefik' },
      spec: { controllerName: 'traefik.io/gateway-controller' },
    }),
  );
  await ok(
    api('POST', `/apis/gateway.networking.k8s.io/v1/namespaces/${NS}/gateways`, {
      apiVersion: 'gateway.networking.k8s.io/v1',
      kind: 'Gateway',
      metadata: { name: 'public' },
      // Traefik binds a listener to the entrypoint of the same port.
      spec: { gatewayClassName: 'traefik', listeners: [{ name: 'web', port: web, protocol: 'HTTP' }] },
    }),
  );
  // The stores, as an admin names them: Redis and the journal's database in Secrets of their own.
  for (const [name, url] of [
    ['test-redis', redis.url],
    ['test-journal', database.url],
  ])
    await ok(api('POST', `/api/v1/namespaces/${NS}/secrets`, { metadata: { name }, stringData: { url } }));
  await ok(
    api('POST', `/api/v1/namespaces/${NS}/secrets`, {
      metadata: { name: 'public-tls' },
      type: 'kubernetes.io/tls',
      stringData: { 'tls.crt': cert.crt, 'tls.key': cert.key },
    }),
  );
  const kubeconfig = writeKubeconfig(cluster, cluster.token, join(dir, 'kubeconfig'));
  const install = await helm([
    'install',
    'mp',
    chartDir,
    '--namespace',
    NS,
    '--kubeconfig',
    kubeconfig,
    '--set',
    'redis.mode=external',
    '--set',
    'redis.external.existingSecret=test-redis',
    '--set',
    'journal.databaseUrl.existingSecret=test-journal',
    '--set',
    `proxy.publicUrl=${publicUrl(hosts.api)}`,
    '--set',
    `console.publicUrl=${publicUrl(hosts.console)}`,
    // TLS on both Ingresses from the Secret (Traefik serves it on its TLS entrypoint).
    '--set',
    `proxy.ingress.tls[0].hosts[0]=${hosts.api}`,
    '--set',
    'proxy.ingress.tls[0].secretName=public-tls',
    '--set',
    `console.ingress.tls[0].hosts[0]=${hosts.console}`,
    '--set',
    'console.ingress.tls[0].secretName=public-tls',
    '--set',
    'proxy.ingress.enabled=true',
    '--set',
    'proxy.ingress.className=traefik',
    '--set',
    'console.ingress.enabled=true',
    '--set',
    'console.ingress.className=traefik',
    '--set',
    'proxy.httpRoute.enabled=true',
    '--set',
    'proxy.httpRoute.parentRefs[0].name=public',
    // Its own host, so a call is known to have come by the route and not by the Ingress.
    '--set',
    `proxy.httpRoute.hostnames[0]=${hosts.gw}`,
  ]);
  expect(install.code, install.stderr).toBe(0);
  notes = install.stdout;

  // The parts, as their pods would run them.
  const [proxyPort, consolePort, operatorPort] = [await freePort(), await freePort(), await freePort()];
  const node = [process.execPath, '--import', 'tsx'] as const;
  const proxyEnv = await podEnv('statefulsets/mp-modelplane-proxy');
  const operatorEnv = await podEnv('deployments/mp-modelplane-operator');
  for (const env of [proxyEnv, operatorEnv])
    expect([env.REDIS_URL, env.DATABASE_URL], 'the stores the chart names').toEqual([
      redis.url,
      database.url,
    ]);
  run('proxy', node[0], [...node.slice(1), 'proxy/main.ts'], {
    ...process.env,
    ...proxyEnv,
    PROXY_PORT: String(proxyPort),
    PROXY_METRICS_HOST: '127.0.0.1',
    PROXY_METRICS_PORT: '0',
    PROXY_DATA_DIR: join(dir, 'journal'),
    MEDIA_DIR: join(dir, 'media'),
    LOG_LEVEL: 'warn',
  });
  run('console', node[0], [...node.slice(1), 'console/main.ts'], {
    ...process.env,
    ...(await podEnv('deployments/mp-modelplane-console')),
    CONSOLE_PORT: String(consolePort),
    LOG_LEVEL: 'warn',
  });
  // The engine: a simulator the operator's local runtime starts (engines are not this test's
  // subject), at 100 ms a token so a stream's pace is visible from outside.
  const models = join(dir, 'models');
  mkdirSync(models);
  writeFileSync(
    join(models, 'chat.yaml'),
    JSON.stringify({
      apiVersion: 'modelplane.dev/v1alpha1',
      kind: 'Model',
      metadata: { name: 'ingress-chat' },
      spec: {
        id: MODEL,
        kind: 'chat',
        engine: { type: 'simulator', args: ['--itl-ms', '100'] },
        pricing: { USD: { input: '0.1', output: '0.2' } },
      },
    }),
  );
  run(
    'operator',
    node[0],
    [
      ...node.slice(1),
      'operator/main.ts',
      '--runtime',
      'local',
      '--models-dir',
      models,
      '--port',
      String(operatorPort),
    ],
    {
      ...process.env,
      REDIS_URL: operatorEnv.REDIS_URL,
      MODELPLANE_KEK: operatorEnv.MODELPLANE_KEK,
      LOG_LEVEL: 'warn',
    },
  );
  for (const [service, port] of [
    ['mp-modelplane-proxy', proxyPort],
    ['mp-modelplane-console', consolePort],
  ] as const)
    await ok(api('POST', `/apis/discovery.k8s.io/v1/namespaces/${NS}/endpointslices`, slice(service, port)));

  const ca = join(dir, 'ca.crt');
  writeFileSync(ca, cluster.ca);
  const k8s = (provider: string) => [
    `--providers.${provider}=true`,
    `--providers.${provider}.endpoint=${cluster.server}`,
    `--providers.${provider}.token=${cluster.token}`,
    `--providers.${provider}.certauthfilepath=${ca}`,
  ];
  run(
    'traefik',
    traefik,
    [
      `--entrypoints.web.address=127.0.0.1:${web}`,
      // TLS for every router on this entrypoint, as a Traefik install's websecure usually is.
      `--entrypoints.websecure.address=127.0.0.1:${websecure}`,
      '--entrypoints.websecure.http.tls=true',
      ...k8s('kubernetesingress'),
      ...k8s('kubernetesgateway'),
      // Nothing leaves the machine.
      '--global.checknewversion=false',
      '--global.sendanonymoususage=false',
      '--log.level=WARN',
    ],
    process.env,
  );
  // Routed once the controller has read the objects and the parts answer behind it.
  for (const [host, path] of [
    [hosts.console, '/healthz'],
    [hosts.api, '/readyz'],
    [hosts.gw, '/readyz'],
  ] as const)
    await waitUntil(
      `${host}${path} answers through Traefik`,
      async () =>
        (await fetch(`${publicUrl(host)}${path}`, { dispatcher: toController() } as RequestInit)).ok,
      120_000,
    );
}, 1_800_000);

afterAll(async () => {
  stopping = true;
  await browser?.close();
  // The operator first stops the simulator it started (a SIGKILL alone left it running).
  await stopWatched(procs);
  await Promise.all([cluster?.stop(), redis?.stop(), database?.stop?.()]);
  if (dir) rmSync(dir, { recursive: true, force: true });
});

/** NOTES.txt's admin CLI line run as `kubectl exec deploy/<release>-operator` would: the operator's env. */
async function notesCli(line: string, stdin?: string): Promise<string> {
  const [, argv] = line.match(/ -- node dist\/cli\/modelplane\.js (.*?)(?: < password\.txt)?$/) ?? [];
  if (!argv) throw new Error(`not an admin CLI line of NOTES: ${line}`);
  const env = await podEnv('deployments/mp-modelplane-operator');
  return execFileSync(
    process.execPath,
    ['--import', 'tsx', 'cli/modelplane.ts', ...argv.trim().split(/\s+/)],
    { cwd: repo, env: { ...process.env, ...env }, encoding: 'utf8', input: stdin ?? '' },
  );
}

/** A chat stream's content chunks and when each arrived. */
async function streamed(baseURL: string, apiKey: string): Promise<number[]> {
  const client = new OpenAI({ baseURL, apiKey, fetchOptions: { dispatcher: toController() } as object });
  const stream = await client.chat.completions.create({
    model: MODEL,
    messages: [{ role: 'user', content: 'Tell me about the sea' }],
    max_tokens: 16,
    stream: true,
  });
  const at: number[] = [];
  for await (const chunk of stream) if (chunk.choices[0]?.delta?.content) at.push(Date.now());
  return at;
}

describe('from outside, through a real ingress controller (Traefik)', () => {
  let secret = '';
  let account = '';

  it('NOTES.txt’s first commands make the account, its key and the console’s first user', async () => {
    const lines = notes.split('\n').map((l) => l.trim());
    const line = (what: string) => {
      const l = lines.find((x) => x.includes(`modelplane.js ${what}`));
      if (!l) throw new Error(`NOTES has no "${what}" line:\n${notes}`);
      return l;
    };
    account = (await notesCli(line('accounts create'))).match(/\bacct_[0-9A-Za-z]+/)?.[0] ?? '';
    expect(account, 'accounts create printed the account id').not.toBe('');
    const key = await notesCli(line('keys create').replace('<accountId>', account));
    secret = key.match(/\bsk-service-[0-9a-f]+/)?.[0] ?? '';
    expect(secret, 'keys create printed the secret').not.toBe('');
    await notesCli(line('users create').replace('<accountId>', account), `${PASSWORD}\n`);
    // NOTES names the public addresses it was given.
    expect(notes).toContain(`${publicUrl(hosts.api)}/v1`);
    expect(notes).toContain(publicUrl(hosts.console));
  }, 120_000);

  it('a stream through the API’s Ingress and through its HTTPRoute arrives token by token', async () => {
    expect(secret).not.toBe('');
    for (const host of [hosts.api, hosts.gw]) {
      const at = await streamed(`${publicUrl(host)}/v1`, secret);
      expect(at.length, host).toBeGreaterThan(5);
      // 16 tokens 100 ms apart: delivered as made, the first is read well over a second before the
      // last; a controller that buffered the response would hand them over at once.
      expect(at[at.length - 1]! - at[0]!, host).toBeGreaterThan(1_000);
    }
  }, 120_000);

  it('the console at its public address signs in the first user and runs a Playground call through the API’s ingress', async () => {
    browser = await launchChromium([
      '--host-resolver-rules=MAP *.modelplane.test 127.0.0.1',
      // The test's own self-signed certificate (Node checked it is the one served, above).
      '--ignore-certificate-errors',
    ]);
    const page = await browser.newPage();
    const apiCalls: string[] = [];
    page.on('request', (r) => {
      if (r.url().startsWith(`${publicUrl(hosts.api)}/v1/chat/completions`)) apiCalls.push(r.url());
    });
    await page.goto(`${publicUrl(hosts.console)}/playground`);
    await page.getByRole('heading', { name: 'Sign in' }).waitFor();
    await page.getByLabel('Email').fill('you@example.com');
    await page.getByLabel('Password').fill(PASSWORD);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByRole('heading', { name: 'Playground', level: 1 }).waitFor({ timeout: 30_000 });
    await page.locator(`li.card[data-model="${MODEL}"]`).getByRole('button', { name: /^Try/ }).click();
    await page.getByLabel(/^Message/).fill('Tell me about the sea');
    await page.getByLabel(/^Message/).press('Enter');
    const reply = page.locator('[data-testid="message"][data-role="assistant"]').last().getByTestId('reply');
    // Part of the reply shows while the call still runs (Stop is there): it streamed to the browser.
    await expect
      .poll(
        async () =>
          ((await reply.textContent()) ?? '').length > 0 &&
          (await page.getByRole('button', { name: 'Stop' }).count()) === 1,
        { timeout: 30_000 },
      )
      .toBe(true);
    await page.getByRole('button', { name: 'Run' }).waitFor({ timeout: 30_000 });
    expect(((await reply.textContent()) ?? '').length).toBeGreaterThan(0);
    expect(apiCalls, 'the Playground called the API at its public address').not.toEqual([]);
  }, 180_000);

  it('the calls that came in through the controller were charged; the ledger is clean against Redis and the journal', async () => {
    const client = redis.client() as unknown as Redis;
    const metering = new Metering(client);
    const settled = await waitUntil(
      'no hold left open',
      async () => {
        const b = await metering.balance(account);
        return b.held === 0 ? b : null;
      },
      30_000,
    );
    // NOTES' --credits 10, less the two streams and the Playground call.
    expect(settled.balance).toBeLessThan(parseDecimalToNano('10'));
    expect(settled.balance).toBeGreaterThan(0);
    // Against the journal too: every part wrote to the one database the chart's Secret names.
    const journal = await Journal.open(database.url);
    try {
      await expectLedgerClean(client, [account], 5_000, journal);
    } finally {
      await journal.close();
      client.disconnect();
    }
  }, 60_000);
});
