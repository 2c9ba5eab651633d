// The chart against a real kube-apiserver: its rendered manifests, defaults and every option on,
// sent as server-side dry-run creates with strict field validation (an unknown field, a wrong type
// or an invalid value is a 4xx here, and nothing is stored); then a real `helm install` (NOTES.txt
// printed), `helm upgrade` keeping the key-encryption key, and `helm uninstall` leaving only it.
// No controllers run here: the objects are stored, not acted on (make e2e-cluster runs them).
import { lstatSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Agent } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startCluster, type TestCluster } from '../k8s/cluster.ts';
import { writeKubeconfig } from '../k8s/kubeconfig-file.ts';
import { allOnValues, chartDir, helm, helmBinary, type K8sObject, render, repo } from './helm.ts';

let cluster: TestCluster;
let dispatcher: Agent;

beforeAll(async () => {
  helmBinary();
  cluster = await startCluster();
  dispatcher = new Agent({ connect: { ca: cluster.ca } });
  // The release's namespace and the one all-on's NetworkPolicy reaches into, created for real:
  // dry-run creates inside a namespace that does not exist are refused.
  for (const name of ['modelplane', 'models']) {
    const r = await api('POST', '/api/v1/namespaces', {
      apiVersion: 'v1',
      kind: 'Namespace',
      metadata: { name },
    });
    expect(r.status, await r.text()).toBe(201);
  }
}, 900_000);
afterAll(async () => {
  await cluster?.stop();
});

function api(method: string, path: string, body?: unknown): Promise<Response> {
  return fetch(`${cluster.server}${path}`, {
    method,
    headers: { authorization: `Bearer ${cluster.token}`, 'content-type': 'application/json' },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    dispatcher,
  } as RequestInit);
}

interface Resource {
  name: string;
  namespaced: boolean;
  kind: string;
}
const discovered = new Map<string, Resource[] | null>();

/** The API's resource for a kind, from discovery; null when the group is not served here. */
async function resourceOf(o: K8sObject): Promise<Resource | null> {
  const path = o.apiVersion.includes('/') ? `/apis/${o.apiVersion}` : `/api/${o.apiVersion}`;
  if (!discovered.has(path)) {
    const r = await api('GET', path);
    discovered.set(path, r.ok ? ((await r.json()) as { resources: Resource[] }).resources : null);
  }
  return discovered.get(path)?.find((x) => x.kind === o.kind && !x.name.includes('/')) ?? null;
}

/** Dry-run creates every object; returns the kinds the server does not serve (left untried). */
async function dryRun(objects: K8sObject[]): Promise<string[]> {
  const unserved: string[] = [];
  for (const o of objects) {
    const res = await resourceOf(o);
    if (!res) {
      unserved.push(`${o.apiVersion}/${o.kind}`);
      continue;
    }
    const base = o.apiVersion.includes('/') ? `/apis/${o.apiVersion}` : `/api/${o.apiVersion}`;
    const ns = res.namespaced ? `/namespaces/${o.metadata.namespace ?? 'modelplane'}` : '';
    const r = await api('POST', `${base}${ns}/${res.name}?dryRun=All&fieldValidation=Strict`, o);
    expect(r.status, `${o.kind}/${o.metadata.name}: ${await r.text()}`).toBe(201);
  }
  return unserved;
}

describe('server-side dry-run on a real kube-apiserver', () => {
  // The CRD itself is installed by the test cluster from crds/model.yaml, of which the chart's
  // crds/ holds a copy; creating it again would only be a conflict.
  const withoutCrd = (objects: K8sObject[]) => objects.filter((o) => o.kind !== 'CustomResourceDefinition');

  // A copy, not a symlink: helm warns "found symbolic link in path" on every command otherwise.
  it('the chart carries crds/model.yaml byte for byte, as a file of its own', () => {
    expect(lstatSync(join(chartDir, 'crds', 'model.yaml')).isSymbolicLink()).toBe(false);
    expect(readFileSync(join(chartDir, 'crds', 'model.yaml'), 'utf8')).toBe(
      readFileSync(join(repo, 'crds', 'model.yaml'), 'utf8'),
    );
  });

  it('default values: every object is accepted', async () => {
    const objects = withoutCrd(await render());
    expect(objects.length).toBeGreaterThan(15);
    expect(await dryRun(objects)).toEqual([]);
  }, 120_000);

  it('every option on: every object is accepted; only prometheus-operator and Gateway API kinds are not served here', async () => {
    const objects = withoutCrd(await render(['-f', allOnValues]));
    const unserved = await dryRun(objects);
    // No prometheus-operator or Gateway API CRDs in this cluster: these are checked by promtool and
    // the chart tests (test/chart/public-url.test.ts for the HTTPRoute).
    expect([...new Set(unserved)].sort()).toEqual([
      'gateway.networking.k8s.io/v1/HTTPRoute',
      'monitoring.coreos.com/v1/PodMonitor',
      'monitoring.coreos.com/v1/PrometheusRule',
      'monitoring.coreos.com/v1/ServiceMonitor',
    ]);
  }, 120_000);
});

describe('helm install, upgrade and uninstall on a real kube-apiserver', () => {
  let kubeconfig: string;
  beforeAll(() => {
    kubeconfig = writeKubeconfig(cluster, cluster.token);
  });
  const kek = async () => {
    const r = await api('GET', '/api/v1/namespaces/modelplane/secrets/mp-modelplane-kek');
    return r.ok ? ((await r.json()) as { data: { kek: string } }).data.kek : null;
  };
  const run = (args: string[]) => helm([...args, '--namespace', 'modelplane', '--kubeconfig', kubeconfig]);

  it('install prints NOTES; upgrade keeps the generated key-encryption key; uninstall leaves only it', async () => {
    // The CRD is already there (the test cluster installed it); helm skips existing CRDs.
    const installed = await run(['install', 'mp', chartDir]);
    expect(installed.code, installed.stderr).toBe(0);
    const notes = installed.stdout.slice(installed.stdout.indexOf('NOTES:'));
    expect(notes).toContain('http://mp-modelplane-proxy.modelplane.svc:80/v1');
    expect(notes).toContain('http://mp-modelplane-console.modelplane.svc:80');
    expect(notes).toContain('kubectl -n modelplane rollout status statefulset/mp-modelplane-proxy');
    expect(notes).toContain('kubectl get models');
    // The admin CLI from the images, in the operator's pod; NOTES end with the console's first user.
    expect(notes).toContain(
      'kubectl -n modelplane exec deploy/mp-modelplane-operator -- node dist/cli/modelplane.js accounts create',
    );
    expect(notes).toContain('node dist/cli/modelplane.js users create --email you@example.com');
    expect(notes).toContain('Sign in to the console with that email and password');
    // The defaults keep media on each proxy's emptyDir: NOTES say the console cannot serve batch files.
    expect(notes).toContain('the console cannot serve batches');
    const first = await kek();
    expect(Buffer.from(first ?? '', 'base64').toString()).toMatch(/^[0-9a-f]{64}$/);

    const upgraded = await run(['upgrade', 'mp', chartDir, '--set', 'proxy.replicas=3']);
    expect(upgraded.code, upgraded.stderr).toBe(0);
    expect(await kek(), 'the upgrade kept the key').toBe(first);
    const sts = await api('GET', '/apis/apps/v1/namespaces/modelplane/statefulsets/mp-modelplane-proxy');
    expect(((await sts.json()) as { spec: { replicas: number } }).spec.replicas).toBe(3);

    // --no-hooks: no scheduler or kubelet runs the pre-delete hook pod here (e2e-cluster runs it).
    const removed = await run(['uninstall', 'mp', '--no-hooks']);
    expect(removed.code, removed.stderr).toBe(0);
    expect(removed.stdout).toContain('mp-modelplane-kek');
    expect(await kek(), 'uninstall keeps the key (resource-policy keep)').toBe(first);
    for (const path of [
      '/apis/apps/v1/namespaces/modelplane/statefulsets/mp-modelplane-proxy',
      '/apis/apps/v1/namespaces/modelplane/deployments/mp-modelplane-operator',
      '/apis/rbac.authorization.k8s.io/v1/clusterroles/mp-modelplane-operator',
    ])
      expect((await api('GET', path)).status, path).toBe(404);

    // Installed again, the release finds the kept key and uses it.
    const again = await run(['install', 'mp', chartDir]);
    expect(again.code, again.stderr).toBe(0);
    expect(await kek()).toBe(first);
    expect((await run(['uninstall', 'mp', '--no-hooks'])).code).toBe(0);
  }, 180_000);
});
