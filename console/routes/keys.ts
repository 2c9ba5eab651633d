// API Management's keys (issue "Console" item 2; SPEC "API key" and its state table): always the
// session's account — an id from another account is simply not found.
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { z } from 'zod';
import { invalidRequest } from '../../core/errors.ts';
import { type ApiKeyRecord, type ApiKeys, MAX_KEY_NAME_LENGTH } from '../../core/keys/index.ts';
import { formatNano, parseDecimalToNano } from '../../core/money.ts';
import type { Redis } from '../../core/redis/client.ts';
import { keysLastUsed } from '../../core/usage/call-facts.ts';
import { assertMayManageKey, type KeyAction } from '../key-permissions.ts';
import { requireSession } from '../plugins/session.ts';

const keyView = z.object({
  id: z.string(),
  name: z.string(),
  key: z.string().describe('Masked to the last four characters'),
  createdAt: z.string(),
  rotatedAt: z.string().nullable(),
  spendLimit: z.string().nullable().describe('Monthly spend limit in the account currency; null: none'),
  monthSpend: z.string().describe("The key's spend this calendar month (UTC), in the account currency"),
  spendWindow: z
    .enum(['day', 'week', 'month'])
    .describe("The spend limit's window: UTC day, ISO week or UTC month (issue 34)"),
  windowSpend: z.string().describe("The key's spend in its window's current period, in the account currency"),
  lastUsedAt: z
    .string()
    .nullable()
    .describe('ISO 8601: when the key last made a call (delivered or refused); null: none recorded'),
  mine: z
    .boolean()
    .describe('Made by the signed-in user: a member reveals, rotates, deletes and limits only these'),
});
/** A limit as typed: a decimal amount of the account currency, or null for none. */
export const spendLimitField = z
  .string()
  .max(40)
  .nullable()
  .describe('A decimal amount of the account currency, e.g. "25" or "7.50"; null: no limit');

/**
 * A limit as typed, in nano-units (null: none). The message is read by people on the console's
 * forms (issue 48 item 10), so it names the field in words; `param` names it for code.
 */
export function parseLimit(
  value: string | null | undefined,
  field: { param: string; words: string } = { param: 'spendLimit', words: 'The spend limit' },
): number | null {
  if (value === null || value === undefined || value.trim() === '') return null;
  try {
    return parseDecimalToNano(value.trim());
  } catch {
    throw invalidRequest(
      `${field.words} '${value}' is not an amount: write it like 25 or 7.50 (at most 9 decimals).`,
      field.param,
    );
  }
}
const withSecret = z.object({ key: keyView, secret: z.string().describe('Shown once') });
const keyParams = z.object({ id: z.string().min(1).max(64) });

const view = (
  k: ApiKeyRecord,
  userId: string,
  spent = 0,
  windowSpent = spent,
  lastUsedMs: number | undefined = undefined,
) => ({
  id: k.id,
  name: k.name,
  key: `sk-…${k.last4}`,
  createdAt: k.createdAt,
  rotatedAt: k.rotatedAt,
  spendLimit: k.spendLimit === null ? null : formatNano(k.spendLimit),
  monthSpend: formatNano(spent),
  spendWindow: k.spendWindow,
  windowSpend: formatNano(windowSpent),
  lastUsedAt: lastUsedMs === undefined ? null : new Date(lastUsedMs).toISOString(),
  mine: k.createdBy !== null && k.createdBy === userId,
});

export async function keysRoutes(app: FastifyInstance, opts: { keys: ApiKeys; redis: Redis }) {
  const { keys } = opts;
  app.addHook('onRequest', requireSession);
  const account = (r: { session: { accountId: string } | null }) => r.session!.accountId;
  const me = (r: { session: { userId: string } | null }) => r.session!.userId;
  /** Roles (../key-permissions.ts): a member acts only on keys they made. An unknown id falls through to its 404. */
  const mayManage = async (request: FastifyRequest, action: KeyAction, limit?: number | null) => {
    const key = await keys.get(account(request), (request.params as { id: string }).id);
    if (key !== null && key.status === 'active') assertMayManageKey(request.session!, key, action, limit);
  };

  app.get(
    '/keys',
    {
      schema: {
        summary: "The account's active keys, oldest first",
        response: { 200: z.object({ data: z.array(keyView) }) },
      },
    },
    async (request) => {
      const list = await keys.list(account(request));
      // Every key's spend and last use in this one request (the table asks once, not per key).
      const [spent, inWindow, lastUsed] = await Promise.all([
        keys.monthSpend(
          account(request),
          list.map((k) => k.id),
        ),
        keys.windowSpend(account(request), list),
        keysLastUsed(opts.redis, account(request)),
      ]);
      return {
        data: list.map((k) =>
          view(k, me(request), spent.get(k.id) ?? 0, inWindow.get(k.id) ?? 0, lastUsed.get(k.id)),
        ),
      };
    },
  );

  app.post(
    '/keys',
    {
      schema: {
        summary: 'Generate New Key',
        body: z.object({
          name: z.string().max(MAX_KEY_NAME_LENGTH + 1_000),
          spendLimit: spendLimitField.optional(),
        }),
        response: { 200: withSecret },
      },
    },
    async (request) => {
      const { name, spendLimit } = request.body as { name: string; spendLimit?: string | null };
      const { key, secret } = await keys.create(account(request), {
        name,
        createdBy: request.session!.userId,
        spendLimit: parseLimit(spendLimit),
      });
      return { key: view(key, me(request)), secret };
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
      return { minted: made ? { key: view(made.key, me(request)), secret: made.secret } : null };
    },
  );

  app.get(
    '/keys/:id/secret',
    {
      config: { sensitive: true },
      schema: { summary: 'Show Key', params: keyParams, response: { 200: z.object({ secret: z.string() }) } },
    },
    async (request) => {
      await mayManage(request, 'reveal');
      return { secret: await keys.show(account(request), (request.params as { id: string }).id) };
    },
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
      await mayManage(request, 'rotate');
      const { key, secret } = await keys.rotate(account(request), (request.params as { id: string }).id);
      return { key: view(key, me(request)), secret };
    },
  );

  app.patch(
    '/keys/:id',
    {
      schema: {
        summary:
          "Rename a key, and/or set or remove its monthly spend limit (the month's earlier spend counts at once)",
        params: keyParams,
        body: z
          .object({
            name: z
              .string()
              .max(MAX_KEY_NAME_LENGTH + 1_000)
              .optional()
              .describe('The new name (issue 48 item 10): the rules of a new key’s name'),
            spendLimit: spendLimitField.optional(),
          })
          .refine((b) => b.name !== undefined || b.spendLimit !== undefined, {
            message: 'Give a name or a spendLimit to change.',
          }),
        response: { 200: z.object({ key: keyView }) },
      },
    },
    async (request) => {
      const id = (request.params as { id: string }).id;
      const body = request.body as { name?: string; spendLimit?: string | null };
      const limit = body.spendLimit === undefined ? undefined : parseLimit(body.spendLimit);
      if (body.name !== undefined) await mayManage(request, 'rename');
      if (limit !== undefined) await mayManage(request, 'limit', limit);
      // The name first: a refused name changes nothing, as a refused limit does.
      let key = body.name === undefined ? null : await keys.rename(account(request), id, body.name);
      if (limit !== undefined) key = await keys.setSpendLimit(account(request), id, limit);
      key = key!;
      const spent = await keys.monthSpend(account(request), [id]);
      const inWindow = await keys.windowSpend(account(request), [key]);
      return { key: view(key, me(request), spent.get(id) ?? 0, inWindow.get(id) ?? 0) };
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
      await mayManage(request, 'delete');
      await keys.delete(account(request), (request.params as { id: string }).id);
      return { deleted: true as const };
    },
  );
}
