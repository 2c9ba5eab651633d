// The one way a top-up request becomes credits: Metering.topUp with the request's id as the top-up
// id (so however many times this runs — a webhook delivered twice, an approval re-run after a
// crash — the balance rises once), then the request is marked credited. The caller has moved the
// request to `approved` first, so a reject can no longer win once money may have been credited.
import type { Metering } from '../billing/index.ts';
import type { TopUpRequest, TopUpRequests } from './requests.ts';

export async function creditTopUp(
  d: { requests: TopUpRequests; metering: Metering },
  request: TopUpRequest,
  note: string,
): Promise<{ duplicate: boolean; balance: number; request: TopUpRequest }> {
  const r = await d.metering.topUp({
    accountId: request.accountId,
    topUpId: request.id,
    amount: request.amount,
    note,
  });
  const moved = await d.requests.move(request.accountId, request.id, ['approved'], 'credited', {
    creditedAt: new Date().toISOString(),
  });
  return { duplicate: r.duplicate, balance: r.balance, request: moved.request ?? request };
}
