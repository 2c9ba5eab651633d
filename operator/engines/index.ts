// Picks the template for an engine type; the switch is exhaustive so a new type fails to compile
// until it has a template.
import type { EngineSpec, EngineType, ModelSpec } from '../model.ts';
import { customDefaults, customTemplate } from './custom.ts';
import { llamacppDefaults, llamacppTemplate } from './llamacpp.ts';
import { sglangDefaults, sglangTemplate } from './sglang.ts';
import { simulatorDefaults, simulatorTemplate } from './simulator.ts';
import { teiDefaults, teiTemplate } from './tei.ts';
import type { EngineDefaults, EngineInput, EngineTemplate } from './types.ts';
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

export function engineTemplate(spec: ModelSpec, engine: EngineSpec): EngineTemplate {
  const { defaults, template } = engineFor(engine.type);
  return template({
    spec,
    engine,
    servedName: spec.servedName ?? spec.id,
    weights: engine.model ?? spec.id,
    port: engine.port ?? defaults.port,
    gpus: engine.gpus ?? defaults.gpus,
  });
}
