// Reconcile, the acting half: executes a Plan against the API server and the catalogue. Thin on
// purpose, every decision was made in plan.ts (and, for an adapter Model, operator/adapters/).
// Order matters: the finalizer goes on before the first engine call or catalogue write (so a
// delete always cleans up, an adapter loaded anywhere included) and comes off only after the entry
// is gone; an adapter's loads or unloads come before the rest, which is the plan they settle.
// NotFound means someone got there first, which is success (server-side apply never reports
// AlreadyExists); a 409 on the finalizer patch is a stale view and is retried by the queue.

import { applyAdapterStep } from '../adapters/apply.ts';
import type { AdapterStep } from '../adapters/reconcile.ts';
import type { RetriedPlan } from '../adapters/removal.ts';
import { FINALIZER, type Model } from '../model/model.ts';
import { sameStatus } from '../model/status.ts';
import type { CatalogueWriter } from '../runtime/catalogue-writer.ts';
import { isNotFound, type KubeClient } from './client.ts';

export interface ApplyDeps {
  kube: KubeClient;
  catalogue: CatalogueWriter;
}

export interface ApplyResult {
  catalogueChanged: boolean;
  statusWritten: boolean;
  /** The plan applied: the step's, settled by its engine calls. */
  plan: RetriedPlan;
}

const apiVersionOf = { Deployment: 'apps/v1', Service: 'v1' } as const;

export async function applyPlan(model: Model, step: AdapterStep, deps: ApplyDeps): Promise<ApplyResult> {
  const namespace = model.metadata.namespace ?? 'default';

  if (step.plan.finalizer === 'add') {
    await ignoring(
      deps.kube.setFinalizers(model, [...(model.metadata.finalizers ?? []), FINALIZER]),
      isNotFound,
    );
  }
  const plan = await applyAdapterStep(step);
  const result: ApplyResult = { catalogueChanged: false, statusWritten: false, plan };
  if (plan.weights.claim) await deps.kube.apply(plan.weights.claim);
  for (const job of plan.weights.jobs) await deps.kube.apply(job);
  for (const job of plan.weights.removeJobs)
    await deps.kube.remove('batch/v1', 'Job', namespace, job, 'Foreground');
  if (plan.deployment) await deps.kube.apply(plan.deployment);
  if (plan.service) await deps.kube.apply(plan.service);
  for (const stale of plan.remove) {
    await deps.kube.remove(apiVersionOf[stale.kind], stale.kind, namespace, stale.name);
  }

  const action = plan.catalogue;
  if (action.action === 'put') result.catalogueChanged = await deps.catalogue.put(action.entry);
  if (action.action === 'remove')
    result.catalogueChanged = await deps.catalogue.remove(action.id, action.source);

  if (plan.status && !sameStatus(model.status, plan.status)) {
    await ignoring(deps.kube.patchModelStatus(model, plan.status), isNotFound);
    result.statusWritten = true;
  }
  if (plan.finalizer === 'remove') {
    const rest = (model.metadata.finalizers ?? []).filter((f) => f !== FINALIZER);
    await ignoring(deps.kube.setFinalizers(model, rest), isNotFound);
  }
  return result;
}

async function ignoring(p: Promise<unknown>, ok: (err: unknown) => boolean): Promise<void> {
  try {
    await p;
  } catch (err) {
    if (!ok(err)) throw err;
  }
}
