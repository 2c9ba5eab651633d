// Top-ups (issue "Console" item 5): a request recorded server-side, paid through one of the
// configured providers, credited exactly once through Metering.topUp.

import type { Accounts } from '../accounts/accounts.ts';
import { Metering } from '../billing/index.ts';
import type { ConsoleConfig as Config } from '../config/index.ts';
import type { Journal } from '../journal/index.ts';
import type { Redis } from '../redis/client.ts';
import { ApprovalProvider } from './approval.ts';
import { AutoTopUps } from './auto-topup.ts';
import { AutoTopUpStore } from './auto-topup-store.ts';
import type { PaymentProvider } from './provider.ts';
import { type ProviderName, TopUpRequests } from './requests.ts';
import { StripeTopUps, stripeClient } from './stripe.ts';

export { ApprovalProvider, approveTopUp, type Decision, rejectTopUp } from './approval.ts';
export { AutoTopUps, afterConfirm, failureReason } from './auto-topup.ts';
export { startAutoTopUpChecker } from './auto-topup-checker.ts';
export { type AutoTopUpState, AutoTopUpStore } from './auto-topup-store.ts';
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
  /** Auto top-up, when Stripe is a provider (a saved card is charged off session). */
  auto: AutoTopUps | null;
}

/** The providers CONSOLE_PAYMENT_PROVIDERS names (the config has checked Stripe's keys are set). */
export function createPayments(
  config: Config,
  redis: Redis,
  accounts: Accounts,
  journal?: Journal,
): Payments {
  const requests = new TopUpRequests(redis);
  // With the durable journal a top-up is committed there before Redis credits it (issue 23).
  const metering = new Metering(redis, journal ? { beforeTopUp: (t) => journal.commitTopUp(t) } : {});
  const providers = new Map<ProviderName, PaymentProvider>();
  let stripe: StripeTopUps | null = null;
  let auto: AutoTopUps | null = null;
  for (const name of config.CONSOLE_PAYMENT_PROVIDERS) {
    if (name === 'approval') providers.set(name, new ApprovalProvider());
    else {
      const client = stripeClient(config);
      auto = new AutoTopUps({
        stripe: client,
        store: new AutoTopUpStore(redis),
        requests,
        metering,
        accounts,
        publicUrl: config.CONSOLE_PUBLIC_URL,
        maxFailures: config.CONSOLE_AUTO_TOPUP_MAX_FAILURES,
      });
      stripe = new StripeTopUps({
        stripe: client,
        auto,
        redis,
        webhookSecret: config.STRIPE_WEBHOOK_SECRET ?? '',
        publicUrl: config.CONSOLE_PUBLIC_URL,
        requests,
        metering,
      });
      providers.set(name, stripe);
    }
  }
  return { requests, metering, providers, stripe, auto };
}
