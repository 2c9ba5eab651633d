// The set-up of a test file that runs one leading operator on the kwok control plane (real
// kube-apiserver, kube-controller-manager and kube-scheduler; kwok plays the kubelets): the control
// plane and a Redis started together, the file's own objects made (`prepare`: nodes, volumes,
// Secrets), then the operator, waited on until it leads; all stopped after the file.
import { afterAll, beforeAll } from 'vitest';
import type { FleetConfig } from '../../operator/fleet/profiles.ts';
import { type ControlPlane, startControlPlane } from '../cluster/control-plane.ts';
import { startRedis, type TestRedis } from '../helpers/redis.ts';
import { type OperatorReplica, type OperatorReplicaOptions, startOperator, waitUntil } from './helpers.ts';

export interface KwokSuite {
  cp: ControlPlane;
  redis: TestRedis;
  operator: OperatorReplica;
}

/** Registers the file's beforeAll/afterAll; the returned object is filled in before its tests run. */
export function kwokSuite(
  identity: string,
  fleet: FleetConfig,
  prepare: (cp: ControlPlane, redis: TestRedis) => Promise<void>,
  /** More of the operator's options (the proxies' demand, for its scaler). */
  operatorOptions: (redis: TestRedis) => OperatorReplicaOptions = () => ({}),
): KwokSuite {
  const suite = {} as KwokSuite;
  beforeAll(async () => {
    // The first run builds kube-controller-manager, kube-scheduler and kwok (minutes, cached after).
    [suite.cp, suite.redis] = await Promise.all([startControlPlane(1), startRedis()]);
    await prepare(suite.cp, suite.redis);
    suite.operator = await startOperator(suite.cp, suite.redis.client(), identity, {
      ...operatorOptions(suite.redis),
      fleet,
    });
    await waitUntil('the operator to lead', async () => suite.operator.runtime.leader.isLeader, 30_000);
  }, 1_800_000);
  afterAll(async () => {
    await suite.operator?.stop();
    await Promise.all([suite.cp?.stopAll(), suite.redis?.stop()]);
  });
  return suite;
}
