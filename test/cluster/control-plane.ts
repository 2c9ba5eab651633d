// A control plane whose controllers are real, for make e2e-cluster: the test cluster's etcd and
// kube-apiserver (test/k8s/cluster.ts) plus kube-controller-manager and kube-scheduler from the
// same Kubernetes release (test/k8s/build-kube-component.sh) and kwok (test/k8s/build-kwok.sh),
// which plays the kubelets: it marks scheduled pods running and ready, with IPs from its CIDR,
// and runs no container. Nodes are Node objects kwok manages (annotation kwok.x-k8s.io/node=fake);
// volumes are PersistentVolumes the PV controller binds claims to.
import { type ChildProcess, execFileSync, type SpawnOptions, spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Agent } from 'undici';
import { startCluster, type TestCluster } from '../k8s/cluster.ts';
import { writeKubeconfig } from '../k8s/kubeconfig-file.ts';

const here = new URL('../k8s/', import.meta.url).pathname;
const log = (msg: string) => process.stderr.write(`[e2e-cluster] ${msg}\n`);

/** How long kwok takes to make an engine pod ready (kwok-stages.yaml's engine-pod-ready delay). */
export const ENGINE_START_DELAY_MS = 3_000;

export interface ControlPlane extends TestCluster {
  kubeconfig: string;
  /** A raw API call as the admin. */
  api(method: string, path: string, body?: unknown, contentType?: string): Promise<Response>;
  stopAll(): Promise<void>;
}

function built(script: string, ...args: string[]): string {
  const started = Date.now();
  const bin = execFileSync(join(here, script), args, {
    encoding: 'utf8',
    stdio: ['ignore', 'pipe', 'inherit'],
  }).trim();
  if (Date.now() - started > 5_000)
    log(`${script} ${args.join(' ')}: ${Math.round((Date.now() - started) / 1000)} s`);
  return bin;
}

/**
 * Stops programs of the test's: SIGTERM, so one that started children of its own (the operator's
 * local runtime runs its engines as child processes) stops them, then SIGKILL for any still
 * running after `graceMs`. A SIGKILL alone left the operator's simulator running after the suite.
 */
export async function stopWatched(procs: readonly ChildProcess[], graceMs = 10_000): Promise<void> {
  const running = procs.filter((p) => p.exitCode === null && p.signalCode === null);
  await Promise.all(
    running.map(
      (p) =>
        new Promise<void>((resolve) => {
          const timer = setTimeout(() => p.kill('SIGKILL'), graceMs);
          p.once('exit', () => {
            clearTimeout(timer);
            resolve();
          });
          p.kill('SIGTERM');
        }),
    ),
  );
}

/** A program of the test's, its stderr kept; exiting while `stopping()` is false logs its last words. */
export function spawnWatched(
  name: string,
  bin: string,
  args: string[],
  opts: SpawnOptions,
  stopping: () => boolean,
): ChildProcess {
  const p = spawn(bin, args, { ...opts, stdio: ['ignore', 'ignore', 'pipe'] });
  let tail = '';
  p.stderr?.on('data', (b: Buffer) => {
    tail = (tail + b.toString()).slice(-3000);
  });
  p.on('exit', (code, signal) => {
    if (!stopping()) log(`${name} exited (${signal ?? code}); its last words:\n${tail}`);
  });
  return p;
}

export async function startControlPlane(nodes = 2): Promise<ControlPlane> {
  // Built (or found cached) one at a time: each is a long Go build on a small machine.
  const kcm = built('build-kube-component.sh', 'kube-controller-manager');
  const scheduler = built('build-kube-component.sh', 'kube-scheduler');
  const kwok = built('build-kwok.sh');
  const cluster = await startCluster();
  const dir = mkdtempSync(join(tmpdir(), 'mp-control-plane-'));
  const kubeconfig = writeKubeconfig(cluster, cluster.token, join(dir, 'kubeconfig'));
  const dispatcher = new Agent({ connect: { ca: cluster.ca } });
  const api = (method: string, path: string, body?: unknown, contentType = 'application/json') =>
    fetch(`${cluster.server}${path}`, {
      method,
      headers: { authorization: `Bearer ${cluster.token}`, 'content-type': contentType },
      ...(body === undefined ? {} : { body: typeof body === 'string' ? body : JSON.stringify(body) }),
      dispatcher,
    } as RequestInit);

  const procs: ChildProcess[] = [];
  const run = (name: string, bin: string, args: string[]) => {
    procs.push(spawnWatched(name, bin, args, {}, () => stopping));
  };
  let stopping = false;
  const stopAll = async () => {
    stopping = true;
    for (const p of procs) p.kill('SIGKILL');
    await cluster.stop();
    rmSync(dir, { recursive: true, force: true });
  };
  try {
    writeFileSync(join(dir, 'ca.crt'), cluster.ca);
    run('kube-controller-manager', kcm, [
      `--kubeconfig=${kubeconfig}`,
      `--root-ca-file=${join(dir, 'ca.crt')}`,
      '--leader-elect=false',
      '--use-service-account-credentials=false',
      // Nothing here signs certificates or tokens, and there is no cloud.
      '--controllers=*,-csrsigning,-serviceaccount-token,-bootstrapsigner,-tokencleaner',
      '--secure-port=0',
      '--concurrent-deployment-syncs=5',
      // Fast reactions: the test waits on them.
      '--node-monitor-grace-period=40s',
    ]);
    run('kube-scheduler', scheduler, [
      `--kubeconfig=${kubeconfig}`,
      `--authentication-kubeconfig=${kubeconfig}`,
      `--authorization-kubeconfig=${kubeconfig}`,
      '--leader-elect=false',
      '--secure-port=0',
    ]);
    run('kwok', kwok, [
      `--kubeconfig=${kubeconfig}`,
      '--manage-all-nodes=false',
      '--manage-nodes-with-annotation-selector=kwok.x-k8s.io/node=fake',
      '--manage-nodes-with-label-selector=',
      '--manage-single-node=',
      '--cidr=10.244.0.0/16',
      '--node-ip=10.0.1.1',
      '--node-lease-duration-seconds=40',
      // Engine pods start after ENGINE_START_DELAY_MS, the rest at once (kwok-stages.yaml).
      `--config=${new URL('./kwok-stages.yaml', import.meta.url).pathname}`,
    ]);
    for (let i = 0; i < nodes; i++) {
      const name = `kwok-node-${i}`;
      const capacity = { cpu: '32', memory: '256Gi', pods: '110', 'ephemeral-storage': '1Ti' };
      const r = await api('POST', '/api/v1/nodes', {
        apiVersion: 'v1',
        kind: 'Node',
        metadata: {
          name,
          annotations: { 'kwok.x-k8s.io/node': 'fake', 'node.alpha.kubernetes.io/ttl': '0' },
          labels: {
            'kubernetes.io/hostname': name,
            'kubernetes.io/os': 'linux',
            'kubernetes.io/arch': 'amd64',
            type: 'kwok',
          },
        },
        status: { allocatable: capacity, capacity },
      });
      if (!r.ok) throw new Error(`creating node ${name}: ${r.status} ${await r.text()}`);
    }
    return { ...cluster, kubeconfig, api, stopAll };
  } catch (err) {
    await stopAll();
    throw err;
  }
}
