// A batch line's call is named by a one-use ticket in a header only this process knows (as a
// background response's job is, ../calls/background-responses.ts); a client sending the header is
// refused. The ticket carries the line's budget in and its usage out (../billing/batch-line-charge.ts).
import { randomBytes } from 'node:crypto';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import fp from 'fastify-plugin';
import { invalidRequest } from '../../core/errors.ts';
import type { LineTicket } from '../billing/batch-line-charge.ts';

export const BATCH_LINE_HEADER = 'x-modelplane-batch-line';
export class LineTickets {
  private readonly byToken = new Map<string, LineTicket>();

  issue(budget: number): { token: string; ticket: LineTicket } {
    const token = randomBytes(24).toString('hex');
    const ticket: LineTicket = { budget, usage: null, cancel: null, preempted: false };
    this.byToken.set(token, ticket);
    return { token, ticket };
  }

  /** The ticket a token names, once. */
  claim(token: string): LineTicket | undefined {
    const t = this.byToken.get(token);
    this.byToken.delete(token);
    return t;
  }

  drop(token: string): void {
    this.byToken.delete(token);
  }
}

/** Claims a line's ticket for its call (in the API scope). */
export const batchLinePlugin = fp(
  async (app: FastifyInstance, opts: { tickets: LineTickets }) => {
    app.decorateRequest('batchLine', null);
    app.addHook('onRequest', async (request: FastifyRequest) => {
      const token = request.headers[BATCH_LINE_HEADER];
      if (token === undefined) return;
      const ticket = typeof token === 'string' ? opts.tickets.claim(token) : undefined;
      if (ticket === undefined) throw invalidRequest(`${BATCH_LINE_HEADER} is not a header clients send.`);
      request.batchLine = ticket;
    });
  },
  { name: 'batch-line' },
);
