// Tokenizing off the event loop: a few worker threads (./tokenize-worker.ts) render and encode the
// prompts prefix routing scores. A real tokenizer takes milliseconds to tens of them for an agent's
// prompt (bench/RESULTS.md); on the event loop that would delay every other call in the replica.
// Routing is an optimisation, so the pool never makes a call wait for it: a job the bounded queue
// has no room for, one past its time budget, or one whose thread died answers `undefined` at once
// and the call is routed without the index (least-loaded, or character hashing where configured).
// A thread that dies is replaced.
import { extname } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Worker } from 'node:worker_threads';
import type { ChatPrompt } from './prompt-tokens.ts';
import type { TokenizeAnswer, TokenizeJob, WorkerSetup } from './tokenize-worker.ts';

/**
 * What tells one session from another in a prompt: its first message after the system prompt
 * (sessions of one agent share the system prompt, not their first request), at most 256 characters.
 */
export function sessionKey(prompt: ChatPrompt): string {
  const first = prompt.messages.find((m) => (m as { role?: unknown })?.role !== 'system') as
    | { content?: unknown }
    | undefined;
  const c = first?.content;
  return typeof c === 'string' ? c.slice(0, 256) : JSON.stringify(c ?? '').slice(0, 256);
}

export interface TokenizerPoolOptions extends WorkerSetup {
  /** Threads (PROXY_ROUTING_TOKENIZE_THREADS). */
  size: number;
  /** Jobs outstanding at most, running or waiting, over all threads (PROXY_ROUTING_TOKENIZE_QUEUE). */
  queue: number;
  /** Longest a call waits for its tokens, ms (PROXY_ROUTING_TOKENIZE_BUDGET_MS). */
  budgetMs: number;
  log: { warn(obj: object, msg: string): void };
}

interface Thread {
  worker: Worker;
  outstanding: Set<number>;
  /** It answered a job: it started (a thread that dies before is respawned after a back-off). */
  answered: boolean;
}

interface Pending {
  thread: Thread;
  settle: (answer: TokenizeAnswer | undefined) => void;
}

// The worker's source beside this file: .ts under tsx and the tests, .js once compiled to dist/.
const WORKER = new URL(`./tokenize-worker${extname(fileURLToPath(import.meta.url))}`, import.meta.url);

export class TokenizerPool {
  /**
   * What became of the jobs: the cost and the fallbacks of routing (bench, docs). `late` calls
   * did not wait for their answer; of those, `skipped` were still queued at their deadline.
   */
  readonly stats = { served: 0, saturated: 0, late: 0, failed: 0, replaced: 0, skipped: 0 };
  private readonly threads: Thread[] = [];
  private readonly pending = new Map<number, Pending>();
  private readonly specs = new Set<string>();
  private nextId = 0;
  private closed = false;
  /** Threads that died in a row without ever answering (a broken install): the back-off grows. */
  private deadOnStart = 0;

  constructor(private readonly o: TokenizerPoolOptions) {
    for (let i = 0; i < o.size; i++) this.threads.push(this.spawn());
  }

  /** Loads the tokenizer in every thread; rejects with the first thread's error. */
  async load(spec: string): Promise<void> {
    this.specs.add(spec);
    const answers = await Promise.all(this.threads.map((t) => this.send(t, { id: 0, spec })));
    for (const a of answers) if (a !== undefined && 'error' in a) throw new Error(a.error);
  }

  /**
   * The prompt's token ids, or undefined at once when the pool is full, or after budgetMs, or when
   * the thread fails. `json` is the prompt already serialized, when the caller has it.
   */
  async tokenize(
    spec: string,
    prompt: ChatPrompt | string,
    /** Sends a session's prompts to one thread, whose cache holds its history (sessionKey). */
    session = '',
  ): Promise<Uint32Array | undefined> {
    if (this.closed || this.pending.size >= this.o.queue) {
      this.stats.saturated++;
      return undefined;
    }
    if (this.threads.length === 0) {
      this.stats.failed++;
      return undefined;
    }
    const thread = this.pick(session);
    const json = typeof prompt === 'string' ? prompt : JSON.stringify(prompt);
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<'late'>((resolve) => {
      timer = setTimeout(() => resolve('late'), this.o.budgetMs);
    });
    const job = { id: 0, spec, prompt: json, deadline: Date.now() + this.o.budgetMs };
    const answer = await Promise.race([this.send(thread, job), late]);
    clearTimeout(timer);
    if (answer === 'late' || (answer !== undefined && 'error' in answer && answer.error === 'late'))
      this.stats.late++;
    else if (answer?.ids !== undefined) {
      this.stats.served++;
      return answer.ids;
    } else this.stats.failed++;
    return undefined;
  }

  /**
   * The session's own thread, unless it has a queue the least busy one has not: each thread
   * caches what it encoded, so a session kept on one encodes its history once.
   */
  private pick(session: string): Thread {
    const least = this.threads.reduce((a, b) => (b.outstanding.size < a.outstanding.size ? b : a));
    if (session === '') return least;
    let h = 0x811c9dc5;
    for (let i = 0; i < session.length; i++) h = Math.imul(h ^ session.charCodeAt(i), 0x01000193);
    const own = this.threads[(h >>> 0) % this.threads.length] as Thread;
    return own.outstanding.size <= least.outstanding.size + 1 ? own : least;
  }

  /** The live threads (tests end one to see it replaced). */
  workers(): Worker[] {
    return this.threads.map((t) => t.worker);
  }

  async close(): Promise<void> {
    this.closed = true;
    await Promise.all(this.threads.map((t) => t.worker.terminate()));
  }

  private send(
    thread: Thread,
    job: TokenizeJob,
  ): Promise<(TokenizeAnswer & { ids?: Uint32Array }) | undefined> {
    const id = ++this.nextId;
    return new Promise((settle) => {
      this.pending.set(id, { thread, settle });
      thread.outstanding.add(id);
      thread.worker.postMessage({ ...job, id });
    });
  }

  private spawn(): Thread {
    const worker = new Worker(WORKER, {
      workerData: { hub: this.o.hub, cacheTokens: this.o.cacheTokens } satisfies WorkerSetup,
    });
    // Idle threads do not keep the process alive (a bench or test that ends without close()).
    worker.unref();
    const thread: Thread = { worker, outstanding: new Set(), answered: false };
    worker.on('message', (a: TokenizeAnswer) => {
      thread.answered = true;
      this.deadOnStart = 0;
      this.settle(thread, a.id, a);
    });
    worker.on('error', (err) => this.o.log.warn({ err }, 'a tokenizer thread failed'));
    worker.on('exit', (code) => {
      for (const id of [...thread.outstanding]) this.settle(thread, id, undefined);
      this.threads.splice(this.threads.indexOf(thread), 1);
      if (this.closed) return;
      this.o.log.warn({ code }, 'a tokenizer thread exited: replaced');
      // One that never started (it cannot load its code, say) is not respawned in a tight loop.
      const delay = thread.answered ? 0 : Math.min(60_000, 500 * 2 ** this.deadOnStart++);
      setTimeout(() => this.replace(), delay).unref();
    });
    return thread;
  }

  private replace(): void {
    if (this.closed) return;
    this.stats.replaced++;
    const fresh = this.spawn();
    this.threads.push(fresh);
    for (const spec of this.specs) void this.send(fresh, { id: 0, spec });
  }

  private settle(thread: Thread, id: number, answer: TokenizeAnswer | undefined): void {
    const p = this.pending.get(id);
    thread.outstanding.delete(id);
    // Still queued past its deadline: the thread did not spend time on it.
    if (answer !== undefined && 'error' in answer && answer.error === 'late') this.stats.skipped++;
    if (p === undefined) return;
    this.pending.delete(id);
    p.settle(answer);
  }
}
