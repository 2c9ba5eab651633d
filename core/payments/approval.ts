// Top-up by operator approval, for self-hosted installs without a card processor: the request
// waits until an operator approves it (`modelplane topups approve <id>`), which credits it exactly
// once, or rejects it, which credits nothing. The operator settles the money however they do
// (an invoice, a transfer); the platform records who decided.
import type { Metering } from '../billing/index.ts';
import { ApiError } from '../errors.ts';
import { creditTopUp } from './credit.ts';
import type { PaymentProvider, TopUpNext } from './provider.ts';
import type { TopUpRequest, TopUpRequests } from './requests.ts';

export class ApprovalProvider implements PaymentProvider {
  readonly name = 'approval' as const;

  async start(request: TopUpRequest): Promise<TopUpNext> {
    return { provider: 'approval', request };
  }
}

export interface Decision {
  request: TopUpRequest;
  /** False when this call changed nothing: decided the same way before (a re-run). */
  changed: boolean;
}

async function approvalRequest(requests: TopUpRequests, id: string): Promise<TopUpRequest> {
  const request = await requests.find(id);
  if (request === null) throw new ApiError('not_found', `no top-up request '${id}'`, { param: 'id' });
  if (request.provider !== 'approval')
    throw new ApiError(
      'invalid_request',
      `top-up request '${id}' is paid through ${request.provider}: it is credited when the payment arrives, not by approval`,
      { param: 'id' },
    );
  return request;
}

/**
 * Approves and credits a pending request. Approving again credits nothing more; a request whose
 * approval was recorded but whose credit was cut short (a crash between the two) is credited now.
 */
export async function approveTopUp(
  d: { requests: TopUpRequests; metering: Metering },
  id: string,
  by: string,
): Promise<Decision> {
  const found = await approvalRequest(d.requests, id);
  const moved = await d.requests.move(found.accountId, id, ['pending'], 'approved', {
    decidedAt: new Date().toISOString(),
    decidedBy: by,
  });
  const request = moved.request ?? found;
  if (request.status === 'credited') return { request, changed: false };
  if (request.status === 'rejected')
    throw new ApiError('invalid_request', `top-up request '${id}' was rejected by ${request.decidedBy}`, {
      param: 'id',
    });
  const credited = await creditTopUp(d, request, `approval: approved by ${request.decidedBy} (${id})`);
  return { request: credited.request, changed: moved.moved || !credited.duplicate };
}

/** Rejects a pending request: nothing is credited. Rejecting again changes nothing. */
export async function rejectTopUp(d: { requests: TopUpRequests }, id: string, by: string): Promise<Decision> {
  const found = await approvalRequest(d.requests, id);
  const moved = await d.requests.move(found.accountId, id, ['pending'], 'rejected', {
    decidedAt: new Date().toISOString(),
    decidedBy: by,
  });
  const request = moved.request ?? found;
  if (request.status !== 'rejected')
    throw new ApiError(
      'invalid_request',
      `top-up request '${id}' was already approved by ${request.decidedBy}; it cannot be rejected`,
      { param: 'id' },
    );
  return { request, changed: moved.moved };
}
