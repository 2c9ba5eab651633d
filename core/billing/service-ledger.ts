// The service ledger: the operator's other products (GPU rentals, SPEC "What the service does" 4)
// spend the same credits as the API. Their charges and refunds go through the metering scripts
// like a video job's — one atomic script each, an entry in the account's usage stream, exactly
// once by the caller's id — with kind `service`, which keeps them out of the rollups (they are not
// API calls, so not in Inference API Usage). Each charge and refund is also kept as a record (what
// it was for), which answers a repeated id after the scripts' 35-day memory of ids has passed.

import { ApiError, insufficientQuota } from '../errors.ts';
import { formatNano } from '../money.ts';
import type { Redis } from '../redis/client.ts';
import { accountKeys } from '../redis/keyspace.ts';
import type { Metering } from './metering.ts';

/** What a service charge's usage entry names as its model when the caller names no product. */
export const DEFAULT_SERVICE_PRODUCT = 'service';

export interface ServiceCharge {
  id: string;
  /** nano-units */
  amount: number;
  product: string;
  description: string;
  createdAt: string;
}

export interface ServiceRefund {
  id: string;
  chargeId: string;
  amount: number;
  description: string;
  createdAt: string;
}

/** The ids the metering scripts know them by, apart from the proxy's own charges. */
export const serviceChargeOp = (id: string) => `svc:${id}`;

export class ServiceLedger {
  constructor(
    private readonly redis: Redis,
    private readonly metering: Metering,
  ) {}

  /**
   * Charges the account `amount` from its available balance. A repeated id charges nothing and
   * answers with the first charge; the same id with another amount is refused (a caller's bug).
   * Refused with 429 insufficient_quota when the available balance does not cover it.
   */
  async charge(a: {
    accountId: string;
    id: string;
    amount: number;
    product: string;
    description: string;
  }): Promise<{ charge: ServiceCharge; duplicate: boolean }> {
    const k = accountKeys(a.accountId);
    const prior = await this.chargeRecord(a.accountId, a.id);
    if (prior !== null) return { charge: sameAmount(prior, a.amount), duplicate: true };
    const record: ServiceCharge = {
      id: a.id,
      amount: a.amount,
      product: a.product,
      description: a.description,
      createdAt: new Date().toISOString(),
    };
    const r = await this.metering.charge({
      accountId: a.accountId,
      chargeId: serviceChargeOp(a.id),
      cost: a.amount,
      usage: { keyId: null, model: a.product, kind: 'service', requestId: a.id },
      // Written by the charge's own script: the record exists exactly when the charge does.
      record: {
        key: k.serviceCharge(a.id),
        index: k.serviceCharges,
        id: a.id,
        fields: { ...record },
      },
    });
    if (!r.ok) throw insufficientQuota();
    if (!r.duplicate) return { charge: record, duplicate: false };
    // A concurrent call with the same id won the script: answer with its record.
    const won = await this.chargeRecord(a.accountId, a.id);
    return { charge: sameAmount(won ?? { ...record, amount: r.charged }, a.amount), duplicate: true };
  }

  /**
   * Gives back part or all of one of its charges. The refunds of a charge never exceed it; a
   * repeated id refunds nothing and answers with the first refund.
   */
  async refund(a: {
    accountId: string;
    id: string;
    chargeId: string;
    amount: number;
    description: string;
  }): Promise<{ refund: ServiceRefund; duplicate: boolean }> {
    const k = accountKeys(a.accountId);
    const prior = await this.refundRecord(a.accountId, a.id);
    if (prior !== null) {
      if (prior.chargeId !== a.chargeId || prior.amount !== a.amount)
        throw new ApiError(
          'invalid_request',
          `id '${a.id}' was used for a refund of ${formatNano(prior.amount)} of charge '${prior.chargeId}'`,
          { param: 'id' },
        );
      return { refund: prior, duplicate: true };
    }
    const charge = await this.chargeRecord(a.accountId, a.chargeId);
    if (charge === null)
      throw new ApiError('invalid_request', `there is no charge '${a.chargeId}' on this account`, {
        param: 'chargeId',
      });
    let r: { refunded: number; duplicate: boolean };
    try {
      r = await this.metering.refund({
        accountId: a.accountId,
        refundId: serviceChargeOp(a.id),
        of: `charge:${serviceChargeOp(a.chargeId)}`,
        amount: a.amount,
        usage: { keyId: null, model: charge.product, kind: 'service', requestId: a.id },
      });
    } catch (err) {
      // The scripts remember a charge for 35 days: a refund later than that finds none.
      if (err instanceof ApiError && err.param === 'of')
        throw new ApiError('invalid_request', `charge '${a.chargeId}' is too old to refund (35 days)`, {
          param: 'chargeId',
          cause: err,
        });
      throw err;
    }
    const refund: ServiceRefund = {
      id: a.id,
      chargeId: a.chargeId,
      amount: r.refunded,
      description: a.description,
      createdAt: new Date().toISOString(),
    };
    if (r.duplicate && r.refunded !== a.amount)
      throw new ApiError(
        'invalid_request',
        `id '${a.id}' was used for a refund of ${formatNano(r.refunded)}`,
        {
          param: 'id',
        },
      );
    // After the refund's script (Metering.refund writes no record): a crash in between leaves the
    // refund without its description until the caller retries the id, which writes it then.
    await this.redis.hset(k.serviceRefund(a.id), { ...refund });
    return { refund, duplicate: r.duplicate };
  }

  async chargeRecord(accountId: string, id: string): Promise<ServiceCharge | null> {
    const h = await this.redis.hgetall(accountKeys(accountId).serviceCharge(id));
    if (!h.id) return null;
    return {
      id: h.id,
      amount: Number(h.amount ?? 0),
      product: h.product ?? DEFAULT_SERVICE_PRODUCT,
      description: h.description ?? '',
      createdAt: h.createdAt ?? '',
    };
  }

  async refundRecord(accountId: string, id: string): Promise<ServiceRefund | null> {
    const h = await this.redis.hgetall(accountKeys(accountId).serviceRefund(id));
    if (!h.id || !h.chargeId) return null;
    return {
      id: h.id,
      chargeId: h.chargeId,
      amount: Number(h.amount ?? 0),
      description: h.description ?? '',
      createdAt: h.createdAt ?? '',
    };
  }
}

function sameAmount(prior: ServiceCharge, amount: number): ServiceCharge {
  if (prior.amount !== amount)
    throw new ApiError(
      'invalid_request',
      `id '${prior.id}' was used for a charge of ${formatNano(prior.amount)}; a new charge needs a new id`,
      { param: 'id' },
    );
  return prior;
}
