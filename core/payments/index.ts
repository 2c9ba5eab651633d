// Top-ups (issue "Console" item 5): a request recorded server-side, paid through one of the
// configured providers, credited exactly once through Metering.topUp.

import { Metering } from '../billing/index.ts';
import type { Config } from '../config.ts';
import type { Journal } from '../journal/index.ts';
import type { Redis } from '../redis-client.ts';
import { ApprovalProvider } from './approval.ts';
import type { PaymentProvider } from './provider.ts';
import { type ProviderName, TopUpRequests } from './requests.ts';
import { StripeTopUps, stripeClient } from './stripe.ts';

export { ApprovalProvider, approveTopUp, type Decision, rejectTopUp } from './approval.ts';
export { creditTopUp } from './credit.ts';
export { currencyUnits, isPayable, nanoToMinorUnits } from './minor-units.ts';
export type { PaymentLog, PaymentProvider, TopUpNext } from './provider.ts';
export {
  PROVIDER_NAMES,
  type ProviderName,
  type TopUpRequest,
  TopUpRequests,
  type TopUpStatus,
} from './requests.ts';
export { StripeTopUps, stripeClient, type WebhookOutcome } from './stripe.ts';

export interface Payments {
  requests: TopUpRequests;
  metering: Metering;
  /** The configured providers (CONSOLE_PAYMENT_PROVIDERS), in the configured order. */
  providers: Map<ProviderName, PaymentProvider>;
  /** Set when Stripe is one of them: its webhook needs it. */
  stripe: StripeTopUps | null;
}

/** The providers CONSOLE_PAYMENT_PROVIDERS names (the config has checked Stripe's keys are set). */
export function createPayments(config: Config, redis: Redis, journal?: Journal): Payments {
  const requests = new TopUpRequests(redis);
  // With the durable journal a top-up is committed there before Redis credits it (issue 23).
  const metering = new Metering(redis, journal ? { beforeTopUp: (t) => journal.commitTopUp(t) } : {});
  const providers = new Map<ProviderName, PaymentProvider>();
  let stripe: StripeTopUps | null = null;
  for (const name of config.CONSOLE_PAYMENT_PROVIDERS) {
    if (name === 'approval') providers.set(name, new ApprovalProvider());
    else {
      stripe = new StripeTopUps({
        stripe: stripeClient(config),
        redis,
        webhookSecret: config.STRIPE_WEBHOOK_SECRET ?? '',
        publicUrl: config.CONSOLE_PUBLIC_URL,
        requests,
        metering,
      });
      providers.set(name, stripe);
    }
  }
  return { requests, metering, providers, stripe };
}
