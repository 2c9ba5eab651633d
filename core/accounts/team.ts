// An account's team (issue "Console" item 6, SPEC "API key" rule 1): users are members of accounts
// with a role, a user may belong to several accounts, and members join through an invitation link.
// Keys belong to the account, not to the member who made them: removing a member leaves their keys
// working unless the remover ticks "Also revoke the API keys this member created" (KEY-7).
//
// Two indexes say the same thing from each side — `{a:<id>}:team` (user → role) and
// `mp:user-accounts:<user>` (account → role) — written together in one MULTI, so a member listed on
// one side is listed on the other.
import { createHash, randomBytes } from 'node:crypto';
import { ApiError, invalidRequest } from '../errors.ts';
import { newId } from '../ids.ts';
import { listKeyRecords, softDeleteKey } from '../keys/records.ts';
import { type Redis, writeSteps } from '../redis/client.ts';
import { accountKeys, globalKeys } from '../redis/keyspace.ts';
import { normalizeEmail } from './users.ts';

export const ROLES = ['owner', 'member'] as const;
export type Role = (typeof ROLES)[number];

export interface Membership {
  accountId: string;
  role: Role;
}

export interface Member {
  userId: string;
  role: Role;
}

export interface Invitation {
  id: string;
  accountId: string;
  email: string;
  role: Role;
  invitedBy: string;
  createdAt: string;
  expiresAt: string;
}

/** An invitation link works this long. */
export const INVITATION_TTL_MS = 7 * 24 * 3_600_000;

/** The link an invited person opens: the console's /invite page (the console and the CLI show it). */
export const invitationLink = (consolePublicUrl: string, token: string) =>
  `${consolePublicUrl.replace(/\/$/, '')}/invite/${token}`;

const isRole = (v: unknown): v is Role => v === 'owner' || v === 'member';
const tokenHash = (token: string) => createHash('sha256').update(token).digest('hex');

export class Team {
  constructor(private readonly redis: Redis) {}

  /** Adds a user to an account (or changes their role). */
  async add(accountId: string, userId: string, role: Role): Promise<void> {
    if (!isRole(role)) throw invalidRequest(`role must be one of ${ROLES.join(', ')}`, 'role');
    if ((await this.redis.hexists(accountKeys(accountId).account, 'id')) === 0)
      throw new ApiError('not_found', `No account '${accountId}'.`);
    // The account's team hash is what grants; the user's list only finds it: written last.
    await writeSteps(this.redis, [
      (m) => m.hset(globalKeys.userAccounts(userId), accountId, role),
      (m) => m.hset(accountKeys(accountId).team, userId, role),
    ]);
  }

  /** Changes a member's role; the last owner cannot become a member. */
  async setRole(accountId: string, userId: string, role: Role): Promise<void> {
    const was = await this.role(accountId, userId);
    if (was === null) throw new ApiError('not_found', 'No such member of this account.');
    if (was === 'owner' && role !== 'owner') await this.mustKeepAnOwner(accountId);
    await this.add(accountId, userId, role);
  }

  private async mustKeepAnOwner(accountId: string): Promise<void> {
    const owners = (await this.members(accountId)).filter((m) => m.role === 'owner');
    if (owners.length <= 1)
      throw invalidRequest('The account needs an owner: make another member an owner first.', 'userId');
  }

  /** The user's role in the account, or null when they are not a member. */
  async role(accountId: string, userId: string): Promise<Role | null> {
    const role = await this.redis.hget(accountKeys(accountId).team, userId);
    return isRole(role) ? role : null;
  }

  async members(accountId: string): Promise<Member[]> {
    const team = await this.redis.hgetall(accountKeys(accountId).team);
    return Object.entries(team)
      .filter((e): e is [string, Role] => isRole(e[1]))
      .map(([userId, role]) => ({ userId, role }));
  }

  /** Every account the user belongs to. */
  async accountsOf(userId: string): Promise<Membership[]> {
    const all = await this.redis.hgetall(globalKeys.userAccounts(userId));
    return Object.entries(all)
      .filter((e): e is [string, Role] => isRole(e[1]))
      .map(([accountId, role]) => ({ accountId, role }));
  }

  /**
   * Removes a member. With `revokeKeys` every active key they created in this account is
   * soft-deleted (and stops authenticating at once); without it their keys keep working (KEY-7).
   * The last owner cannot be removed: an account must stay manageable.
   */
  async remove(
    accountId: string,
    userId: string,
    opts: { revokeKeys: boolean },
  ): Promise<{ revokedKeyIds: string[] }> {
    const role = await this.role(accountId, userId);
    if (role === null) throw new ApiError('not_found', 'No such member of this account.');
    if (role === 'owner') await this.mustKeepAnOwner(accountId);
    // Revoked first, then unlisted (writeSteps: one slot each on a cluster).
    await writeSteps(this.redis, [
      (m) => m.hdel(accountKeys(accountId).team, userId),
      (m) => m.hdel(globalKeys.userAccounts(userId), accountId),
    ]);
    if (!opts.revokeKeys) return { revokedKeyIds: [] };
    const revokedKeyIds: string[] = [];
    for (const key of await listKeyRecords(this.redis, accountId)) {
      if (key.createdBy !== userId) continue;
      if ((await softDeleteKey(this.redis, accountId, key.id)) === 'deleted') revokedKeyIds.push(key.id);
    }
    return { revokedKeyIds };
  }

  /**
   * An invitation to join the account as `role`, for one email address. The token is the link's
   * secret: only its hash is stored, and it works once, for INVITATION_TTL_MS.
   */
  async invite(
    accountId: string,
    input: { email: string; role: Role; invitedBy: string },
  ): Promise<{ invitation: Invitation; token: string }> {
    const email = normalizeEmail(String(input.email ?? ''));
    if (!/^[^\s@]+@[^\s@]+\.[^\s@]+$/.test(email) || email.length > 254)
      throw invalidRequest('email is not a valid address', 'email');
    if (!isRole(input.role)) throw invalidRequest(`role must be one of ${ROLES.join(', ')}`, 'role');
    const now = Date.now();
    const invitation: Invitation = {
      id: newId('inv'),
      accountId,
      email,
      role: input.role,
      invitedBy: input.invitedBy,
      createdAt: new Date(now).toISOString(),
      expiresAt: new Date(now + INVITATION_TTL_MS).toISOString(),
    };
    const token = randomBytes(24).toString('base64url');
    const hash = tokenHash(token);
    await writeSteps(this.redis, [
      (m) =>
        m
          .hset(globalKeys.invitation(hash), { ...invitation })
          .pexpire(globalKeys.invitation(hash), INVITATION_TTL_MS),
      (m) => m.hset(accountKeys(accountId).invitations, invitation.id, hash),
    ]);
    return { invitation, token };
  }

  /** The pending invitations of an account (expired ones are dropped on the way). */
  async invitations(accountId: string): Promise<Invitation[]> {
    const ids = await this.redis.hgetall(accountKeys(accountId).invitations);
    const out: Invitation[] = [];
    for (const [id, hash] of Object.entries(ids)) {
      const inv = parseInvitation(await this.redis.hgetall(globalKeys.invitation(hash)));
      if (inv) out.push(inv);
      else await this.redis.hdel(accountKeys(accountId).invitations, id);
    }
    return out.sort((a, b) => a.createdAt.localeCompare(b.createdAt));
  }

  async revokeInvitation(accountId: string, invitationId: string): Promise<void> {
    const hash = await this.redis.hget(accountKeys(accountId).invitations, invitationId);
    if (hash === null) throw new ApiError('not_found', 'No such invitation.');
    // The link stops working first, then leaves the account's list.
    await writeSteps(this.redis, [
      (m) => m.del(globalKeys.invitation(hash)),
      (m) => m.hdel(accountKeys(accountId).invitations, invitationId),
    ]);
  }

  /** What a link shows before it is accepted; null when unknown, used or expired. */
  async invitation(token: string): Promise<Invitation | null> {
    if (typeof token !== 'string' || !/^[A-Za-z0-9_-]{32}$/.test(token)) return null;
    return parseInvitation(await this.redis.hgetall(globalKeys.invitation(tokenHash(token))));
  }

  /**
   * Accepts an invitation for a user whose email is the invited one: the link is claimed (so it
   * works once even when opened twice at once) and the user joins with the invited role.
   */
  async accept(token: string, user: { id: string; email: string }): Promise<Invitation> {
    const invitation = await this.invitation(token);
    if (!invitation) throw invitationGone();
    if (normalizeEmail(user.email) !== invitation.email)
      throw new ApiError('forbidden', `This invitation is for ${invitation.email}; sign in as that user.`);
    const claimed = await this.claim(token);
    if (!claimed) throw invitationGone();
    await this.joinByInvitation(claimed, user.id);
    return claimed;
  }

  /**
   * Uses up a link: of two claims racing, only one DEL finds it still there. Null when unknown,
   * used or expired. The caller then joins the user (joinByInvitation).
   */
  async claim(token: string): Promise<Invitation | null> {
    const invitation = await this.invitation(token);
    if (!invitation) return null;
    if ((await this.redis.del(globalKeys.invitation(tokenHash(token)))) !== 1) return null;
    await this.redis.hdel(accountKeys(invitation.accountId).invitations, invitation.id);
    return invitation;
  }

  /** The user joins with the invited role; accepting never lowers a role they already have. */
  async joinByInvitation(invitation: Invitation, userId: string): Promise<void> {
    if ((await this.role(invitation.accountId, userId)) !== 'owner')
      await this.add(invitation.accountId, userId, invitation.role);
  }
}

const invitationGone = () => new ApiError('not_found', 'This invitation link is unknown, used or expired.');

function parseInvitation(h: Record<string, string>): Invitation | null {
  if (!h.id || !h.accountId || !h.email || !isRole(h.role) || !h.expiresAt) return null;
  if (Date.parse(h.expiresAt) <= Date.now()) return null;
  return {
    id: h.id,
    accountId: h.accountId,
    email: h.email,
    role: h.role,
    invitedBy: h.invitedBy ?? '',
    createdAt: h.createdAt ?? '',
    expiresAt: h.expiresAt,
  };
}
