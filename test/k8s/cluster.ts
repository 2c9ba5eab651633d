// A real control plane for operator tests: etcd + kube-apiserver on loopback, a static admin
// token, our own CA and serving cert (so the client verifies TLS), service-account keys, and the
// Model CRD installed and Established. No kubelet, no controller-manager: tests write
// EndpointSlices themselves and garbage collection never runs.
import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { ApiextensionsV1Api, KubeConfig, type V1CustomResourceDefinition } from '@kubernetes/client-node';
import { Agent } from 'undici';
import { parse } from 'yaml';
import { freePort } from '../../core/free-port.ts';

const here = dirname(fileURLToPath(import.meta.url));
const repo = join(here, '..', '..');
export const KUBE_VERSION = process.env.KUBE_VERSION ?? '1.33.13';

export interface TestCluster {
  kubeConfig: KubeConfig;
  server: string;
  token: string;
  /** CA of the serving cert, for raw requests (e.g. `kubectl get`-style tables). */
  ca: Buffer;
  etcdUrl: string;
  /** Kills kube-apiserver (watches break), runs `whileDown`, starts it again on the same port. */
  restartApiServer(whileDown?: () => Promise<void>): Promise<void>;
  stop(): Promise<void>;
}

/** Compacts etcd at its current revision: every older resourceVersion now answers 410 Gone. */
export async function compactEtcd(etcdUrl: string): Promise<number> {
  const post = async (path: string, body: object) =>
    (await (await fetch(`${etcdUrl}${path}`, { method: 'POST', body: JSON.stringify(body) })).json()) as {
      header: { revision: string };
    };
  const { header } = await post('/v3/kv/range', { key: Buffer.from('/').toString('base64') });
  await post('/v3/kv/compaction', { revision: header.revision, physical: true });
  return Number(header.revision);
}

const log = (msg: string) => process.stderr.write(`[test/k8s] ${msg}\n`);

/** The cached binary, or a build (minutes on first run; progress streams to stderr). */
export function kubeApiserverBinary(): string {
  const cache = process.env.MODELPLANE_CACHE ?? join(process.env.HOME ?? tmpdir(), '.cache', 'modelplane');
  const bin = join(cache, `k8s-v${KUBE_VERSION}`, 'kube-apiserver');
  if (existsSync(bin)) return bin;
  log(`kube-apiserver v${KUBE_VERSION} not cached; building it (several minutes the first time)…`);
  const started = Date.now();
  const out = execFileSync(join(here, 'build-kube-apiserver.sh'), {
    env: { ...process.env, KUBE_VERSION },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  log(`built in ${Math.round((Date.now() - started) / 1000)} s`);
  return out.toString().trim();
}

function openssl(args: string[], cwd: string): void {
  execFileSync('openssl', args, { cwd, stdio: ['ignore', 'ignore', 'pipe'] });
}

/** CA, a serving cert for 127.0.0.1/localhost, and the service-account signing key pair. */
function writePki(dir: string): void {
  openssl(
    ['req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-subj', '/CN=modelplane-test-ca', '-days', '2'].concat(
      ['-keyout', 'ca.key', '-out', 'ca.crt'],
    ),
    dir,
  );
  openssl(['genrsa', '-out', 'server.key', '2048'], dir);
  openssl(['req', '-new', '-key', 'server.key', '-subj', '/CN=kube-apiserver', '-out', 'server.csr'], dir);
  writeFileSync(join(dir, 'san.ext'), 'subjectAltName=IP:127.0.0.1,DNS:localhost\n');
  openssl(
    [
      'x509',
      '-req',
      '-in',
      'server.csr',
      '-CA',
      'ca.crt',
      '-CAkey',
      'ca.key',
      '-CAcreateserial',
      '-days',
      '2',
      '-extfile',
      'san.ext',
      '-out',
      'server.crt',
    ],
    dir,
  );
  openssl(['genrsa', '-out', 'sa.key', '2048'], dir);
  openssl(['rsa', '-in', 'sa.key', '-pubout', '-out', 'sa.pub'], dir);
}

interface Started {
  proc: ChildProcess;
  /** What it printed so far (for errors: the reason a process died is in its last lines). */
  output(): string;
}

function startProcess(name: string, bin: string, args: string[], logFile: string): Started {
  const proc = spawn(bin, args, { stdio: ['ignore', 'pipe', 'pipe'] });
  const chunks: Buffer[] = [];
  proc.stdout?.on('data', (c: Buffer) => chunks.push(c));
  proc.stderr?.on('data', (c: Buffer) => chunks.push(c));
  proc.on('exit', () => writeFileSync(logFile, Buffer.concat(chunks)));
  proc.on('error', (err) => log(`${name} failed to start: ${err.message}`));
  return { proc, output: () => Buffer.concat(chunks).toString('utf8') };
}

async function kill(p: ChildProcess): Promise<void> {
  if (p.exitCode !== null || p.signalCode !== null) return;
  const exited = new Promise((r) => p.once('exit', r));
  p.kill('SIGKILL');
  await exited;
}

async function waitFor(what: string, probe: () => Promise<boolean>, started: Started, ms: number) {
  const { proc } = started;
  const deadline = Date.now() + ms;
  while (Date.now() < deadline) {
    if (proc.exitCode !== null) {
      // Let the pipes drain so the last lines (the reason) are in the message.
      await new Promise((r) => setTimeout(r, 100));
      const tail = started.output().trim().split('\n').slice(-15).join('\n');
      throw new Error(`${what} exited with ${proc.exitCode} before it was ready; it printed:\n${tail}`);
    }
    if (await probe().catch(() => false)) return;
    await new Promise((r) => setTimeout(r, 200));
  }
  throw new Error(`${what} not ready after ${ms} ms`);
}

/**
 * etcd on two fresh ports (client, peer). Tried three times: a port checked free can still be taken by another
 * test file's process before etcd binds it, and etcd then exits at once.
 */
async function startEtcd(dir: string): Promise<{ etcd: Started; etcdUrl: string }> {
  for (let attempt = 1; ; attempt++) {
    const [clientPort, peerPort] = [await freePort(), await freePort()];
    const etcdUrl = `http://127.0.0.1:${clientPort}`;
    const peerUrl = `http://127.0.0.1:${peerPort}`;
    const dataDir = join(dir, `etcd-${attempt}`);
    const etcd = startProcess(
      'etcd',
      process.env.ETCD_BIN ?? 'etcd',
      [
        `--data-dir=${dataDir}`,
        `--listen-client-urls=${etcdUrl}`,
        `--advertise-client-urls=${etcdUrl}`,
        `--listen-peer-urls=${peerUrl}`,
        `--initial-advertise-peer-urls=${peerUrl}`,
        `--initial-cluster=default=${peerUrl}`,
        '--log-level=error',
      ],
      join(dir, `etcd-${attempt}.log`),
    );
    try {
      await waitFor('etcd', async () => (await fetch(`${etcdUrl}/health`)).ok, etcd, 20_000);
      return { etcd, etcdUrl };
    } catch (err) {
      await kill(etcd.proc);
      if (attempt === 3) throw err;
      log(`etcd attempt ${attempt} failed, trying other ports: ${(err as Error).message}`);
    }
  }
}

export async function startCluster(): Promise<TestCluster> {
  const bin = kubeApiserverBinary();
  // tmpfs when there is one: etcd 3.4 fsyncs every write and has no --unsafe-no-fsync.
  const base = existsSync('/dev/shm') ? '/dev/shm' : tmpdir();
  const dir = mkdtempSync(join(base, 'mp-k8s-'));
  const pki = join(dir, 'pki');
  mkdirSync(pki);
  writePki(pki);
  const token = randomBytes(24).toString('hex');
  writeFileSync(join(pki, 'tokens.csv'), `${token},admin,admin-uid,system:masters\n`);

  const procs: ChildProcess[] = [];
  const stop = async () => {
    for (const p of [...procs].reverse()) await kill(p);
    rmSync(dir, { recursive: true, force: true });
  };
  try {
    const { etcd, etcdUrl } = await startEtcd(dir);
    procs.push(etcd.proc);
    const apiPort = await freePort();
    const server = `https://127.0.0.1:${apiPort}`;
    const args = [
      `--etcd-servers=${etcdUrl}`,
      `--cert-dir=${pki}`,
      `--tls-cert-file=${join(pki, 'server.crt')}`,
      `--tls-private-key-file=${join(pki, 'server.key')}`,
      `--secure-port=${apiPort}`,
      '--bind-address=127.0.0.1',
      '--advertise-address=127.0.0.1',
      '--service-cluster-ip-range=10.0.0.0/24',
      `--token-auth-file=${join(pki, 'tokens.csv')}`,
      '--authorization-mode=RBAC',
      `--service-account-issuer=${server}/`,
      `--service-account-key-file=${join(pki, 'sa.pub')}`,
      `--service-account-signing-key-file=${join(pki, 'sa.key')}`,
      '--disable-admission-plugins=ServiceAccount',
      '--allow-privileged=true',
      '--enable-priority-and-fairness=false',
    ];
    const ca = readFileSync(join(pki, 'ca.crt'));
    const dispatcher = new Agent({ connect: { ca } });
    const headers = { authorization: `Bearer ${token}` };
    const launch = async () => {
      const apiserver = startProcess('kube-apiserver', bin, args, join(dir, 'kube-apiserver.log'));
      procs.push(apiserver.proc);
      const ready = async () => (await fetch(`${server}/readyz`, { headers, dispatcher } as RequestInit)).ok;
      await waitFor('kube-apiserver', ready, apiserver, 90_000);
      return apiserver.proc;
    };
    let apiserver = await launch();
    const kubeConfig = new KubeConfig();
    kubeConfig.loadFromOptions({
      clusters: [{ name: 'test', server, caData: ca.toString('base64'), skipTLSVerify: false }],
      users: [{ name: 'admin', token }],
      contexts: [{ name: 'test', cluster: 'test', user: 'admin', namespace: 'default' }],
      currentContext: 'test',
    });
    await installCrd({ kubeConfig, server, token, ca });
    const restartApiServer = async (whileDown?: () => Promise<void>) => {
      await kill(apiserver);
      await whileDown?.();
      apiserver = await launch();
    };
    return { kubeConfig, server, token, ca, etcdUrl, restartApiServer, stop };
  } catch (err) {
    await stop();
    throw err;
  }
}

/**
 * Creates crds/model.yaml as `kubectl create -f` would, and waits for Established (the API serves
 * Models only then). Sent raw: client-node's typed serializer drops `x-kubernetes-*` keys written
 * as in YAML, which would silently lose every CEL rule.
 */
export async function installCrd(
  cluster: Pick<TestCluster, 'kubeConfig' | 'server' | 'token' | 'ca'>,
): Promise<void> {
  const body = parse(readFileSync(join(repo, 'crds', 'model.yaml'), 'utf8')) as V1CustomResourceDefinition;
  const res = await fetch(`${cluster.server}/apis/apiextensions.k8s.io/v1/customresourcedefinitions`, {
    method: 'POST',
    headers: { authorization: `Bearer ${cluster.token}`, 'content-type': 'application/json' },
    body: JSON.stringify(body),
    dispatcher: new Agent({ connect: { ca: cluster.ca } }),
  } as RequestInit);
  if (!res.ok) throw new Error(`installing the CRD failed: HTTP ${res.status} ${await res.text()}`);
  const api = cluster.kubeConfig.makeApiClient(ApiextensionsV1Api);
  const name = body.metadata?.name ?? '';
  const deadline = Date.now() + 30_000;
  while (Date.now() < deadline) {
    const crd = await api.readCustomResourceDefinition({ name });
    if (crd.status?.conditions?.some((c) => c.type === 'Established' && c.status === 'True')) return;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`CRD ${name} not Established after 30 s`);
}
