// One batch line run: its route's own POST, injected with the batch's key and the line's ticket
// (../billing/batch-line-charge.ts), so the line is answered exactly as the same call made interactively, then its
// result as the batch stores it — the answer, its usage, and its cost at the batch price, which
// also replaces the interactive cost the answer's usage.cost carried. A line that failed (any
// non-2xx) costs nothing.
import type { FastifyInstance } from 'fastify';
import { textCostSaturating } from '../../core/billing/index.ts';
import type { TokenPrice } from '../../core/catalogue/index.ts';
import { speaksMessages } from '../../core/endpoints.ts';
import { formatNano } from '../../core/money.ts';
import type { LineTicket } from '../billing/batch-line-charge.ts';
import { BATCH_LINE_HEADER, type LineTickets } from './line-tickets.ts';
import type { LineResult } from './output.ts';

export interface LineRun {
  endpoint: string;
  customId: string;
  body: Record<string, unknown>;
  /** The line's estimate: the most its call may cost. */
  budget: number;
  /** The key's secret (empty when the key is gone: the call is refused, the line errored). */
  secret: string;
  /** The batch price the line is billed at (null: the model is gone; a success then costs nothing). */
  price: TokenPrice | null;
  /** Told the line's ticket as the call starts: the runner preempts the line through it. */
  started?: (ticket: LineTicket) => void;
}

/** A line preempted before its answer was whole: no result, it runs again. */
export class LinePreemptedError extends Error {
  constructor() {
    super('the batch line was preempted by an interactive call');
  }
}

export async function runLine(app: FastifyInstance, tickets: LineTickets, l: LineRun): Promise<LineResult> {
  const { token, ticket } = tickets.issue(l.budget);
  const messages = speaksMessages(l.endpoint);
  l.started?.(ticket);
  try {
    const res = await app.inject({
      method: 'POST',
      url: l.endpoint,
      headers: {
        ...(messages
          ? { 'x-api-key': l.secret, 'anthropic-version': '2023-06-01' }
          : { authorization: `Bearer ${l.secret}` }),
        'content-type': 'application/json',
        [BATCH_LINE_HEADER]: token,
      },
      payload: JSON.stringify(l.body),
    });
    let body: unknown;
    try {
      body = JSON.parse(res.body);
    } catch {
      body = { error: { message: 'The call answered with a body that is not JSON.', type: 'server_error' } };
    }
    const ok = res.statusCode >= 200 && res.statusCode < 300;
    // A line whose answer was whole before the preemption reached it keeps its result.
    if (!ok && ticket.preempted) throw new LinePreemptedError();
    const usage = ok ? ticket.usage : null;
    const cost = usage !== null && l.price !== null ? lineCost(l.price, usage) : 0;
    if (ok) setCost(body, cost);
    return {
      custom_id: l.customId,
      status_code: res.statusCode,
      request_id: String(res.headers['x-request-id'] ?? ''),
      body,
      usage,
      cost,
    };
  } finally {
    tickets.drop(token);
  }
}

function lineCost(price: TokenPrice, u: NonNullable<LineResult['usage']>): number {
  return textCostSaturating(price, {
    inputTokens: u.inputTokens ?? 0,
    cachedTokens: u.cachedTokens ?? 0,
    outputTokens: u.outputTokens ?? 0,
  });
}

/** The answer's usage.cost says what the line is billed: the batch price. */
function setCost(body: unknown, cost: number): void {
  const usage = (body as { usage?: Record<string, unknown> } | null)?.usage;
  if (usage !== null && typeof usage === 'object' && 'cost' in usage) usage.cost = formatNano(cost);
}
