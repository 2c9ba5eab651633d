// CLI: tsx engines/simulator/main.ts --port 9001 --ttft-ms 20 --itl-ms 5 ...

import { resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';
import { defaultOptions, type SimulatorOptions } from './options.ts';
import { startSimulator } from './server.ts';

type NumericOption = {
  [K in keyof SimulatorOptions]: SimulatorOptions[K] extends number ? K : never;
}[keyof SimulatorOptions];

const NUMERIC_FLAGS: Array<[flag: string, key: NumericOption, help: string]> = [
  ['ttft-ms', 'ttftMs', 'time to first token'],
  ['itl-ms', 'itlMs', 'inter-token latency'],
  ['max-concurrency', 'maxConcurrency', 'requests generating at once; more wait (0 = unlimited)'],
  ['max-model-len', 'maxModelLen', 'context length; a longer max_tokens is lowered to fit'],
  ['image-tokens', 'imageTokens', 'prompt tokens per image part (vision models; default 0)'],
  [
    'template-tokens',
    'templateTokens',
    'chat-template tokens per message, and once for the reply (default 0)',
  ],
  ['kv-cache-tokens', 'kvCacheTokens', 'simulated KV-cache size, for vllm:kv_cache_usage_perc'],
  ['prefix-block-size', 'prefixBlockSize', 'prefix-cache block size, in tokens'],
  ['prefix-cache-blocks', 'prefixCacheBlocks', 'prefix-cache LRU capacity per model, in blocks'],
  [
    'prefill-ms-per-1k-tokens',
    'prefillMsPer1kTokens',
    'prefill time per 1000 uncached prompt tokens, added to the TTFT',
  ],
  ['fail-before-first-byte', 'failBeforeFirstByte', 'probability 0..1 of a 500 before any byte'],
  ['fail-mid-stream', 'failMidStream', 'probability 0..1 of a response cut halfway'],
  ['fail-video', 'failVideo', 'probability 0..1 that a video job ends failed'],
  ['embedding-ms', 'embeddingMs', 'latency of one embeddings request'],
  ['image-ms', 'imageMs', 'latency of one image request'],
  ['max-images', 'maxImages', 'images returned at most per request, whatever n (0 = as asked)'],
  ['embedding-dimensions', 'embeddingDimensions', 'default and maximum embedding dimensions'],
  ['video-queue-ms', 'videoQueueMs', 'time a video job stays queued'],
  ['video-ms-per-second', 'videoMsPerSecond', 'render time per second of video (in_progress phase)'],
  ['video-create-ms', 'videoCreateMs', 'latency of accepting a video job'],
  ['max-body-bytes', 'maxBodyBytes', 'largest request body accepted'],
];

function usage(): string {
  const lines = [
    'modelplane inference simulator (OpenAI-compatible, vLLM-like; not a real model)',
    '',
    'usage: tsx engines/simulator/main.ts [flags]',
    '',
    '  --port <n>                      listen port (default 9001; 0 = any free port)',
    '  --host <addr>                   listen address (default 127.0.0.1)',
    '  --models <a,b,...>              ids listed by GET /v1/models (any id is accepted)',
    "  --enable-force-include-usage    vLLM's: usage on every stream, asked or not",
    "  --shutdown-timeout <s>          vLLM's: on SIGTERM, finish in-flight requests for up to s seconds,",
    '                                  answering new ones 503 (default 0: stop at once)',
    "  --kv-events-endpoint <addr>     vLLM's KV events: ZMQ PUB address, e.g. tcp://*:5557 (default off)",
    '  --kv-events-replay-endpoint <a> ZMQ ROUTER address answering replays of missed event batches',
    ...NUMERIC_FLAGS.map(
      ([flag, key, help]) => `  --${`${flag} <n>`.padEnd(30)}${help} (default ${defaultOptions[key]})`,
    ),
    '  --help                          this text',
    '',
    'Per-request headers: x-sim-fail: before-first-byte | reset | mid-stream | error-frame | none',
    '                     (POST /v1/videos: video | none), x-sim-ttft-ms, x-sim-itl-ms.',
  ];
  return lines.join('\n');
}

export function parseCli(
  argv: string[],
): { options: Partial<SimulatorOptions>; port: number; host: string; shutdownTimeoutS?: number } | null {
  const { values } = parseArgs({
    args: argv,
    options: {
      help: { type: 'boolean', short: 'h' },
      port: { type: 'string' },
      host: { type: 'string' },
      models: { type: 'string' },
      'enable-force-include-usage': { type: 'boolean' },
      'shutdown-timeout': { type: 'string' },
      'kv-events-endpoint': { type: 'string' },
      'kv-events-replay-endpoint': { type: 'string' },
      ...Object.fromEntries(NUMERIC_FLAGS.map(([flag]) => [flag, { type: 'string' as const }])),
    },
    strict: true,
  });
  if (values.help) return null;
  const options: Partial<SimulatorOptions> = {};
  const number = (flag: string, raw: string): number => {
    const n = Number(raw);
    if (raw.trim() === '' || !Number.isFinite(n)) throw new Error(`--${flag} needs a number, got '${raw}'`);
    return n;
  };
  for (const [flag, key] of NUMERIC_FLAGS) {
    const raw = (values as Record<string, string | boolean | undefined>)[flag];
    if (typeof raw === 'string') options[key] = number(flag, raw);
  }
  if (options.maxConcurrency === 0) options.maxConcurrency = Number.POSITIVE_INFINITY;
  if (values['enable-force-include-usage']) options.forceIncludeUsage = true;
  if (values['kv-events-endpoint']) options.kvEventsEndpoint = values['kv-events-endpoint'];
  if (values['kv-events-replay-endpoint'])
    options.kvEventsReplayEndpoint = values['kv-events-replay-endpoint'];
  if (values.models)
    options.models = values.models
      .split(',')
      .map((m) => m.trim())
      .filter(Boolean);
  return {
    options,
    port: values.port === undefined ? 9001 : number('port', values.port),
    host: values.host ?? '127.0.0.1',
    ...(values['shutdown-timeout'] === undefined
      ? {}
      : { shutdownTimeoutS: number('shutdown-timeout', values['shutdown-timeout']) }),
  };
}

async function main(): Promise<void> {
  let parsed: ReturnType<typeof parseCli>;
  try {
    parsed = parseCli(process.argv.slice(2));
  } catch (err) {
    process.stderr.write(`${err instanceof Error ? err.message : String(err)}\n\n${usage()}\n`);
    process.exit(2);
  }
  if (parsed === null) {
    process.stdout.write(`${usage()}\n`);
    return;
  }
  const sim = await startSimulator({ ...parsed.options, port: parsed.port, host: parsed.host });
  process.stdout.write(`${JSON.stringify({ msg: 'simulator listening', url: sim.url })}\n`);
  const stop = (signal: string) => {
    const grace = signal === 'SIGTERM' ? (parsed.shutdownTimeoutS ?? 0) * 1000 : 0;
    (grace > 0 ? sim.shutdown(grace) : sim.close()).then(
      () => process.exit(0),
      () => process.exit(1),
    );
  };
  process.once('SIGINT', () => stop('SIGINT'));
  process.once('SIGTERM', () => stop('SIGTERM'));
}

if (process.argv[1] && import.meta.url === pathToFileURL(resolve(process.argv[1])).href) {
  main().catch((err: unknown) => {
    process.stderr.write(`${err instanceof Error ? err.stack : String(err)}\n`);
    process.exit(1);
  });
}
