// The Model CRD's scaling fields (issue 32): spec.engine.autoscaling and spec.engine.queue, kept
// apart from operator/crd.ts so each file holds one part of the schema. Bounds mirror
// model-spec.ts's autoscalingSchema and queueSpecSchema.
import { int, type Schema, str } from './crd-schema.ts';

/** spec.engine's scaling properties. */
export const engineScalingProperties: Record<string, Schema> = {
  autoscaling: {
    type: 'object',
    description: 'Replicas follow demand (docs/autoscaling.md); absent: replicas stays what is written.',
    properties: {
      targetInFlight: int({
        minimum: 1,
        maximum: 100000,
        description: 'Requests one replica is sized for (default 8).',
      }),
      scaleDownDelaySeconds: int({
        minimum: 0,
        maximum: 86400,
        description: 'No scale-down sooner after a scale-up (default 30).',
      }),
      windowSeconds: int({
        minimum: 1,
        maximum: 86400,
        description: 'Scale down to the highest recommendation of this window (default 60).',
      }),
      idleSeconds: int({
        minimum: 0,
        maximum: 604800,
        description: 'With minReplicas 0: to zero after this long with no demand (default 300).',
      }),
      coldStartTimeoutSeconds: int({
        minimum: 1,
        maximum: 3600,
        description: 'How long a proxy holds a call while the model wakes (default 300).',
      }),
      writer: str({
        enum: ['operator', 'external'],
        description: 'external: KEDA or an HPA writes replicas; the operator leaves it alone.',
      }),
    },
  },
  queue: {
    type: 'object',
    required: ['perReplica'],
    description: 'A fair queue per account in each proxy once every replica has perReplica calls.',
    properties: {
      perReplica: int({
        minimum: 1,
        maximum: 100000,
        description: 'Calls one proxy sends to one replica at once.',
      }),
      maxQueued: int({
        minimum: 1,
        maximum: 100000,
        description: 'Calls waiting per proxy (default 100).',
      }),
      maxQueuedBytes: int({ minimum: 1, description: 'Their request bytes per proxy (default 16 MiB).' }),
      maxWaitSeconds: int({
        minimum: 1,
        maximum: 3600,
        description: 'How long one call may wait (default 30).',
      }),
    },
  },
};
