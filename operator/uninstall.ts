// The chart's pre-delete hook (`helm uninstall`, charts/modelplane/templates/uninstall-hook.yaml):
// deletes every Model the operator manages while the operator still runs, so engine pods (GPUs)
// stop with the platform and no Model is left holding the `modelplane.dev/catalogue` finalizer
// that only a running operator removes — without this, `kubectl delete model` and `kubectl delete
// crd` hang once the operator is gone.
//
// Each Model is deleted in the foreground: it stays until the garbage collector has removed its
// Deployment, Service and pods, so when this exits 0 no engine pod of the platform runs. A Model
// the operator does not release within UNINSTALL_TIMEOUT_SECONDS (the operator crashing, or scaled
// to zero) has the finalizer taken off here, with a warning: its catalogue entry then stays in
// Redis until an operator starts again and sweeps entries whose Model is gone.
//
// Env: KUBECONFIG (outside a cluster), OPERATOR_NAMESPACE (one namespace; empty: all),
// UNINSTALL_TIMEOUT_SECONDS (default 120), LOG_LEVEL.
import { pathToFileURL } from 'node:url';
import { KubeConfig, type KubernetesObject } from '@kubernetes/client-node';
import { type Logger, pino } from 'pino';
import { isNotFound, KubeClient } from './kube/client.ts';
import { API_VERSION, FINALIZER, type Model } from './model/model.ts';

export interface UninstallOptions {
  /** One namespace; undefined: every namespace. */
  namespace?: string;
  timeoutMs: number;
  pollMs?: number;
  log: Logger;
}

const key = (m: Model) => `${m.metadata.namespace ?? 'default'}/${m.metadata.name}`;

/** A Model as the API lists it (metadata typed by client-node). */
type KubeModel = Model & KubernetesObject;

async function models(kube: KubeClient, namespace: string | undefined): Promise<KubeModel[]> {
  return (await kube.list<KubeModel>(API_VERSION, 'Model', namespace)).items;
}

/** Deletes every Model and waits until they are gone; returns the ones whose finalizer it removed. */
export async function removeModels(kube: KubeClient, options: UninstallOptions): Promise<string[]> {
  const { namespace, timeoutMs, pollMs = 1_000, log } = options;
  const first = await models(kube, namespace);
  log.info({ models: first.map(key) }, `deleting ${first.length} Model(s) and their engines`);
  for (const m of first) {
    try {
      await kube.objects.delete(
        {
          apiVersion: API_VERSION,
          kind: 'Model',
          metadata: { name: m.metadata.name, namespace: m.metadata.namespace },
        },
        undefined,
        undefined,
        undefined,
        undefined,
        'Foreground',
      );
    } catch (err) {
      if (!isNotFound(err)) throw err;
    }
  }
  const deadline = Date.now() + timeoutMs;
  const stripped: string[] = [];
  for (;;) {
    const left = await models(kube, namespace);
    if (left.length === 0) return stripped;
    if (Date.now() >= deadline) {
      // The operator did not release them in time: release them here, so deletion completes.
      for (const m of left) {
        const finalizers = m.metadata.finalizers ?? [];
        if (!finalizers.includes(FINALIZER) || stripped.includes(key(m))) continue;
        log.warn(
          { model: key(m) },
          'the operator did not release this Model in time: removing its finalizer (its catalogue entry stays until an operator runs again)',
        );
        try {
          await kube.setFinalizers(
            m,
            finalizers.filter((f) => f !== FINALIZER),
          );
          stripped.push(key(m));
        } catch (err) {
          if (!isNotFound(err)) log.warn({ model: key(m), err: (err as Error).message }, 'finalizer patch');
        }
      }
    }
    await new Promise((r) => setTimeout(r, pollMs));
  }
}

async function main(): Promise<void> {
  const log = pino({ level: process.env.LOG_LEVEL ?? 'info', base: { component: 'uninstall' } });
  const seconds = Number(process.env.UNINSTALL_TIMEOUT_SECONDS ?? '120');
  if (!Number.isFinite(seconds) || seconds < 0)
    throw new Error('UNINSTALL_TIMEOUT_SECONDS: a number of seconds');
  const kc = new KubeConfig();
  kc.loadFromDefault();
  const namespace = process.env.OPERATOR_NAMESPACE || undefined;
  const stripped = await removeModels(new KubeClient(kc), { namespace, timeoutMs: seconds * 1000, log });
  log.info({ released: stripped }, 'every Model and its engines are gone');
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  main().catch((err: unknown) => {
    process.stderr.write(`uninstall: ${(err as Error).message}\n`);
    process.exit(1);
  });
}
