// Console sessions in Redis (issue "Console" item 1): an unguessable id in an HttpOnly cookie,
// the user and account it acts for, and the session's CSRF token; expiring, and revocable by
// deleting the key (sign-out does).
import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import type { Redis } from '../core/redis/client.ts';
import { globalKeys } from '../core/redis/keyspace.ts';
import { LuaScript } from '../core/redis/lua.ts';

export interface Session {
  id: string;
  userId: string;
  accountId: string;
  /** Sent back by the app on every state-changing call (x-csrf-token). */
  csrf: string;
}

// Only a live session changes: an HSET on a revoked or expired one would bring back a key with no ttl.
const SWITCH = new LuaScript(
  "if redis.call('EXISTS', KEYS[1]) == 1 then redis.call('HSET', KEYS[1], 'accountId', ARGV[1]) end",
  'session_switch',
);

const token = () => randomBytes(32).toString('base64url');

/**
 * A session's Redis key holds a hash of its id, never the id: a copy of Redis (a backup, a replica,
 * a MONITOR) then holds no cookie anyone could sign in with, as keys and invitations keep only
 * hashes of their secrets.
 */
const sessionKey = (id: string) => globalKeys.session(createHash('sha256').update(id).digest('base64url'));

export class Sessions {
  constructor(
    private readonly redis: Redis,
    private readonly ttlMs: number,
  ) {}

  async create(userId: string, accountId: string): Promise<Session> {
    const s: Session = { id: token(), userId, accountId, csrf: token() };
    const key = sessionKey(s.id);
    await this.redis.multi().hset(key, { userId, accountId, csrf: s.csrf }).pexpire(key, this.ttlMs).exec();
    return s;
  }

  async get(id: string): Promise<Session | null> {
    if (!/^[A-Za-z0-9_-]{43}$/.test(id)) return null;
    const h = await this.redis.hgetall(sessionKey(id));
    if (!h.userId || !h.accountId || !h.csrf) return null;
    return { id, userId: h.userId, accountId: h.accountId, csrf: h.csrf };
  }

  /** The session now acts for another account (the caller checked the membership). */
  async switchAccount(id: string, accountId: string): Promise<void> {
    await SWITCH.run(this.redis, [sessionKey(id)], [accountId]);
  }

  async revoke(id: string): Promise<void> {
    await this.redis.del(sessionKey(id));
  }
}

/** A CSRF token as sent equals the session's (constant time). */
export function csrfMatches(session: Session, sent: unknown): boolean {
  if (typeof sent !== 'string') return false;
  const a = Buffer.from(sent);
  const b = Buffer.from(session.csrf);
  return a.length === b.length && timingSafeEqual(a, b);
}
