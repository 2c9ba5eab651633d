// The chart's rendered manifests, defaults and every option on, sent to a real kube-apiserver as
// server-side dry-run creates with strict field validation: every object passes the API server's
// own validation and admission (an unknown field, a wrong type or an invalid value is a 4xx here),
// and nothing is stored.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Agent } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startCluster, type TestCluster } from '../k8s/cluster.ts';
import { allOnValues, chartDir, helmBinary, type K8sObject, render, repo } from './helm.ts';

let cluster: TestCluster;
let dispatcher: Agent;

beforeAll(async () => {
  helmBinary();
  cluster = await startCluster();
  dispatcher = new Agent({ connect: { ca: cluster.ca } });
  // The release's namespace and the one all-on's NetworkPolicy reaches into, created for real:
  // dry-run creates inside a namespace that does not exist are refused.
  for (const name of ['modelplane', 'models']) {
    const r = await api('POST', '/api/v1/namespaces', { apiVersion: 'v1', kind: 'Namespace', metadata: { name } });
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
  // The CRD itself is installed by the test cluster from crds/model.yaml, the very file the
  // chart's crds/ links to; creating it again would only be a conflict.
  const withoutCrd = (objects: K8sObject[]) => objects.filter((o) => o.kind !== 'CustomResourceDefinition');

  it('the chart links crds/model.yaml rather than copying it', () => {
    expect(readFileSync(join(chartDir, 'crds', 'model.yaml'), 'utf8')).toBe(
      readFileSync(join(repo, 'crds', 'model.yaml'), 'utf8'),
    );
  });

  it('default values: every object is accepted', async () => {
    const objects = withoutCrd(await render());
    expect(objects.length).toBeGreaterThan(15);
    expect(await dryRun(objects)).toEqual([]);
  }, 120_000);

  it('every option on: every object is accepted; only prometheus-operator kinds are not served here', async () => {
    const objects = withoutCrd(await render(['-f', allOnValues]));
    const unserved = await dryRun(objects);
    // No prometheus-operator CRDs in this cluster: these are checked by promtool and the chart tests.
    expect([...new Set(unserved)].sort()).toEqual([
      'monitoring.coreos.com/v1/PodMonitor',
      'monitoring.coreos.com/v1/PrometheusRule',
      'monitoring.coreos.com/v1/ServiceMonitor',
    ]);
  }, 120_000);
});
