// A real vLLM (its CPU build) on loopback, for `make e2e-vllm` and for recording fixtures: the
// cached virtualenv (install-vllm.sh), a tiny Llama made offline (make-tiny-model.py, random
// weights by --load-format dummy) and exactly the flags the operator gives a `vllm` Model
// (operator/engines/vllm.ts), the host aside: loopback instead of 0.0.0.0.
import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { createWriteStream, mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { engineTemplate } from '../../../operator/engines/index.ts';
import type { ModelSpec } from '../../../operator/model/model.ts';

const here = fileURLToPath(new URL('.', import.meta.url));

export const VLLM_MODEL = 'Tiny/Llama-2L';
/** Small enough that a "too long" prompt is quick to send; many KV blocks (VLLM_BLOCK). */
export const VLLM_CONTEXT = 1024;
/**
 * vLLM's KV block on this run. The CPU backend defaults to 128 and prefers multiples of 32
 * (vllm/platforms/cpu.py); 32 makes "within one block" a close check on the prefix index.
 */
export const VLLM_BLOCK = 32;

export interface VllmServer {
  url: string;
  model: string;
  /** The flags vLLM was started with (the operator's, for the Model below). */
  args: string[];
  /** The venv's vLLM version, as `pip` reports it. */
  version: string;
  /** Where vLLM's own output went. */
  logFile: string;
  /** The tiny model's directory: its tokenizer.json and tokenizer_config.json (empty: not ours). */
  modelDir: string;
  /** Where vLLM publishes its KV events (the operator's --kv-events-config, on loopback ports). */
  kvEvents?: { url: string; replayUrl: string; topic: string };
  /**
   * Signals vLLM's main process alone, as the kubelet signals a container's PID 1 (the engine core
   * is its child, stopped by it); resolves with the exit code.
   */
  signal(signal: NodeJS.Signals): Promise<number>;
  stop(): Promise<void>;
}

/** The Model an admin would write for this engine; its args say what a CPU test run needs. */
export function tinyVllmModel(
  modelDir: string,
  extra: Partial<NonNullable<ModelSpec['engine']>> = {},
): ModelSpec {
  return {
    id: VLLM_MODEL,
    kind: 'chat',
    contextLength: VLLM_CONTEXT,
    capabilities: { tools: true },
    pricing: { USD: { input: '1', cachedInput: '0.5', output: '2' } },
    engine: {
      type: 'vllm',
      model: modelDir,
      gpus: 0,
      // Random weights (no download); float32, which every CPU runs; few sequences, so the KV
      // cache vLLM sizes from VLLM_CPU_KVCACHE_SPACE is enough.
      args: [
        '--load-format',
        'dummy',
        '--dtype',
        'float32',
        '--max-num-seqs',
        '8',
        '--block-size',
        String(VLLM_BLOCK),
      ],
      env: [
        { name: 'VLLM_CPU_KVCACHE_SPACE', value: '1' },
        { name: 'VLLM_CPU_OMP_THREADS_BIND', value: 'nobind' },
      ],
      ...extra,
    },
  } as ModelSpec;
}

async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.once('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const addr = srv.address();
      const port = typeof addr === 'object' && addr ? addr.port : 0;
      srv.close(() => resolve(port));
    });
  });
}

/** Installs (once) and starts vLLM; resolves when /health answers 200 (minutes on a loaded machine). */
export async function startVllm(
  opts: { startTimeoutMs?: number; engine?: Partial<NonNullable<ModelSpec['engine']>> } = {},
): Promise<VllmServer> {
  const python = execFileSync(join(here, 'install-vllm.sh'), { stdio: ['ignore', 'pipe', 'inherit'] })
    .toString()
    .trim();
  const work = mkdtempSync(join(tmpdir(), 'mp-vllm-'));
  const modelDir = join(work, 'model');
  execFileSync(python, [join(here, 'make-tiny-model.py'), modelDir], {
    stdio: ['ignore', 'ignore', 'inherit'],
  });
  const version = execFileSync(python, ['-c', 'import vllm; print(vllm.__version__)']).toString().trim();

  const port = await freePort();
  const spec = tinyVllmModel(modelDir, opts.engine);
  const { container } = engineTemplate(spec, { ...spec.engine!, port });
  // Loopback instead of 0.0.0.0, and the KV-event sockets on free ports instead of the pod's
  // fixed 5557/5558 (other runs share this machine).
  const kvPorts = { events: await freePort(), replay: await freePort() };
  let kvEvents: VllmServer['kvEvents'];
  const args = (container.args ?? []).map((a, i, all) => {
    if (all[i - 1] === '--host') return '127.0.0.1';
    if (all[i - 1] !== '--kv-events-config') return a;
    const config = JSON.parse(a) as Record<string, unknown>;
    // vLLM binds a PUB endpoint only when it has a wildcard (`*`), as the pod's does; a host
    // address it connects to instead (vllm/distributed/kv_events.py _is_bind_endpoint).
    config.endpoint = `tcp://*:${kvPorts.events}`;
    config.replay_endpoint = `tcp://127.0.0.1:${kvPorts.replay}`;
    kvEvents = {
      url: `tcp://127.0.0.1:${kvPorts.events}`,
      replayUrl: config.replay_endpoint as string,
      topic: String(config.topic),
    };
    return JSON.stringify(config);
  });
  const env: Record<string, string> = { ...process.env } as Record<string, string>;
  for (const e of container.env ?? []) env[e.name] = e.value ?? '';
  // Offline: nothing may be fetched from a model hub, and no usage report sent anywhere.
  Object.assign(env, {
    HF_HUB_OFFLINE: '1',
    TRANSFORMERS_OFFLINE: '1',
    VLLM_NO_USAGE_STATS: '1',
    DO_NOT_TRACK: '1',
  });
  const logFile = join(work, 'vllm.log');
  const log = createWriteStream(logFile);
  // `python -m` rather than the `vllm` script: the wheel installed --no-deps under another name
  // than `vllm`, and the script's entry point looks its own distribution up by that name.
  const child: ChildProcess = spawn(
    'nice',
    ['-n', '10', python, '-m', 'vllm.entrypoints.openai.api_server', ...args],
    {
      env,
      stdio: ['ignore', 'pipe', 'pipe'],
      detached: true,
    },
  );
  child.stdout!.pipe(log);
  child.stderr!.pipe(log);
  let exited: number | null = null;
  child.on('exit', (code) => {
    exited = code ?? -1;
  });
  const url = `http://127.0.0.1:${port}`;
  const deadline = Date.now() + (opts.startTimeoutMs ?? 600_000);
  for (;;) {
    if (exited !== null) throw new Error(`vLLM exited with ${exited} before it was ready; see ${logFile}`);
    if (Date.now() > deadline) {
      stopGroup(child);
      throw new Error(`vLLM was not ready within the deadline; see ${logFile}`);
    }
    const ok = await fetch(`${url}/health`)
      .then((r) => r.ok)
      .catch(() => false);
    if (ok) break;
    await new Promise((r) => setTimeout(r, 1_000));
  }
  return {
    url,
    model: VLLM_MODEL,
    args,
    version,
    logFile,
    modelDir,
    ...(kvEvents ? { kvEvents } : {}),
    signal(signal) {
      const gone = new Promise<number>((resolve) => {
        if (exited !== null) resolve(exited);
        else child.once('exit', (code) => resolve(code ?? -1));
      });
      if (child.pid !== undefined && exited === null) process.kill(child.pid, signal);
      return gone;
    },
    async stop() {
      const gone = new Promise<void>((resolve) => {
        if (exited !== null) resolve();
        else child.once('exit', () => resolve());
      });
      stopGroup(child);
      const timer = setTimeout(() => stopGroup(child, 'SIGKILL'), 30_000);
      await gone;
      clearTimeout(timer);
      log.end();
      rmSync(work, { recursive: true, force: true });
    },
  };
}

/** A vLLM someone else started (serve.ts): used as is, and left running. */
export function runningVllm(url: string): VllmServer {
  return {
    url,
    model: VLLM_MODEL,
    args: [],
    version: 'already running',
    logFile: '',
    modelDir: '',
    signal: async () => {
      throw new Error('not ours to signal');
    },
    stop: async () => {},
  };
}

/** vLLM runs its engine in a child process: the whole process group (ours alone) is signalled. */
function stopGroup(child: ChildProcess, signal: NodeJS.Signals = 'SIGTERM'): void {
  if (child.pid === undefined) return;
  try {
    process.kill(-child.pid, signal);
  } catch {
    // already gone
  }
}
