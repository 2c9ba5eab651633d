// Simulator settings. Every field can be changed at runtime with setOptions(); latencies are in ms.

export interface SimulatorOptions {
  /** Model ids listed by GET /v1/models and pre-registered in /metrics. Any model id is accepted. */
  models: string[];
  /** Delay from a sequence being scheduled to its first token (prefill). */
  ttftMs: number;
  /** Delay between consecutive output tokens (decode). */
  itlMs: number;
  /** Sequences (chat choices) generated at once; more wait in a FIFO queue. Infinity = no limit. */
  maxConcurrency: number;
  /**
   * vLLM's max_model_len: a prompt with no room for one output token → 400; a max_tokens beyond the
   * room the prompt leaves is lowered to it, as vLLM 0.32 does.
   */
  maxModelLen: number;
  /** Prompt tokens one image part costs (a vision model's image tokens; 0 = images are free). */
  imageTokens: number;
  /** Chat-template tokens around each message, and once more for the reply's header (0 = none). */
  templateTokens: number;
  /** Token budget of the simulated KV cache; vllm:kv_cache_usage_perc = running tokens / this. */
  kvCacheTokens: number;
  /** Prefix-cache granularity (vLLM block size) and how many blocks the per-model LRU keeps. */
  prefixBlockSize: number;
  prefixCacheBlocks: number;
  /**
   * Prefill time per 1000 prompt tokens not found in the prefix cache, added to ttftMs: what makes
   * routing to a warm engine pay (0 = TTFT ignores the cache, the default).
   */
  prefillMsPer1kTokens: number;
  /**
   * vLLM's --kv-events-config: the ZMQ PUB address KV-cache events are published on (port * = any
   * free port; the bound one is `kvEventsUrl`), and the ROUTER address answering replays; null = off.
   */
  kvEventsEndpoint: string | null;
  kvEventsReplayEndpoint: string | null;
  /** Probability (0..1) that a chat/embedding/image request fails with 500 before any byte. */
  failBeforeFirstByte: number;
  /** Probability (0..1) that a chat response is cut (connection destroyed) halfway through. */
  failMidStream: number;
  /** Probability (0..1) that a video job ends in status `failed`. */
  failVideo: number;
  /** Images one request returns at most, whatever its `n` (0: as many as asked). */
  maxImages: number;
  /** Latency of one embeddings request, and of one image request (all n images). */
  embeddingMs: number;
  imageMs: number;
  /** Default and maximum embedding dimensions. */
  embeddingDimensions: number;
  /** Video job timing: time spent queued, then render time per second of output. */
  videoQueueMs: number;
  videoMsPerSecond: number;
  /** Latency of accepting a video job (POST /v1/videos). */
  videoCreateMs: number;
  /**
   * The next this many video creates make their job and then lose the answer (the connection is
   * reset): what a client resending with the same Idempotency-Key must not turn into two jobs.
   */
  dropVideoCreates: number;
  /** Largest request body accepted, in bytes (multipart image edits carry up to 10 × 20 MB). */
  maxBodyBytes: number;
  /** Serves vLLM's POST /tokenize; false answers it 404, as an engine without a tokenizer endpoint. */
  tokenizeEndpoint: boolean;
  /**
   * Refuses every chat request as vLLM refuses out-of-vocabulary token ids (chat/refusal.ts), for
   * callers that cannot send token ids: 'first-frame' as vLLM does (a stream gets 200, the error
   * frame, [DONE]); 'after-content' sends that frame halfway through the content instead (no real
   * engine's refusal, the case an in-band error must still cover); false: off.
   */
  refuseInEngine: false | 'first-frame' | 'after-content';
  /**
   * vLLM's --enable-force-include-usage (which the operator gives every vLLM): every stream gets
   * running usage on each chunk and the final usage chunk, whatever its stream_options.
   */
  forceIncludeUsage: boolean;
  /**
   * Reports a thinking model's reasoning tokens as OpenAI does (`usage.completion_tokens_details.
   * reasoning_tokens`); false leaves `completion_tokens_details: null`, as the recorded vLLM does.
   */
  reasoningTokensInUsage: boolean;
  /**
   * Answers a chat naming a model it neither lists nor holds as a loaded adapter 404, as vLLM does
   * ("The model `x` does not exist."), so an unloaded adapter is seen gone; false (the default)
   * accepts any id, which tests sending other names rely on.
   */
  knownModelsOnly: boolean;
  /**
   * A stream's head and role frames go out as soon as the request is admitted, and its first
   * content after ttftMs (as engines that answer the head before prefill do); false (the default,
   * as recorded of vLLM 0.32): nothing is sent until the first token is due.
   */
  earlyRoleFrame: boolean;
}

export const defaultOptions: SimulatorOptions = {
  models: ['simulator'],
  ttftMs: 20,
  itlMs: 5,
  maxConcurrency: Number.POSITIVE_INFINITY,
  maxModelLen: 131_072,
  imageTokens: 0,
  templateTokens: 0,
  kvCacheTokens: 262_144,
  prefixBlockSize: 16,
  prefixCacheBlocks: 16_384,
  prefillMsPer1kTokens: 0,
  kvEventsEndpoint: null,
  kvEventsReplayEndpoint: null,
  failBeforeFirstByte: 0,
  failMidStream: 0,
  failVideo: 0,
  maxImages: 0,
  embeddingMs: 2,
  imageMs: 50,
  embeddingDimensions: 1024,
  videoQueueMs: 200,
  videoMsPerSecond: 100,
  videoCreateMs: 0,
  dropVideoCreates: 0,
  maxBodyBytes: 210 * 1024 * 1024,
  tokenizeEndpoint: true,
  refuseInEngine: false,
  forceIncludeUsage: false,
  reasoningTokensInUsage: false,
  knownModelsOnly: false,
  earlyRoleFrame: false,
};

export function resolveOptions(partial: Partial<SimulatorOptions>): SimulatorOptions {
  const merged = { ...defaultOptions };
  for (const [k, v] of Object.entries(partial)) {
    if (v !== undefined) (merged as Record<string, unknown>)[k] = v;
  }
  validateOptions(merged);
  return merged;
}

export function validateOptions(o: SimulatorOptions): void {
  const probabilities = ['failBeforeFirstByte', 'failMidStream', 'failVideo'] as const;
  for (const k of probabilities) {
    if (!(o[k] >= 0 && o[k] <= 1)) throw new RangeError(`${k} must be a probability in 0..1, got ${o[k]}`);
  }
  const nonNegative = [
    'ttftMs',
    'itlMs',
    'embeddingMs',
    'imageMs',
    'videoQueueMs',
    'videoMsPerSecond',
    'videoCreateMs',
    'dropVideoCreates',
    'maxImages',
    'prefixCacheBlocks',
    'prefillMsPer1kTokens',
    'imageTokens',
    'templateTokens',
  ] as const;
  for (const k of nonNegative) {
    if (!(o[k] >= 0)) throw new RangeError(`${k} must be >= 0, got ${o[k]}`);
  }
  const positive = [
    'maxConcurrency',
    'maxModelLen',
    'kvCacheTokens',
    'prefixBlockSize',
    'embeddingDimensions',
    'maxBodyBytes',
  ] as const;
  for (const k of positive) {
    if (!(o[k] >= 1)) throw new RangeError(`${k} must be >= 1, got ${o[k]}`);
  }
  if (!Array.isArray(o.models)) throw new TypeError('models must be an array of model ids');
}
