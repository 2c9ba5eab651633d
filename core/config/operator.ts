// The operator's settings (operator/main.ts; its flags override them). It shares only REDIS_URL and
// LOG_LEVEL with the other services and parses nothing else of theirs, so a proxy or console
// setting can never stop it. Each variable has its row in docs/operations.md "Configuration"
// (./owners.test.ts holds the table to this schema).
import { z } from 'zod';
import { redisUrl } from './values.ts';

export const operatorConfig = {
  OPERATOR_RUNTIME: z.enum(['kubernetes', 'local']).default('kubernetes'),
  OPERATOR_PORT: z.coerce.number().int().min(0).max(65535).default(9090),
  OPERATOR_HOST: z.string().default('0.0.0.0'),
  MODELS_DIR: z.string().default('examples/models'),
  /** Watch one namespace only; all namespaces when empty. */
  OPERATOR_NAMESPACE: z.string().default(''),
  /** Where the leader-election Lease lives (in-cluster: the operator's own namespace). */
  OPERATOR_LEASE_NAMESPACE: z.string().default('default'),
  /** The engine profiles and pod defaults (the chart's ConfigMap, docs/models.md); empty: none. */
  OPERATOR_FLEET_CONFIG: z.string().default(''),
  POD_NAME: z.string().optional(),
  /** How often the leader's scaler decides autoscaled Models' replicas (docs/autoscaling.md). */
  OPERATOR_SCALE_INTERVAL_MS: z.coerce.number().int().min(100).default(2_000),
};

/** With the two settings it shares with every service. */
export const operatorSchema = z.object({
  REDIS_URL: redisUrl,
  LOG_LEVEL: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
  ...operatorConfig,
});
export type OperatorConfig = z.infer<typeof operatorSchema>;
