// From outside the cluster (issue 36): proxy.publicUrl and console.publicUrl are the two addresses
// an admin sets, and the console's API address, the proxy's allowed browser origin and the hosts
// of the Ingresses and the Gateway API HTTPRoute follow from them; the route and the ingress keep
// long streams open. Also the pre-delete hook that stops every engine on `helm uninstall`, and the
// stores checksum that rolls every part when Redis or the journal moves.
import { beforeAll, describe, expect, it } from 'vitest';
import { chartDir, find, helm, helmBinary, type K8sObject, render } from './helm.ts';

const publicUrls = [
  '--set',
  'proxy.publicUrl=https://api.example.com',
  '--set',
  'console.publicUrl=https://console.example.com:8443/',
];
const envOf = (o: K8sObject) =>
  Object.fromEntries(
    (o.spec.template.spec.containers[0].env as { name: string; value?: string }[]).map((e) => [
      e.name,
      e.value,
    ]),
  );
let defaults: K8sObject[];
let outside: K8sObject[];

beforeAll(async () => {
  helmBinary();
  [defaults, outside] = await Promise.all([
    render(),
    render([
      ...publicUrls,
      '--set',
      'proxy.ingress.enabled=true',
      '--set',
      'console.ingress.enabled=true',
      '--set',
      'proxy.httpRoute.enabled=true',
      '--set',
      'proxy.httpRoute.parentRefs[0].name=public',
      '--set',
      'proxy.httpRoute.parentRefs[0].namespace=gateways',
    ]),
  ]);
}, 900_000);

describe('two public addresses, everything else follows', () => {
  it('the console calls the API at proxy.publicUrl/v1, and the proxy allows the console’s origin', () => {
    expect(envOf(find(outside, 'Deployment', 'mp-modelplane-console')).CONSOLE_API_BASE_URL).toBe(
      'https://api.example.com/v1',
    );
    const proxy = envOf(find(outside, 'StatefulSet', 'mp-modelplane-proxy'));
    expect(proxy.PROXY_CORS_ORIGINS).toBe('https://console.example.com:8443');
    expect(proxy.PROXY_PUBLIC_URL).toBe('https://api.example.com');
    // Unset, neither is invented: the console keeps its own default and the proxy allows no origin.
    expect(envOf(find(defaults, 'Deployment', 'mp-modelplane-console')).CONSOLE_API_BASE_URL).toBeUndefined();
    expect(envOf(find(defaults, 'StatefulSet', 'mp-modelplane-proxy')).PROXY_CORS_ORIGINS).toBeUndefined();
  });

  it('explicit values win over what follows', async () => {
    const objects = await render([
      ...publicUrls,
      '--set',
      'console.apiBaseUrl=https://llm.example.org/v1',
      '--set',
      'proxy.corsOrigins=https://a.example\\,https://b.example',
    ]);
    expect(envOf(find(objects, 'Deployment', 'mp-modelplane-console')).CONSOLE_API_BASE_URL).toBe(
      'https://llm.example.org/v1',
    );
    expect(envOf(find(objects, 'StatefulSet', 'mp-modelplane-proxy')).PROXY_CORS_ORIGINS).toBe(
      'https://a.example,https://b.example',
    );
  });

  it('the Ingresses take their hosts from the public addresses; the API’s buffers nothing', () => {
    expect(find(outside, 'Ingress', 'mp-modelplane-console').spec.rules[0].host).toBe('console.example.com');
    const api = find(outside, 'Ingress', 'mp-modelplane-proxy');
    expect(api.spec.rules[0].host).toBe('api.example.com');
    expect(api.spec.rules[0].http.paths[0].backend.service).toEqual({
      name: 'mp-modelplane-proxy',
      port: { name: 'http' },
    });
    expect(api.metadata.annotations).toMatchObject({
      'nginx.ingress.kubernetes.io/proxy-buffering': 'off',
      'nginx.ingress.kubernetes.io/proxy-request-buffering': 'off',
      'nginx.ingress.kubernetes.io/proxy-read-timeout': '3600',
    });
  });

  it('the HTTPRoute attaches to the named Gateway, for the API’s host, with no timeout to cut a stream', () => {
    const route = find(outside, 'HTTPRoute', 'mp-modelplane-proxy');
    expect(route.apiVersion).toBe('gateway.networking.k8s.io/v1');
    expect(route.spec.parentRefs).toEqual([{ name: 'public', namespace: 'gateways' }]);
    expect(route.spec.hostnames).toEqual(['api.example.com']);
    expect(route.spec.rules[0].backendRefs).toEqual([{ name: 'mp-modelplane-proxy', port: 80 }]);
    expect(route.spec.rules[0].timeouts).toEqual({ request: '0s', backendRequest: '0s' });
  });

  it('an ingress or route with no host to serve is refused, naming the value to set', async () => {
    for (const [flag, named] of [
      ['proxy.ingress.enabled=true', 'proxy.ingress.host (or proxy.publicUrl)'],
      ['console.ingress.enabled=true', 'console.ingress.host (or console.publicUrl)'],
    ] as const) {
      const r = await helm(['template', 'mp', chartDir, '--set', flag]);
      expect(r.code).not.toBe(0);
      expect(r.stderr).toContain(named);
    }
    const noGateway = await helm([
      'template',
      'mp',
      chartDir,
      ...publicUrls,
      '--set',
      'proxy.httpRoute.enabled=true',
    ]);
    expect(noGateway.stderr).toContain('proxy.httpRoute.parentRefs');
  });
});

describe('uninstall and store changes', () => {
  it('a pre-delete hook pod deletes the Models with least privilege, and goes once it succeeded', () => {
    const hook = find(defaults, 'Pod', 'mp-modelplane-uninstall');
    expect(hook.metadata.annotations).toMatchObject({
      'helm.sh/hook': 'pre-delete',
      'helm.sh/hook-delete-policy': 'before-hook-creation,hook-succeeded',
    });
    expect(hook.spec.containers[0].command).toEqual(['/usr/bin/node', '/app/dist/operator/uninstall.js']);
    expect(hook.spec.serviceAccountName).toBe('mp-modelplane-uninstall');
    expect(find(defaults, 'ClusterRole', 'mp-modelplane-uninstall').rules).toEqual([
      { apiGroups: ['modelplane.dev'], resources: ['models'], verbs: ['get', 'list', 'delete', 'patch'] },
    ]);
    // Its RBAC exists before the pod (a lower hook weight).
    for (const kind of ['ServiceAccount', 'ClusterRole', 'ClusterRoleBinding'])
      expect(
        Number(find(defaults, kind, 'mp-modelplane-uninstall').metadata.annotations?.['helm.sh/hook-weight']),
      ).toBeLessThan(0);
  });

  it('uninstall.deleteModels=false renders no hook', async () => {
    const objects = await render(['--set', 'uninstall.deleteModels=false']);
    expect(objects.filter((o) => o.metadata.name === 'mp-modelplane-uninstall')).toEqual([]);
  });

  it('moving Redis or the journal changes every part’s pod template, so all of them restart on the new stores', async () => {
    const moved = await render([
      '--set',
      'redis.mode=external',
      '--set',
      'redis.external.existingSecret=prod-redis',
      '--set',
      'journal.databaseUrl.existingSecret=prod-journal',
    ]);
    const sums = (objects: K8sObject[]) =>
      [
        'Deployment/mp-modelplane-operator',
        'Deployment/mp-modelplane-console',
        'StatefulSet/mp-modelplane-proxy',
      ].map((k) => {
        const [kind, name] = k.split('/') as [string, string];
        return find(objects, kind, name).spec.template.metadata.annotations['checksum/stores'] as string;
      });
    const before = sums(defaults);
    const after = sums(moved);
    expect(new Set(before).size).toBe(1);
    expect(new Set(after).size).toBe(1);
    expect(after[0]).not.toBe(before[0]);
  });

  it('simulator Models run the simulator image from image.registry and image.tag', async () => {
    const objects = await render([
      '--set',
      'image.registry=registry.example.com/mp',
      '--set',
      'image.tag=1.2.3',
    ]);
    expect(envOf(find(objects, 'Deployment', 'mp-modelplane-operator')).OPERATOR_SIMULATOR_IMAGE).toBe(
      'registry.example.com/mp/simulator:1.2.3',
    );
  });
});
