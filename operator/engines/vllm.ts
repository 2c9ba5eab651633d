// vLLM: OpenAI-compatible server (what it shares with SGLang: ./gpu-server.ts). Usage details are
// switched on so the proxy can bill cached tokens and a stream cut short (DESIGN "Money"). Every
// trait of the kind is here: image, args, probes, drain flag, LoRA flags, KV events, metric names.
import { gpuServerArgs, gpuServerTemplate } from './gpu-server.ts';
import { kvEventsArgs, kvEventsContainerPorts } from './kv-events-flags.ts';
import {
  type EngineDefaults,
  type EngineInput,
  type EngineKind,
  type EngineTemplate,
  hasFlag,
  type KvEventsFlags,
} from './types.ts';

/**
 * v0.32.0: a current release (the one the proxy was tried against for real, docs/engines.md "Real engines"),
 * well past the chat-template advisories the proxy also guards against — GHSA-6fvq-23cw-5628 (a
 * Jinja template smuggled in chat_template_kwargs, fixed in 0.11.0), GHSA-69j4-grxj-j64p
 * (chat_template_kwargs that block the server's event loop, fixed in 0.11.1) and
 * GHSA-4hw3-g54f-xfrj (whose fixed release we could not look up here: a year of releases past
 * the other two leaves room). v0.11.0, the earlier default, predates them. --allowed-media-domains
 * exists since 0.11.0.
 */
const defaults: EngineDefaults = { image: 'vllm/vllm-openai:v0.32.0', port: 8000, gpus: 1 };

/** --kv-events-config, as vllm/config/kv_events.py reads it in 0.32; topic kv@<served name>. */
const kvEvents: KvEventsFlags = {
  ownFlag: '--kv-events-config',
  args: ({ events, replay }, topic) => {
    const config = {
      enable_kv_cache_events: true,
      publisher: 'zmq',
      endpoint: events,
      replay_endpoint: replay,
      topic,
    };
    return ['--kv-events-config', JSON.stringify(config)];
  },
};

function template(input: EngineInput): EngineTemplate {
  const user = input.engine.args ?? [];
  const args = gpuServerArgs(
    input,
    { model: '--model', contextLength: '--max-model-len', tensorParallel: '--tensor-parallel-size' },
    ['--enable-prompt-tokens-details', '--enable-force-include-usage'],
  );
  if (input.spec.capabilities?.tools && !hasFlag(user, '--enable-auto-tool-choice')) {
    args.push('--enable-auto-tool-choice');
    if (!hasFlag(user, '--tool-call-parser')) args.push('--tool-call-parser', 'hermes');
  }
  // Media URLs (docs/security.md "Media URLs"): only the Model's hosts, when it names them; and never a
  // redirect, which would take a public URL the proxy let through to an internal address.
  const domains = input.engine.allowedMediaDomains ?? [];
  if (domains.length > 0 && !hasFlag(user, '--allowed-media-domains'))
    args.push('--allowed-media-domains', ...domains);
  // A base of adapter Models (spec.engine.lora, explicit rather than inferred from adapters naming
  // it: these flags restart the pods and reserve GPU memory, so an adapter's author must not
  // trigger them). Runtime loading is what lets an adapter come and go without a restart.
  const lora = input.engine.lora;
  if (lora && !hasFlag(user, '--enable-lora')) {
    args.push('--enable-lora');
    if (lora.maxLoras !== undefined) args.push('--max-loras', String(lora.maxLoras));
    if (lora.maxLoraRank !== undefined) args.push('--max-lora-rank', String(lora.maxLoraRank));
  }
  args.push(...kvEventsArgs(kvEvents, input.spec, input.engine, input.servedName));
  const { container, volumes } = gpuServerTemplate(input, {
    image: input.engine.image ?? defaults.image,
    args,
  });
  container.ports = [
    ...(container.ports ?? []),
    ...kvEventsContainerPorts(kvEvents, input.spec, input.engine),
  ];
  if (!(container.env ?? []).some((e) => e.name === 'VLLM_MEDIA_URL_ALLOW_REDIRECTS'))
    container.env = [...(container.env ?? []), { name: 'VLLM_MEDIA_URL_ALLOW_REDIRECTS', value: '0' }];
  if (lora)
    container.env = [...(container.env ?? []), { name: 'VLLM_ALLOW_RUNTIME_LORA_UPDATING', value: 'True' }];
  return { container, volumes };
}

/** Its load on /metrics (older vLLM: gpu_cache_usage_perc for the KV cache). */
export const VLLM_LOAD_METRICS = {
  'vllm:num_requests_waiting': 'waiting',
  'vllm:num_requests_running': 'running',
  'vllm:kv_cache_usage_perc': 'kv',
  'vllm:gpu_cache_usage_perc': 'kv',
} as const;

export const vllm: EngineKind = {
  type: 'vllm',
  defaults,
  template,
  // Refuses new requests with 503 and finishes running ones for up to this long (its default 0 aborts them).
  drainArgs: (seconds) => ['--shutdown-timeout', String(seconds)],
  runtimeLora: true,
  kvEvents,
  downloadsWeights: true,
  tokenizer: 'huggingFace',
  loadMetrics: VLLM_LOAD_METRICS,
};
