// Picks the template for an engine type; the switch is exhaustive so a new type fails to compile
// until it has a template.
import { drainFor } from '../fleet/drain.ts';
import type { Placement } from '../fleet/placement.ts';
import type { EngineSpec, EngineType, ModelSpec } from '../model/model.ts';
import type { EngineWeights } from '../weights/engine.ts';
import { customDefaults, customTemplate } from './custom.ts';
import { llamacppDefaults, llamacppTemplate } from './llamacpp.ts';
import { sglangDefaults, sglangTemplate } from './sglang.ts';
import { simulatorDefaults, simulatorTemplate } from './simulator.ts';
import { teiDefaults, teiTemplate } from './tei.ts';
import { type EngineDefaults, type EngineInput, type EngineTemplate, hasFlag } from './types.ts';
import { vllmDefaults, vllmTemplate } from './vllm.ts';

export type { EngineTemplate } from './types.ts';

function engineFor(type: EngineType): {
  defaults: EngineDefaults;
  template: (i: EngineInput) => EngineTemplate;
} {
  switch (type) {
    case 'vllm':
      return { defaults: vllmDefaults, template: vllmTemplate };
    case 'sglang':
      return { defaults: sglangDefaults, template: sglangTemplate };
    case 'tei':
      return { defaults: teiDefaults, template: teiTemplate };
    case 'llamacpp':
      return { defaults: llamacppDefaults, template: llamacppTemplate };
    case 'simulator':
      return { defaults: simulatorDefaults, template: simulatorTemplate };
    case 'custom':
      return { defaults: customDefaults, template: customTemplate };
  }
}

/** The port the engine listens on: spec.engine.port or the engine's default. */
export function enginePort(engine: EngineSpec): number {
  return engine.port ?? engineFor(engine.type).defaults.port;
}

export function engineTemplate(
  spec: ModelSpec,
  engine: EngineSpec,
  placement?: Placement,
  weights?: EngineWeights | null,
): EngineTemplate {
  const { defaults, template } = engineFor(engine.type);
  const made = template({
    spec,
    engine,
    servedName: spec.servedName ?? spec.id,
    weights: weights?.ref ?? engine.model ?? spec.id,
    ...(weights?.local ? { localWeights: true } : {}),
    ...(weights?.revision ? { revision: weights.revision } : {}),
    port: engine.port ?? defaults.port,
    // A profile grants the GPUs (and so the tensor parallelism); without one, engine.gpus.
    gpus: placement?.profile ? (placement.gpus ?? 0) : (engine.gpus ?? defaults.gpus),
    ...(placement ? { placement } : {}),
  });
  // The drain flag goes last, unless the Model's own args already set it.
  const drain = drainFor(engine).engineArgs;
  const args = made.container.args ?? [];
  if (drain.length > 0 && drain[0] && !hasFlag(args, drain[0])) made.container.args = [...args, ...drain];
  return made;
}
