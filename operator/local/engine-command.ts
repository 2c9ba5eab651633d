// What the local runtime runs for a Model: the admin's own command (`spec.engine.command`, with
// `{port}` and `{host}` filled in), or a node process for a kind that runs locally
// (EngineKind.local: the simulator) started as a pod would start it — its KV events published as
// its pods' are, and its drain flag (drain.ts) so a process taken away finishes its calls. Any
// other engine kind runs only in Kubernetes.
import { freePort } from '../../core/free-port.ts';
import { engineDrain, engineKind } from '../engines/index.ts';
import { kvEventsTopic } from '../fleet/kv-events.ts';
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
  const kind = engineKind(engine.type);
  if (!kind.local) return undefined;
  const servedName = model.spec.servedName ?? model.spec.id;
  const args = kind.local({ host, port, servedName });
  // Its KV events, as its pods publish them: the proxies' prefix index follows them.
  const kvPorts = kind.kvEvents && { events: await freePort(host), replay: await freePort(host) };
  if (kind.kvEvents && kvPorts) {
    const endpoints = {
      events: `tcp://${host}:${kvPorts.events}`,
      replay: `tcp://${host}:${kvPorts.replay}`,
    };
    args.push(...kind.kvEvents.args(endpoints, kvEventsTopic(servedName)));
  }
  args.push(...(engine.args ?? []));
  // Drains on SIGTERM as in a pod (drain.ts), so a scale-down cuts no stream.
  const drain = engineDrain(engine).engineArgs;
  if (drain[0] && !args.includes(drain[0])) args.push(...drain);
  return { ...base, command: process.execPath, args, ...(kvPorts ? { kvPorts } : {}) };
}
