// The Helm chart charts/modelplane, rendered by a real helm (built from the Go module proxy):
// lint and template pass for the defaults and for every option on, the values schema refuses wrong
// values with a message naming them, and every workload runs locked down (non-root, read-only root
// filesystem, no privilege escalation, no capabilities, requests and limits, probes).
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { parse, parseAllDocuments } from 'yaml';
import { parseFleetConfig } from '../../operator/fleet/profiles.ts';
import { allOnValues, chartDir, find, helm, helmBinary, type K8sObject, render, repo } from './helm.ts';

let defaults: K8sObject[];
let allOn: K8sObject[];

beforeAll(async () => {
  helmBinary();
  [defaults, allOn] = await Promise.all([render(), render(['-f', allOnValues])]);
}, 900_000);

const workloads = (objects: K8sObject[]) =>
  objects.filter((o) => o.kind === 'Deployment' || o.kind === 'StatefulSet');

describe('helm lint and template', () => {
  it('lint passes (strict) with the default values and with every option on', async () => {
    for (const extra of [[], ['-f', allOnValues]]) {
      const r = await helm(['lint', chartDir, '--strict', ...extra]);
      expect(r.code, `${r.stdout}\n${r.stderr}`).toBe(0);
      expect(r.stdout).toContain('1 chart(s) linted, 0 chart(s) failed');
    }
  });

  it('renders the platform with the defaults: operator, proxy fleet, console, bundled Redis, the CRD', () => {
    const kinds = defaults.map((o) => `${o.kind}/${o.metadata.name}`);
    for (const k of [
      'CustomResourceDefinition/models.modelplane.dev',
      'Deployment/mp-modelplane-operator',
      'StatefulSet/mp-modelplane-proxy',
      'Service/mp-modelplane-proxy',
      'PodDisruptionBudget/mp-modelplane-proxy',
      'Deployment/mp-modelplane-console',
      'Service/mp-modelplane-console',
      'StatefulSet/mp-modelplane-redis',
      'Secret/mp-modelplane-kek',
      'NetworkPolicy/mp-modelplane-engines',
      'NetworkPolicy/mp-modelplane-redis',
      'Role/mp-modelplane-operator-leader-election',
      'ConfigMap/mp-modelplane-engines',
    ])
      expect(kinds).toContain(k);
    // Off by default: they need prometheus-operator, an ingress controller, a metrics adapter.
    for (const k of ['PrometheusRule', 'ServiceMonitor', 'Ingress', 'HorizontalPodAutoscaler'])
      expect(defaults.map((o) => o.kind)).not.toContain(k);
    // The one ConfigMap by default is the engine fleet the operator reads (no dashboards).
    expect(defaults.filter((o) => o.kind === 'ConfigMap').map((o) => o.metadata.name)).toEqual([
      'mp-modelplane-engines',
    ]);
  });

  it('renders every option: HPA on CPU and in-flight, ingress, monitoring, dashboards, S3, persistence', () => {
    const hpa = find(allOn, 'HorizontalPodAutoscaler', 'mp-modelplane-proxy');
    expect(hpa.spec.scaleTargetRef).toEqual({
      apiVersion: 'apps/v1',
      kind: 'StatefulSet',
      name: 'mp-modelplane-proxy',
    });
    expect(hpa.spec.metrics.map((m: { type: string }) => m.type)).toEqual(['Resource', 'Pods']);
    expect(hpa.spec.metrics[1].pods.metric.name).toBe('mp_proxy_in_flight_requests');
    const proxy = find(allOn, 'StatefulSet', 'mp-modelplane-proxy');
    expect(proxy.spec.replicas, 'the HPA owns the replica count').toBeUndefined();
    expect(proxy.spec.volumeClaimTemplates[0].metadata.name).toBe('journal');
    const env = Object.fromEntries(
      proxy.spec.template.spec.containers[0].env.map((e: { name: string; value?: string }) => [
        e.name,
        e.value,
      ]),
    );
    expect(env).toMatchObject({ MEDIA_STORE: 's3', S3_BUCKET: 'media', PROXY_METRICS_PORT: '9464' });
    // Tracing on: the collector and the sampling ratio (docs/install.md "Turning tracing on").
    expect(env).toMatchObject({
      OTEL_EXPORTER_OTLP_ENDPOINT: 'http://otel-collector.observability:4318',
      PROXY_TRACE_SAMPLE_RATIO: '0.05',
    });
    const defaultEnv = find(defaults, 'StatefulSet', 'mp-modelplane-proxy').spec.template.spec.containers[0]
      .env;
    expect(
      defaultEnv.map((e: { name: string }) => e.name),
      'tracing is off by default',
    ).not.toContain('OTEL_EXPORTER_OTLP_ENDPOINT');
    expect(find(allOn, 'Ingress', 'mp-modelplane-console').spec.rules[0].host).toBe('console.example.com');
    expect(find(allOn, 'NetworkPolicy', 'mp-modelplane-engines').metadata.namespace).toBe('modelplane');
    expect(
      allOn
        .filter((o) => o.kind === 'NetworkPolicy' && o.metadata.name === 'mp-modelplane-engines')
        .map((o) => o.metadata.namespace),
    ).toEqual(['modelplane', 'models']);
    // The proxy calls engines; the operator loads LoRA adapters onto them (docs/models.md#adapters).
    expect(
      find(allOn, 'NetworkPolicy', 'mp-modelplane-engines').spec.ingress[0].from.map(
        (p: { podSelector: { matchLabels: Record<string, string> } }) =>
          p.podSelector.matchLabels['app.kubernetes.io/component'],
      ),
    ).toEqual(['proxy', 'operator']);
    expect(allOn.filter((o) => o.kind === 'ServiceMonitor').map((o) => o.metadata.name)).toEqual([
      'mp-modelplane-proxy',
      'mp-modelplane-operator',
    ]);
    expect(find(allOn, 'PodMonitor', 'mp-modelplane-engines').spec.podMetricsEndpoints[0].port).toBe('http');
    // The proxy's metrics port is a value, apart from the API port (docs/security.md "Metrics port").
    expect(find(allOn, 'Service', 'mp-modelplane-proxy-headless').spec.ports[0].port).toBe(9464);
  });

  it('the PrometheusRule carries exactly the groups of the plain rules file', () => {
    const plain = parse(readFileSync(join(chartDir, 'files', 'prometheus-rules.yaml'), 'utf8'));
    expect(find(allOn, 'PrometheusRule', 'mp-modelplane').spec).toEqual(plain);
  });

  it('the dashboards ConfigMap has the Grafana sidecar label and the dashboard JSON', () => {
    const cm = find(allOn, 'ConfigMap', 'mp-modelplane-dashboards');
    expect(cm.metadata.labels?.grafana_dashboard).toBe('1');
    const file = readFileSync(join(chartDir, 'files', 'dashboards', 'modelplane.json'), 'utf8');
    expect(JSON.parse(cm.data['modelplane.json'])).toEqual(JSON.parse(file));
  });

  it('the operator gets exactly the permissions operator/deploy/rbac.yaml grants', () => {
    const reference = parseAllDocuments(
      readFileSync(join(repo, 'operator', 'deploy', 'rbac.yaml'), 'utf8'),
    ).map((d) => d.toJS() as K8sObject);
    const rules = (objects: K8sObject[], kind: string) => objects.find((o) => o.kind === kind)?.rules;
    expect(rules(defaults, 'ClusterRole')).toEqual(rules(reference, 'ClusterRole'));
    expect(rules(defaults, 'Role')).toEqual(rules(reference, 'Role'));
  });
});

describe('the proxy drains before it stops', () => {
  it('termination grace above PROXY_SHUTDOWN_GRACE_MS + PROXY_SHUTDOWN_DRAIN_MS + the preStop pause; readiness on /readyz', () => {
    for (const [objects, graceMs, drainMs, preStop] of [
      [defaults, 10_000, 5_000, 5],
      [allOn, 30_000, 10_000, 10],
    ] as const) {
      const pod = find(objects, 'StatefulSet', 'mp-modelplane-proxy').spec.template.spec;
      expect(pod.terminationGracePeriodSeconds).toBeGreaterThan(preStop + (graceMs + drainMs) / 1000);
      const c = pod.containers[0];
      expect(c.lifecycle.preStop.sleep.seconds).toBe(preStop);
      expect(c.readinessProbe.httpGet.path).toBe('/readyz');
      const env = Object.fromEntries(c.env.map((e: { name: string; value?: string }) => [e.name, e.value]));
      expect(env.PROXY_SHUTDOWN_GRACE_MS).toBe(String(graceMs));
      expect(env.PROXY_SHUTDOWN_DRAIN_MS).toBe(String(drainMs));
      expect(c.volumeMounts).toContainEqual({ name: 'journal', mountPath: env.PROXY_DATA_DIR });
    }
  });
});

describe('the proxy has an origin for signed links', () => {
  it('the proxy Service in-cluster by default, proxy.publicUrl when set (the image runs NODE_ENV=production, where the proxy will not start without one)', () => {
    const envOf = (objects: K8sObject[]) =>
      Object.fromEntries(
        find(objects, 'StatefulSet', 'mp-modelplane-proxy').spec.template.spec.containers[0].env.map(
          (e: { name: string; value?: string }) => [e.name, e.value],
        ),
      );
    const svc = find(defaults, 'Service', 'mp-modelplane-proxy');
    expect(envOf(defaults).PROXY_PUBLIC_URL).toBe(
      `http://mp-modelplane-proxy.${svc.metadata.namespace}.svc:${svc.spec.ports[0].port}`,
    );
    expect(envOf(allOn).PROXY_PUBLIC_URL).toBe('https://api.example.com');
  });
});

describe('the console trusts only the configured balancers', () => {
  it('CONSOLE_TRUSTED_PROXIES only when console.trustedProxies is set (default: no hop trusted)', () => {
    const envOf = (objects: K8sObject[]) =>
      Object.fromEntries(
        find(objects, 'Deployment', 'mp-modelplane-console').spec.template.spec.containers[0].env.map(
          (e: { name: string; value?: string }) => [e.name, e.value],
        ),
      );
    expect(envOf(defaults).CONSOLE_TRUSTED_PROXIES).toBeUndefined();
    expect(envOf(allOn).CONSOLE_TRUSTED_PROXIES).toBe('10.0.0.0/8');
  });
});

describe('the durable journal', () => {
  it('DATABASE_URL from the named Secret for the proxy and the console only when journal.databaseUrl is set', async () => {
    const withJournal = await render(['--set', 'journal.databaseUrl.existingSecret=pg-url']);
    const dbEnv = (objects: K8sObject[], kind: string, name: string) =>
      find(objects, kind, name).spec.template.spec.containers[0].env.find(
        (e: { name: string }) => e.name === 'DATABASE_URL',
      );
    for (const [kind, name] of [
      ['StatefulSet', 'mp-modelplane-proxy'],
      ['Deployment', 'mp-modelplane-console'],
    ] as const) {
      expect(dbEnv(defaults, kind, name)).toBeUndefined();
      expect(dbEnv(withJournal, kind, name)).toEqual({
        name: 'DATABASE_URL',
        valueFrom: { secretKeyRef: { name: 'pg-url', key: 'url' } },
      });
    }
  });
});

describe('every workload is locked down', () => {
  for (const [name, get] of [
    ['defaults', () => defaults],
    ['every option on', () => allOn],
  ] as const) {
    it(`${name}: non-root, read-only root fs, no privilege escalation, no capabilities, requests and limits, probes`, () => {
      const list = workloads(get());
      expect(list.length).toBeGreaterThanOrEqual(4);
      for (const w of list) {
        const pod = w.spec.template.spec;
        const where = `${w.kind}/${w.metadata.name}`;
        expect(pod.securityContext?.runAsNonRoot, where).toBe(true);
        expect(pod.securityContext?.runAsUser, where).toBeGreaterThan(0);
        for (const c of [...(pod.initContainers ?? []), ...pod.containers]) {
          const at = `${where} container ${c.name}`;
          expect(c.securityContext?.runAsNonRoot, at).toBe(true);
          expect(c.securityContext?.readOnlyRootFilesystem, at).toBe(true);
          expect(c.securityContext?.allowPrivilegeEscalation, at).toBe(false);
          expect(c.securityContext?.privileged ?? false, at).toBe(false);
          expect(c.securityContext?.capabilities?.drop, at).toEqual(['ALL']);
          expect(c.securityContext?.capabilities?.add, at).toBeUndefined();
          for (const kind of ['requests', 'limits'])
            for (const r of ['cpu', 'memory'])
              expect(c.resources?.[kind]?.[r], `${at} ${kind}.${r}`).toBeDefined();
          expect(c.readinessProbe, `${at} readinessProbe`).toBeDefined();
          expect(c.livenessProbe, `${at} livenessProbe`).toBeDefined();
        }
      }
    });
  }
});

describe('values.schema.json', () => {
  // Each wrong value is refused before anything renders, with a message naming the key.
  const refusals: Array<[string, string[], RegExp]> = [
    ['a replica count that is not a number', ['--set', 'proxy.replicas=two'], /proxy\.replicas|replicas/],
    ['an unknown Redis mode', ['--set', 'redis.mode=sentinel'], /redis\.mode|mode/],
    [
      'a Stripe publishable key where the secret key goes',
      ['--set', 'console.secrets.stripeSecretKey=pk_live_x'],
      /stripeSecretKey/,
    ],
    ['a misspelt key', ['--set', 'proxy.replica=3'], /replica/],
    ['a tracing sample ratio above 1', ['--set', 'proxy.tracing.sampleRatio=2'], /sampleRatio/],
  ];
  for (const [what, args, names] of refusals) {
    it(`refuses ${what}`, async () => {
      const r = await helm(['template', 'mp', chartDir, ...args]);
      expect(r.code).not.toBe(0);
      expect(r.stderr).toContain("values don't meet the specifications of the schema");
      expect(r.stderr).toMatch(names);
    });
  }
});

describe('secrets and Redis', () => {
  it('generates a 64-hex key-encryption key kept across upgrades and uninstall', () => {
    const kek = find(defaults, 'Secret', 'mp-modelplane-kek');
    expect(Buffer.from(kek.data.kek, 'base64').toString()).toMatch(/^[0-9a-f]{64}$/);
    expect(kek.metadata.annotations?.['helm.sh/resource-policy']).toBe('keep');
  });

  it('an existing KEK Secret is used, not generated; an external Redis has no StatefulSet', async () => {
    const objects = await render([
      '--set',
      'kek.existingSecret=my-kek',
      '--set',
      'redis.mode=external',
      '--set',
      'redis.external.url=rediss://redis.example.com:6380',
    ]);
    expect(objects.some((o) => o.metadata.name === 'mp-modelplane-kek')).toBe(false);
    expect(objects.some((o) => o.metadata.name === 'mp-modelplane-redis')).toBe(false);
    expect(find(objects, 'Secret', 'mp-modelplane-redis-url').stringData.url).toBe(
      'rediss://redis.example.com:6380',
    );
    const env = find(objects, 'Deployment', 'mp-modelplane-operator').spec.template.spec.containers[0].env;
    expect(env).toContainEqual({
      name: 'MODELPLANE_KEK',
      valueFrom: { secretKeyRef: { name: 'my-kek', key: 'kek' } },
    });
  });

  it('an external Redis Cluster is taken by its seed nodes (redis+cluster://)', async () => {
    const url = 'redis+cluster://10.0.0.1:6379,10.0.0.2:6379';
    // --set splits at commas: the list is escaped there (a values file needs nothing).
    const objects = await render([
      '--set',
      'redis.mode=external',
      '--set',
      `redis.external.url=${url.replaceAll(',', '\\,')}`,
    ]);
    expect(find(objects, 'Secret', 'mp-modelplane-redis-url').stringData.url).toBe(url);
    const r = await helm([
      'template',
      'mp',
      chartDir,
      '--set',
      'redis.mode=external',
      '--set',
      'redis.external.url=http://x',
    ]);
    expect(r.code).not.toBe(0);
  });

  it('an external Redis without a URL is refused with a message saying what to set', async () => {
    const r = await helm(['template', 'mp', chartDir, '--set', 'redis.mode=external']);
    expect(r.code).not.toBe(0);
    expect(r.stderr).toContain(
      'redis.mode external needs redis.external.url or redis.external.existingSecret',
    );
  });

  it('Stripe without its keys is refused; the bundled Redis runs AOF with appendfsync always', async () => {
    const r = await helm(['template', 'mp', chartDir, '--set', 'console.paymentProviders=stripe']);
    expect(r.code).not.toBe(0);
    expect(r.stderr).toContain('set console.secrets.stripeSecretKey and stripeWebhookSecret');
    const args = find(
      defaults,
      'StatefulSet',
      'mp-modelplane-redis',
    ).spec.template.spec.containers[0].args.join(' ');
    expect(args).toContain('--appendonly yes --appendfsync always');
  });

  it("KEDA instead of the operator: a ScaledObject per listed Model on the proxies' demand, none by default; no Prometheus address is refused", async () => {
    expect(defaults.filter((o) => o.kind === 'ScaledObject')).toEqual([]);
    const keda = [
      '--set',
      'modelAutoscaling.keda.enabled=true',
      '--set',
      'modelAutoscaling.keda.models[0].name=llama',
      '--set',
      'modelAutoscaling.keda.models[0].namespace=models',
      '--set',
      'modelAutoscaling.keda.models[0].id=Meta-Llama/Llama-3.1-8B-Instruct',
      '--set',
      'modelAutoscaling.keda.models[0].maxReplicas=4',
    ];
    const refused = await helm(['template', 'mp', chartDir, ...keda]);
    expect(refused.code).not.toBe(0);
    expect(refused.stderr).toContain('modelAutoscaling.keda.prometheusAddress');
    const objects = await render([
      ...keda,
      '--set',
      'modelAutoscaling.keda.prometheusAddress=http://prom:9090',
    ]);
    const so = objects.find((o) => o.kind === 'ScaledObject')!;
    expect(so.metadata).toMatchObject({ name: 'model-llama', namespace: 'models' });
    expect(so.spec).toMatchObject({
      scaleTargetRef: { apiVersion: 'modelplane.dev/v1alpha1', kind: 'Model', name: 'llama' },
      minReplicaCount: 0,
      maxReplicaCount: 4,
      triggers: [
        {
          type: 'prometheus',
          metadata: {
            serverAddress: 'http://prom:9090',
            query: 'sum(mp_proxy_model_demand{model="Meta-Llama/Llama-3.1-8B-Instruct"})',
            threshold: '8',
            activationThreshold: '0',
          },
        },
      ],
    });
  });
});

describe('the engine fleet (operator/fleet/profiles.ts)', () => {
  it("the operator reads the chart's engines values from a ConfigMap it mounts, which its own parser accepts; a change rolls it", async () => {
    const cm = find(defaults, 'ConfigMap', 'mp-modelplane-engines');
    const fleet = parseFleetConfig(parse(cm.data['fleet.yaml']));
    expect(Object.keys(fleet.resourceProfiles).sort()).toEqual(['cpu', 'nvidia-gpu-h100', 'nvidia-gpu-l4']);
    expect(fleet.resourceProfiles['nvidia-gpu-h100']?.tolerations).toEqual([
      { key: 'nvidia.com/gpu', operator: 'Exists', effect: 'NoSchedule' },
    ]);
    const pod = find(defaults, 'Deployment', 'mp-modelplane-operator').spec.template;
    const env = pod.spec.containers[0].env as { name: string; value?: string }[];
    expect(env).toContainEqual({ name: 'OPERATOR_FLEET_CONFIG', value: '/etc/modelplane/fleet.yaml' });
    expect(pod.spec.volumes).toContainEqual({
      name: 'engines',
      configMap: { name: 'mp-modelplane-engines' },
    });
    // Pod defaults set in values reach the file; a changed profile changes the operator's checksum.
    const custom = await render([
      '--set',
      'engines.podDefaults.serviceAccountName=engines',
      '--set',
      'engines.resourceProfiles.cpu.requests.cpu=2',
    ]);
    const changed = parseFleetConfig(
      parse(find(custom, 'ConfigMap', 'mp-modelplane-engines').data['fleet.yaml']),
    );
    expect(changed.podDefaults).toEqual({ serviceAccountName: 'engines' });
    expect(changed.resourceProfiles.cpu?.requests).toEqual({ cpu: '2', memory: '2Gi' });
    const checksum = (objects: K8sObject[]) =>
      find(objects, 'Deployment', 'mp-modelplane-operator').spec.template.metadata.annotations[
        'checksum/engines'
      ];
    expect(checksum(custom)).not.toBe(checksum(defaults));
  });

  it('cache profiles reach the file, with the operator image as the weight loader (issue 31 "Weights once")', async () => {
    const none = parseFleetConfig(
      parse(find(defaults, 'ConfigMap', 'mp-modelplane-engines').data['fleet.yaml']),
    );
    expect(none.cacheProfiles).toEqual({});
    expect(none.weightsLoader.image).toMatch(/\/operator:/);
    const objects = await render([
      '--set',
      'engines.cacheProfiles.shared-nfs.sharedFilesystem.storageClassName=nfs-csi',
      '--set',
      'engines.cacheProfiles.shared-nfs.sharedFilesystem.size=2Ti',
    ]);
    const fleet = parseFleetConfig(
      parse(find(objects, 'ConfigMap', 'mp-modelplane-engines').data['fleet.yaml']),
    );
    expect(fleet.cacheProfiles['shared-nfs']).toEqual({
      sharedFilesystem: { storageClassName: 'nfs-csi', size: '2Ti' },
    });
  });
});
