import { readdirSync, readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { acceptedEngines } from '../../engines/index.ts';
import { chatModel, invalidModels, outOfBounds, withSpec } from '../../fixtures.ts';
import { modelCrd, modelCrdYaml } from '../../kube/crd.ts';
import { type Model, parseModel as parseWith } from '../model.ts';
import { allRules } from '../rules.ts';

const parseModel = (input: unknown) => parseWith(input, acceptedEngines());

describe('Model CRD', () => {
  it('crds/model.yaml and the chart copy are exactly what operator/kube/crd.ts generates from the zod schema and the engine kinds (run: npx tsx operator/kube/crd.ts > crds/model.yaml && cp crds/model.yaml charts/modelplane/crds/)', () => {
    const committed = readFileSync(new URL('../../../crds/model.yaml', import.meta.url), 'utf8');
    expect(committed).toBe(modelCrdYaml());
    expect(parse(committed)).toEqual(modelCrd());
    const chartCopy = new URL('../../../charts/modelplane/crds/model.yaml', import.meta.url);
    expect(readFileSync(chartCopy, 'utf8')).toBe(modelCrdYaml());
  });

  it('carries every cross-field rule as CEL with the same message the local runtime gives', () => {
    const spec = modelCrd().spec.versions[0]!.schema.openAPIV3Schema.properties.spec as Record<
      string,
      unknown
    >;
    expect(spec['x-kubernetes-validations']).toEqual(
      allRules(acceptedEngines()).map((r) => ({ rule: r.cel, message: r.message })),
    );
  });

  it('has the printer columns ID, Kind, Ready, Replicas, Available, Demand, Profile, Weights, Problem, Scaling and Base (-o wide), Age and the status and scale subresources', () => {
    const v = modelCrd().spec.versions[0]!;
    expect(v.additionalPrinterColumns.map((c) => c.name)).toEqual([
      'ID',
      'Kind',
      'Ready',
      'Replicas',
      'Available',
      'Demand',
      'Profile',
      'Weights',
      'Problem',
      'Scaling',
      'Base',
      'Age',
    ]);
    expect(v.subresources.status).toEqual({});
    expect(v.subresources.scale.specReplicasPath).toBe('.spec.engine.replicas');
  });
});

describe("parseModel (the local runtime's validator)", () => {
  it('accepts a valid chat model', () => {
    expect(parseModel(chatModel())).toMatchObject({ ok: true });
  });

  it('accepts an adapter Model (no engine: it runs on its base) and a base with engine.lora', () => {
    const adapter = chatModel('tone', {
      engine: undefined,
      adapter: { base: 'llama', source: 'org/tone-lora' },
    });
    expect(parseModel(adapter)).toMatchObject({ ok: true });
    const base = chatModel('llama', { engine: { type: 'vllm', lora: { maxLoras: 4 } } });
    expect(parseModel(base)).toMatchObject({ ok: true });
  });

  it.each(invalidModels)('rejects $name', ({ spec, message }) => {
    const result = parseModel(withSpec(chatModel(), spec));
    expect(result.ok).toBe(false);
    if (!result.ok) expect(result.problems.join('\n')).toContain(message);
  });

  it.each(outOfBounds)('rejects $name, naming the field', ({ spec, field }) => {
    const result = parseModel(withSpec(chatModel(), spec));
    expect(result.ok).toBe(false);
    if (!result.ok) expect(result.problems.join('\n')).toContain(field.replace(/\[(\d+)\]/g, '.$1'));
  });

  it('rejects an engine type no kind has, naming the kinds as the CRD enum does (the names come from operator/engines/)', () => {
    const result = parseModel(withSpec(chatModel(), { engine: { type: 'triton' } }));
    expect(result).toEqual({
      ok: false,
      problems: [
        'spec.engine.type: Invalid option: expected one of "vllm"|"sglang"|"tei"|"llamacpp"|"simulator"|"custom"',
      ],
    });
  });

  it('rejects a metadata.name that cannot name a Service', () => {
    const result = parseModel(chatModel('Llama.3'));
    expect(result.ok).toBe(false);
  });
});

describe('examples/models', () => {
  const root = new URL('../../../examples/models/', import.meta.url);
  const files = [
    ...readdirSync(root).filter((f) => f.endsWith('.yaml')),
    ...readdirSync(new URL('cluster/', root)).map((f) => `cluster/${f}`),
  ];

  it.each(files)('%s is a valid Model', (file) => {
    const result = parseModel(parse(readFileSync(new URL(file, root), 'utf8')));
    expect(result).toMatchObject({ ok: true });
  });

  it('make dev has a chat (tools), embedding, image (edit), video (imageToVideo), invite-only and coming-soon model', () => {
    const specs = files
      .filter((f) => !f.startsWith('cluster/'))
      .map((f) => (parseModel(parse(readFileSync(new URL(f, root), 'utf8'))) as { model: Model }).model.spec);
    expect(specs.some((s) => s.kind === 'chat' && s.capabilities?.tools && /\/.*[A-Z]/.test(s.id))).toBe(
      true,
    );
    expect(specs.some((s) => s.kind === 'embedding')).toBe(true);
    expect(specs.some((s) => s.kind === 'image' && s.capabilities?.edit)).toBe(true);
    expect(specs.some((s) => s.kind === 'video' && s.capabilities?.imageToVideo)).toBe(true);
    expect(specs.some((s) => s.availability === 'inviteOnly')).toBe(true);
    expect(specs.some((s) => s.availability === 'comingSoon')).toBe(true);
    for (const s of specs) expect(Object.keys(s.pricing).sort()).toEqual(['EUR', 'USD']);
  });

  it('make dev answers the names editor tools hard-code: a tool-capable chat model has aliases for Claude Code’s small/fast model and Codex CLI’s default model', () => {
    const chat = files
      .filter((f) => !f.startsWith('cluster/'))
      .map((f) => (parseModel(parse(readFileSync(new URL(f, root), 'utf8'))) as { model: Model }).model.spec)
      .filter((s) => s.kind === 'chat' && s.capabilities?.tools);
    const aliases = chat.flatMap((s) => s.aliases ?? []);
    expect(aliases).toEqual(expect.arrayContaining(['claude-haiku-*', 'gpt-6.1-sol']));
  });
});
