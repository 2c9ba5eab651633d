// A real llama.cpp server (`llama-server`) on loopback for the engine-facing tests and the bench:
// built once by scripts/build-llamacpp.sh, loading the tiny model ./tiny-model.sh writes, started
// with the flags the operator gives a Model of engine type `llamacpp` (operator/engines/llamacpp.ts:
// --alias for the served name, --ctx-size, --jinja when the Model has tools) plus the test's own:
// the model file, loopback, one thread per slot. Waits (generously: the machine is shared) until
// /health answers 200, which llama-server does only once the model is loaded.
import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { freePort } from '../../core/free-port.ts';
import { llamacpp } from '../../operator/engines/llamacpp.ts';
import { runLogStream } from '../helpers/run-log.ts';

const here = dirname(fileURLToPath(import.meta.url));
const root = join(here, '..', '..');

export interface LlamaServer {
  url: string;
  /** The flags it was started with (the operator's, then the test's). */
  args: string[];
  stop(): Promise<void>;
}

let paths: { bin: string; model: string } | undefined;

/** The llama-server binary and the tiny model, built or written on first use and cached. */
export function llamaPaths(): { bin: string; model: string } {
  paths ??= {
    // Built by make test-deps (minutes, once): --check fails at once, naming it, when it is not.
    bin: execFileSync(join(root, 'scripts', 'build-llamacpp.sh'), ['--check'], { encoding: 'utf8' }).trim(),
    model: execFileSync(join(here, 'tiny-model.sh'), { encoding: 'utf8' }).trim(),
  };
  return paths;
}

export async function startLlamaServer(o: {
  servedName: string;
  /** An embedding server (--embeddings, mean pooling): llama-server serves one or the other. */
  embeddings?: boolean;
  /** Parallel slots (concurrent requests), 2 unless told. */
  parallel?: number;
  /** --ctx-size (shared by the slots), 4096 unless told: the fixture recorder wants a small one. */
  contextLength?: number;
}): Promise<LlamaServer> {
  const { bin, model } = llamaPaths();
  const port = await freePort();
  const own = ['-m', model, '--host', '127.0.0.1', '--threads', '1', '--parallel', String(o.parallel ?? 2)];
  if (o.embeddings) own.push('--embeddings', '--pooling', 'mean');
  const { container } = llamacpp.template({
    spec: {
      id: o.servedName,
      kind: o.embeddings ? 'embedding' : 'chat',
      pricing: { USD: { input: '1' } },
      contextLength: o.contextLength ?? 4096,
      capabilities: { tools: !o.embeddings },
    },
    engine: { type: 'llamacpp', args: own },
    servedName: o.servedName,
    weights: model,
    port,
    gpus: 0,
  });
  const args = container.args ?? [];
  const log = runLogStream(`llama-server-${port}`);
  const child = spawn(bin, args, { stdio: ['ignore', 'pipe', 'pipe'] });
  child.stdout.pipe(log);
  child.stderr.pipe(log);
  const url = `http://127.0.0.1:${port}`;
  await healthy(url, child);
  return {
    url,
    args,
    stop: () => stopChild(child),
  };
}

async function healthy(url: string, child: ChildProcess): Promise<void> {
  const deadline = Date.now() + 90_000;
  while (Date.now() < deadline) {
    if (child.exitCode !== null)
      throw new Error(`llama-server exited with ${child.exitCode} (see its run log)`);
    const ok = await fetch(`${url}/health`).then(
      (r) => r.status === 200,
      () => false,
    );
    if (ok) return;
    await new Promise((r) => setTimeout(r, 50));
  }
  child.kill('SIGKILL');
  throw new Error('llama-server never became healthy');
}

async function stopChild(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise<void>((r) => child.once('exit', () => r()));
  child.kill('SIGTERM');
  const timer = setTimeout(() => child.kill('SIGKILL'), 5_000);
  await exited;
  clearTimeout(timer);
}
