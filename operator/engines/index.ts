// The engine kinds: one file per kind holds all of its traits (./types.ts EngineKind), and this
// table lists them. Everything else reads a kind through here — the pod template, the drain, the
// scratch volume, the tokenizer, the local process, and the Model's own validation (the kinds'
// names are the CRD's enum on spec.engine.type, their rules its CEL; operator/model/ is below this
// folder, so it is handed them as acceptedEngines()).
import { type DrainPlan, drainFor } from '../fleet/drain.ts';
import type { Placement } from '../fleet/placement.ts';
import type { EngineSpec, ModelSpec } from '../model/model.ts';
import type { ModelEngines, ModelRule } from '../model/rules.ts';
import type { EngineWeights } from '../weights/engine.ts';
import { custom } from './custom.ts';
import { llamacpp } from './llamacpp.ts';
import { sglang } from './sglang.ts';
import { simulator } from './simulator.ts';
import { tei } from './tei.ts';
import { type EngineKind, type EngineTemplate, hasFlag } from './types.ts';
import { vllm } from './vllm.ts';

export type { EngineKind, EngineTemplate } from './types.ts';

/** The table, in the order the CRD lists the names. */
const kinds = new Map<string, EngineKind>();
for (const kind of [vllm, sglang, tei, llamacpp, simulator, custom]) registerEngineKind(kind);

/**
 * Adds a kind to the table: what the line above does for the kinds in this folder, and a kind
 * defined elsewhere (a test's) does for itself. A name taken twice is a mistake, not an override.
 */
export function registerEngineKind(kind: EngineKind): void {
  if (kinds.has(kind.type)) throw new Error(`engine kind ${kind.type} is registered twice`);
  kinds.set(kind.type, kind);
}

export function engineKinds(): EngineKind[] {
  return [...kinds.values()];
}

/** The kind of spec.engine.type; the schema (the CRD's enum, parseModel) lets no other name through. */
export function engineKind(type: string): EngineKind {
  const kind = kinds.get(type);
  if (!kind) throw new Error(`unknown engine type ${type}`);
  return kind;
}

/** The rules each kind adds to the Model's, guarded by its name; and spec.engine.lora's, from the kinds that load LoRAs. */
function kindRules(): ModelRule[] {
  const lora = engineKinds()
    .filter((k) => k.runtimeLora)
    .map((k) => k.type);
  const [first, ...rest] = lora;
  const rules: ModelRule[] = [
    {
      cel: `!has(self.engine) || !has(self.engine.lora) || self.engine.type in [${lora.map((t) => `'${t}'`).join(', ')}]`,
      message: `spec.engine.lora needs a ${first} ${rest.length ? `(or ${rest.join(', ')}) ` : ''}engine: only they load adapters at runtime`,
      holds: (s) => s.engine?.lora === undefined || lora.includes(s.engine.type),
    },
  ];
  for (const kind of engineKinds())
    for (const r of kind.rules ?? [])
      rules.push({
        cel: `!has(self.engine) || self.engine.type != '${kind.type}' || ${r.cel}`,
        message: r.message,
        holds: (s) => s.engine?.type !== kind.type || r.holds(s.engine),
      });
  return rules;
}

/** What the Model's schema and rules take from the kinds (operator/model/ parseModel, the CRD). */
export function acceptedEngines(): ModelEngines {
  return { types: engineKinds().map((k) => k.type), rules: kindRules() };
}

/** The port the engine listens on: spec.engine.port or the engine's default. */
export function enginePort(engine: EngineSpec): number {
  return engine.port ?? engineKind(engine.type).defaults.port;
}

/** How its pods stop without cutting a stream, with the kind's drain flag (operator/fleet/drain.ts). */
export function engineDrain(engine: EngineSpec): DrainPlan {
  return drainFor(engine, engineKind(engine.type).drainArgs);
}

/** The tokenizer built into the proxy for this engine's kind, if it has one (the simulator's). */
export function builtinTokenizer(engine: EngineSpec | undefined): string | undefined {
  const t = engine && engineKind(engine.type).tokenizer;
  return typeof t === 'object' ? t.builtin : undefined;
}

export function engineTemplate(
  spec: ModelSpec,
  engine: EngineSpec,
  placement?: Placement,
  weights?: EngineWeights | null,
): EngineTemplate {
  const { defaults, template } = engineKind(engine.type);
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
  const drain = engineDrain(engine).engineArgs;
  const args = made.container.args ?? [];
  if (drain.length > 0 && drain[0] && !hasFlag(args, drain[0])) made.container.args = [...args, ...drain];
  return made;
}
