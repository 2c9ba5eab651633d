// Who is calling: the key lookup (core/keys) joined with what the proxy needs of the account for
// every request (billing currency, invite-only grants). Cached as one unit by KeyCache.
import type { Accounts } from '../../core/accounts/accounts.ts';
import { effectiveRateLimits, hasRateLimits } from '../../core/billing/rate-limits.ts';
import type { ApiKeys } from '../../core/keys/index.ts';
import type { Principal, PrincipalLookup } from './key-cache.ts';

export function principalLookup(keys: ApiKeys, accounts: Accounts): PrincipalLookup {
  return async (secret: string): Promise<Principal | null> => {
    const key = await keys.authenticate(secret);
    if (!key) return null;
    const [account, grants] = await Promise.all([
      accounts.get(key.accountId),
      accounts.grants(key.accountId),
    ]);
    if (!account) return null;
    const rateLimited = hasRateLimits(effectiveRateLimits(key.rateLimits, account.rateLimits));
    return {
      accountId: key.accountId,
      keyId: key.keyId,
      secretHash: key.secretHash,
      spendLimit: key.spendLimit,
      rateLimited,
      accountBudget: account.budget !== null,
      slotWaitMs: (account.concurrencyQueueSeconds ?? 0) * 1000,
      currency: account.currency,
      grants,
    };
  };
}

/**
 * The secret of an `Authorization: Bearer <key>` header, exactly as sent: no trimming (AUTH-5), so
 * a key pasted with a stray space fails instead of working by accident. Null when absent.
 */
export function bearerSecret(header: string | undefined): string | null {
  if (header === undefined) return null;
  const space = header.indexOf(' ');
  if (space === -1 || header.slice(0, space).toLowerCase() !== 'bearer') return null;
  return header.slice(space + 1);
}
