// The one shape every way of paying for credits has: given a recorded top-up request, start the
// payment and say what the browser does next. Crediting is never the provider's to do directly:
// it goes through creditTopUp (Metering.topUp, exactly once by the request's id), so the usage
// stream stays the one audit trail of every credit.
import type { ProviderName, TopUpRequest } from './requests.ts';

export type TopUpNext =
  /** Go to the provider's hosted payment page. */
  | { provider: 'stripe'; url: string }
  /** Nothing to do but wait: an operator approves or rejects the request. */
  | { provider: 'approval'; request: TopUpRequest };

export interface PaymentProvider {
  readonly name: ProviderName;
  start(request: TopUpRequest): Promise<TopUpNext>;
}

/** What a payment module logs through (pino's shape; fastify's request.log fits). */
export interface PaymentLog {
  info(obj: object, msg: string): void;
  warn(obj: object, msg: string): void;
  error(obj: object, msg: string): void;
}
