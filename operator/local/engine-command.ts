// What the local runtime runs for a Model: the admin's own command (`spec.engine.command`, with
// `{port}` and `{host}` filled in), or the simulator started as a pod would start it — its KV
// events published as vLLM's --kv-events-config does, and the drain flag of drain.ts so a process
// taken away finishes its calls. Any other engine type runs only in Kubernetes.
import { freePort } from '../../core/free-port.ts';
import { drainFor } from '../fleet/drain.ts';
import type { Model } from '../model/model.ts';
import type { ProcessSpec } from './process.ts';

/** The process for one replica of `model` on `host`, or undefined when it cannot run locally. */
export async function processSpecFor(
  model: Model,
  host: string,
  cwd: string,
): Promise<ProcessSpec | undefined> {
  const engine = model.spec.engine;
  if (!engine) return undefined;
  const port = await freePort(host);
  const fill = (s: string) => s.replaceAll('{port}', String(port)).replaceAll('{host}', host);
  const env = Object.fromEntries((engine.env ?? []).map((e) => [e.name, e.value ?? '']));
  const base = { name: model.spec.id, env: { ...env, PORT: String(port) }, cwd, host, port };
  if (engine.command?.length) {
    const [command, ...args] = [...engine.command.map(fill), ...(engine.args ?? []).map(fill)] as [
      string,
      ...string[],
    ];
    return { ...base, command, args };
  }
  if (engine.type !== 'simulator') return undefined;
  const served = model.spec.servedName ?? model.spec.id;
  const args = ['--import', 'tsx', 'engines/simulator/main.ts', '--host', host, '--port', String(port)];
  args.push('--models', served);
  // Its KV events, as vLLM's --kv-events-config: the proxies' prefix index follows them.
  const kvPorts = { events: await freePort(host), replay: await freePort(host) };
  args.push('--kv-events-endpoint', `tcp://${host}:${kvPorts.events}`);
  args.push('--kv-events-replay-endpoint', `tcp://${host}:${kvPorts.replay}`);
  args.push(...(engine.args ?? []));
  // Drains on SIGTERM as in a pod (drain.ts), so a scale-down cuts no stream.
  if (!args.includes('--shutdown-timeout')) args.push(...drainFor(engine).engineArgs);
  return { ...base, command: process.execPath, args, kvPorts };
}
