// API Management's keys (issue "Console" item 2; SPEC "API key" and its state table): always the
// session's account — an id from another account is simply not found.
import type { FastifyInstance } from 'fastify';
import { z } from 'zod';
import { type ApiKeyRecord, type ApiKeys, MAX_KEY_NAME_LENGTH } from '../../core/keys/index.ts';
import { requireSession } from '../plugins/session.ts';

const keyView = z.object({
  id: z.string(),
  name: z.string(),
  key: z.string().describe('Masked to the last four characters'),
  createdAt: z.string(),
  rotatedAt: z.string().nullable(),
});
const withSecret = z.object({ key: keyView, secret: z.string().describe('Shown once') });
const keyParams = z.object({ id: z.string().min(1).max(64) });

const view = (k: ApiKeyRecord) => ({
  id: k.id,
  name: k.name,
  key: `sk-…${k.last4}`,
  createdAt: k.createdAt,
  rotatedAt: k.rotatedAt,
});

export async function keysRoutes(app: FastifyInstance, opts: { keys: ApiKeys }) {
  const { keys } = opts;
  app.addHook('onRequest', requireSession);
  const account = (r: { session: { accountId: string } | null }) => r.session!.accountId;

  app.get(
    '/keys',
    {
      schema: {
        summary: "The account's active keys, oldest first",
        response: { 200: z.object({ data: z.array(keyView) }) },
      },
    },
    async (request) => ({
      data: (await keys.list(account(request))).map(view),
    }),
  );

  app.post(
    '/keys',
    {
      schema: {
        summary: 'Generate New Key',
        body: z.object({ name: z.string().max(MAX_KEY_NAME_LENGTH + 1_000) }),
        response: { 200: withSecret },
      },
    },
    async (request) => {
      const { name } = request.body as { name: string };
      const { key, secret } = await keys.create(account(request), {
        name,
        createdBy: request.session!.userId,
      });
      return { key: view(key), secret };
    },
  );

  app.post(
    '/keys/default',
    {
      schema: {
        summary: 'Opening API Management: mints `Default` once if the account never had a key',
        response: { 200: z.object({ minted: withSecret.nullable() }) },
      },
    },
    async (request) => {
      const made = await keys.ensureDefaultKey(account(request));
      return { minted: made ? { key: view(made.key), secret: made.secret } : null };
    },
  );

  app.get(
    '/keys/:id/secret',
    {
      config: { sensitive: true },
      schema: { summary: 'Show Key', params: keyParams, response: { 200: z.object({ secret: z.string() }) } },
    },
    async (request) => ({ secret: await keys.show(account(request), (request.params as { id: string }).id) }),
  );

  app.post(
    '/keys/:id/rotate',
    {
      schema: {
        summary: 'Rotate Key: same id, a new secret (shown once)',
        params: keyParams,
        response: { 200: withSecret },
      },
    },
    async (request) => {
      const { key, secret } = await keys.rotate(account(request), (request.params as { id: string }).id);
      return { key: view(key), secret };
    },
  );

  app.delete(
    '/keys/:id',
    {
      schema: {
        summary: 'Delete Key (soft, final)',
        params: keyParams,
        response: { 200: z.object({ deleted: z.literal(true) }) },
      },
    },
    async (request) => {
      await keys.delete(account(request), (request.params as { id: string }).id);
      return { deleted: true as const };
    },
  );
}
