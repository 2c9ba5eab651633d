// Issue 46 item 1: an engine kind is one file and one line in ./index.ts's table. This file is that
// one file for a fake kind (its traits below, its line the registerEngineKind call), and the
// operator offers it without another file touched: the Model's validation and CRD take its name
// and rule, the plan deploys its image, args, ports, probes and drain flag, the catalogue gets its
// tokenizer, and the local runtime starts its process. The rest holds the table to that shape.
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { ENGINE_LOAD_METRICS } from '../../core/demand/engine-load.ts';
import { sourceFiles } from '../../test/layout/imports.ts';
import { chatModel } from '../fixtures.ts';
import { CATALOGUE_PROPAGATION_SECONDS } from '../fleet/drain.ts';
import { modelCrd } from '../kube/crd.ts';
import { processSpecFor } from '../local/engine-command.ts';
import { type EngineSpec, FINALIZER, type Model, parseModel } from '../model/model.ts';
import { planModel } from '../reconcile/plan.ts';
import { acceptedEngines, engineKinds, registerEngineKind } from './index.ts';
import { type EngineKind, engineContainer, healthProbes } from './types.ts';

// ---- the kind's file ----
const fake: EngineKind = {
  type: 'fake',
  defaults: { image: 'registry.example.com/fake-server:1', port: 7070, gpus: 0 },
  template: (input) => ({
    container: engineContainer(input, {
      image: input.engine.image ?? 'registry.example.com/fake-server:1',
      args: ['serve', input.weights, '--name', input.servedName, '--listen', `0.0.0.0:${input.port}`],
      ...healthProbes('/ready'),
    }),
  }),
  drainArgs: (seconds) => ['--graceful-stop', `${seconds}s`],
  runtimeLora: true,
  downloadsWeights: true,
  tokenizer: { builtin: 'fake-tokenizer' },
  local: ({ host, port, servedName }) => [
    'fake-server.js',
    '--listen',
    `${host}:${port}`,
    '--name',
    servedName,
  ],
  rules: [
    {
      cel: 'has(self.engine.model)',
      message: 'a fake engine needs spec.engine.model',
      holds: (engine) => engine.model !== undefined,
    },
  ],
};
// ---- its line in the table ----
registerEngineKind(fake);

const fakeModel = (engine: Partial<EngineSpec> = {}): Model => {
  const m = chatModel('faker', { engine: { type: 'fake', model: 'org/fake-weights', ...engine } });
  m.metadata = { ...m.metadata, uid: 'u', generation: 1, finalizers: [FINALIZER] };
  return m;
};

describe('a new engine kind is one file and one line in the table (issue 46)', () => {
  it('the Model takes its name, its rule and engine.lora: parseModel and the CRD alike', () => {
    expect(parseModel(fakeModel({ lora: { maxLoras: 2 } }), acceptedEngines())).toMatchObject({ ok: true });
    const noModel = { ...fakeModel(), spec: { ...fakeModel().spec, engine: { type: 'fake' } } };
    expect(parseModel(noModel, acceptedEngines())).toEqual({
      ok: false,
      problems: ['a fake engine needs spec.engine.model'],
    });
    const spec = modelCrd().spec.versions[0]!.schema.openAPIV3Schema.properties.spec as {
      properties: { engine: { properties: { type: { enum: string[] } } } };
      'x-kubernetes-validations': { rule: string; message: string }[];
    };
    expect(spec.properties.engine.properties.type.enum).toEqual([
      'vllm',
      'sglang',
      'tei',
      'llamacpp',
      'simulator',
      'custom',
      'fake',
    ]);
    expect(spec['x-kubernetes-validations']).toContainEqual({
      rule: "!has(self.engine) || self.engine.type != 'fake' || has(self.engine.model)",
      message: 'a fake engine needs spec.engine.model',
    });
    expect(spec['x-kubernetes-validations']).toContainEqual({
      rule: "!has(self.engine) || !has(self.engine.lora) || self.engine.type in ['vllm', 'simulator', 'fake']",
      message:
        'spec.engine.lora needs a vllm (or simulator, fake) engine: only they load adapters at runtime',
    });
  });

  it('the plan deploys it: its image, args and drain flag, its port, its probes, the preStop its drain flag allows, the scratch volume', () => {
    const plan = planModel(fakeModel({ drainSeconds: 30 }), {
      deployment: null,
      serviceExists: false,
      endpointSlices: [],
      now: '2026-01-01T00:00:00Z',
    });
    const pod = plan.deployment?.spec?.template.spec;
    const c = pod?.containers[0];
    expect(c?.image).toBe('registry.example.com/fake-server:1');
    expect(c?.args).toEqual([
      'serve',
      'org/fake-weights',
      '--name',
      'Meta-Llama/Llama-3.1-8B-Instruct',
      '--listen',
      '0.0.0.0:7070',
      '--graceful-stop',
      '30s',
    ]);
    expect(c?.ports).toEqual([{ name: 'http', containerPort: 7070, protocol: 'TCP' }]);
    expect(c?.readinessProbe?.httpGet).toEqual({ path: '/ready', port: 'http' });
    expect(c?.startupProbe?.httpGet?.path).toBe('/ready');
    // It drains itself on SIGTERM, so the preStop covers only the catalogue's propagation.
    expect(c?.lifecycle?.preStop?.sleep?.seconds).toBe(CATALOGUE_PROPAGATION_SECONDS);
    expect(pod?.terminationGracePeriodSeconds).toBe(CATALOGUE_PROPAGATION_SECONDS + 30 + 5);
    expect(pod?.volumes?.map((v) => v.name)).toContain('scratch');
    expect(plan.service?.spec?.ports).toEqual([
      { name: 'http', port: 7070, targetPort: 'http', protocol: 'TCP' },
    ]);
    expect(plan.catalogue).toMatchObject({ action: 'put', entry: { tokenizer: 'fake-tokenizer' } });
  });

  it('the local runtime starts it as its process, with its drain flag', async () => {
    const spec = await processSpecFor(fakeModel(), '127.0.0.1', '/repo');
    expect(spec?.command).toBe(process.execPath);
    expect(spec?.args).toEqual([
      'fake-server.js',
      '--listen',
      `127.0.0.1:${spec?.port}`,
      '--name',
      'Meta-Llama/Llama-3.1-8B-Instruct',
      '--graceful-stop',
      '40s',
    ]);
    expect(spec?.kvPorts).toBeUndefined();
  });
});

describe('the table', () => {
  it('every kind’s load metrics are read by core/demand/engine-load.ts as the kind means them (the proxy cannot import the kinds)', () => {
    const named = engineKinds().flatMap((k) => Object.entries(k.loadMetrics ?? {}));
    expect(named.length).toBeGreaterThan(5);
    for (const [name, what] of named) expect([name, ENGINE_LOAD_METRICS[name]]).toEqual([name, what]);
  });

  it('no operator source outside operator/engines/ names an engine kind: its traits are all in its file', () => {
    const root = fileURLToPath(new URL('../../', import.meta.url));
    const names = engineKinds()
      .map((k) => k.type)
      .filter((t) => t !== 'fake');
    const offending = sourceFiles(root, 'operator')
      .filter(
        (f) => !f.startsWith('operator/engines/') && !/\.test\.ts$/.test(f) && f !== 'operator/fixtures.ts',
      )
      .flatMap((f) => {
        const text = readFileSync(`${root}${f}`, 'utf8');
        return names.filter((n) => new RegExp(`['"\`]${n}['"\`]`).test(text)).map((n) => `${f}: ${n}`);
      });
    expect(offending).toEqual([]);
  });
});
