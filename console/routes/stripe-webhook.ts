// Stripe's webhook (issue "Console" item 5): outside /api and without a session — Stripe is the
// caller, and the Stripe-Signature header (HMAC of the exact bytes under the endpoint's secret)
// is what proves it. So the body reaches the check as the raw bytes: this route's own content-type
// parser keeps the Buffer, where the console's JSON parser would have re-serialised it.
import type { FastifyInstance } from 'fastify';
import { z } from 'zod';
import type { StripeTopUps } from '../../core/payments/index.ts';

export async function stripeWebhookRoutes(app: FastifyInstance, d: { stripe: StripeTopUps }) {
  // Encapsulated: only this plugin's route parses bodies this way.
  app.removeAllContentTypeParsers();
  app.addContentTypeParser('application/json', { parseAs: 'buffer' }, (_request, body, done) =>
    done(null, body),
  );

  app.post(
    '/webhooks/stripe',
    {
      schema: {
        summary:
          "Stripe events: a paid Checkout Session credits its top-up request once; auto top-up's saved cards and charges",
        response: {
          200: z.object({
            received: z.literal(true),
            outcome: z.enum([
              'credited',
              'duplicate',
              'awaiting_payment',
              'closed',
              'mismatch',
              'ignored',
              'card_saved',
              'failed',
            ]),
          }),
        },
      },
    },
    async (request) => {
      const body = Buffer.isBuffer(request.body) ? request.body : Buffer.alloc(0);
      const signature = request.headers['stripe-signature'];
      const outcome = await d.stripe.handleWebhook(
        body,
        typeof signature === 'string' ? signature : undefined,
        request.log,
      );
      request.log.info({ outcome }, 'stripe webhook');
      return { received: true as const, outcome };
    },
  );
}
