// One tokenizing thread of ./tokenizer-pool.ts: renders and encodes prompts with the models'
// tokenizers (./prompt-tokens.ts), each loaded on first use and kept, with its piece cache. Ids go
// back as a transferred Uint32Array (no copy on the event loop's side).
import { parentPort, workerData } from 'node:worker_threads';
import { loadPromptTokenizer, type PromptTokenizer } from './prompt-tokens.ts';
import type { HubAccess } from './tokenizer-files.ts';

export interface WorkerSetup {
  hub: HubAccess;
  cacheTokens: number;
}

/** A job: `prompt` is the ChatPrompt as JSON; absent, the tokenizer is only loaded. */
export interface TokenizeJob {
  id: number;
  spec: string;
  prompt?: string;
  /** Epoch ms past which nobody waits for the answer: a job still queued then is skipped. */
  deadline?: number;
}

export type TokenizeAnswer = { id: number; ids?: Uint32Array } | { id: number; error: string };

const setup = workerData as WorkerSetup;
const tokenizers = new Map<string, Promise<PromptTokenizer>>();
const port = parentPort;
if (port === null) throw new Error('tokenize-worker.ts runs as a worker thread');

port.on('message', (job: TokenizeJob) => void answer(job));

async function answer(job: TokenizeJob): Promise<void> {
  let tokenizer = tokenizers.get(job.spec);
  if (tokenizer === undefined) {
    tokenizer = loadPromptTokenizer(job.spec, setup.hub, setup.cacheTokens);
    tokenizers.set(job.spec, tokenizer);
  }
  try {
    const tokenize = await tokenizer;
    // Without this a burst would keep the threads busy with answers no call waits for any more,
    // and every later job would be late too.
    if (job.deadline !== undefined && Date.now() > job.deadline)
      return port?.postMessage({ id: job.id, error: 'late' } satisfies TokenizeAnswer);
    if (job.prompt === undefined) return port?.postMessage({ id: job.id } satisfies TokenizeAnswer);
    const ids = Uint32Array.from(tokenize(JSON.parse(job.prompt)));
    port?.postMessage({ id: job.id, ids } satisfies TokenizeAnswer, [ids.buffer]);
  } catch (err) {
    // A failed load is kept (the pool stops asking for that tokenizer); a prompt the template
    // refuses fails that prompt alone.
    port?.postMessage({ id: job.id, error: err instanceof Error ? err.message : String(err) });
  }
}
