// The names, labels and owner reference every object a Model owns carries: how the operator finds
// its Deployments, Services, EndpointSlices and Jobs again, and how Kubernetes deletes them with it.
import type { V1OwnerReference } from '@kubernetes/client-node';
import { API_VERSION, type Model } from './model.ts';

export const MODEL_LABEL = 'modelplane.dev/model';
export const MANAGED_BY = { 'app.kubernetes.io/managed-by': 'modelplane-operator' } as const;
export const ID_ANNOTATION = 'modelplane.dev/model-id';

/** Deployment and Service share this name; metadata.name is ≤ 57 chars (CRD rule), so ≤ 63. */
export const ownedName = (model: Model) => `model-${model.metadata.name}`;

/** model-<name> → <name>, for EndpointSlices (label kubernetes.io/service-name) and Deployments. */
export function modelNameFromOwned(objectName: string): string | null {
  return objectName.startsWith('model-') ? objectName.slice('model-'.length) : null;
}

export const podSelector = (model: Model) => ({ [MODEL_LABEL]: model.metadata.name });
export const selectorString = (model: Model) => `${MODEL_LABEL}=${model.metadata.name}`;

export function ownerReference(model: Model): V1OwnerReference {
  return {
    apiVersion: API_VERSION,
    kind: 'Model',
    name: model.metadata.name,
    uid: model.metadata.uid ?? '',
    controller: true,
    blockOwnerDeletion: true,
  };
}
