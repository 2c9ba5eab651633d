// What a member may do with an account's keys (issue 24 item 7; docs/security.md "Roles").
// Owners may do anything with every key. A member sees every key's name, mask, limit and spend
// (the account's keys are shared work), and may reveal, rotate and delete only the keys they
// created (and rename those); on those they may set a spend limit or lower one, but never raise or remove one: a
// limit is an owner's brake, and whoever it brakes should not be able to lift it. A key no user
// made (the Default key, keys made with the CLI) is an owner's.
import { ApiError } from '../core/errors.ts';
import type { ApiKeyRecord } from '../core/keys/index.ts';
import type { ActiveSession } from './plugins/session.ts';

export type KeyAction = 'reveal' | 'rotate' | 'delete' | 'rename' | 'limit';

const WHAT: Record<Exclude<KeyAction, 'limit'>, string> = {
  reveal: 'show',
  rotate: 'rotate',
  delete: 'delete',
  rename: 'rename',
};

/** Throws 403 when the session's user may not do `action` to `key`; `limit` is the new limit. */
export function assertMayManageKey(
  session: Pick<ActiveSession, 'role' | 'userId'>,
  key: Pick<ApiKeyRecord, 'createdBy' | 'spendLimit'>,
  action: KeyAction,
  limit?: number | null,
): void {
  if (session.role === 'owner') return;
  const own = key.createdBy !== null && key.createdBy === session.userId;
  if (action !== 'limit') {
    if (!own)
      throw new ApiError(
        'forbidden',
        `Members can ${WHAT[action]} only keys they created. Ask an owner of the account.`,
      );
    return;
  }
  if (!own)
    throw new ApiError('forbidden', "Members can change only their own keys' spend limits. Ask an owner.");
  const tightens =
    limit !== null && limit !== undefined && (key.spendLimit === null || limit <= key.spendLimit);
  if (!tightens)
    throw new ApiError(
      'forbidden',
      'Members can set or lower a spend limit, not raise or remove one. Ask an owner of the account.',
      { param: 'spendLimit' },
    );
}

/**
 * Whether the session's user may cancel a batch made with `key` (null: a key since deleted, or one
 * no user made). The same rule as a key's: a batch spends through its key, so an owner may stop any,
 * a member only the batches of keys they created — not a colleague's run.
 */
export function mayCancelBatch(
  session: Pick<ActiveSession, 'role' | 'userId'>,
  key: Pick<ApiKeyRecord, 'createdBy'> | null,
): boolean {
  if (session.role === 'owner') return true;
  return key !== null && key.createdBy !== null && key.createdBy === session.userId;
}
