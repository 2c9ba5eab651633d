// Stored Responses (POST /v1/responses with store: true): the response object and the whole
// conversation it ends (earlier turns, this input, this output) kept in Redis for 30 days under
// the account, so GET /v1/responses/{id} returns it and previous_response_id continues it. Bounded
// (docs/api.md "The Responses API"): the size of one, and how many an account keeps — past that the
// oldest are deleted in the same script that adds the newest. Another account's id is simply not
// found: the key holds the account. Written by the proxy's Responses route (proxy/routes/responses.ts).
import type { Redis } from '../redis/client.ts';

export const STORED_TTL_S = 30 * 24 * 3600;

/** What is kept, serialized: the response object's JSON and the conversation's (a JSON array). */
export interface StoredJson {
  response: string;
  items: string;
}

export interface StoredResponse {
  response: Record<string, unknown>;
  /** The conversation as Responses input items, oldest first (instructions are not carried over). */
  items: unknown[];
}

const keyOf = (accountId: string, id: string) => `responses:{${accountId}}:${id}`;
const indexOf = (accountId: string) => `responses:{${accountId}}:index`;

// KEYS: the response key, the account's index. ARGV: the value, ttl s, now ms, id, max kept, key prefix.
const SAVE = `
redis.call('SET', KEYS[1], ARGV[1], 'EX', ARGV[2])
redis.call('ZADD', KEYS[2], ARGV[3], ARGV[4])
redis.call('EXPIRE', KEYS[2], ARGV[2])
redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', tonumber(ARGV[3]) - tonumber(ARGV[2]) * 1000)
local over = redis.call('ZCARD', KEYS[2]) - tonumber(ARGV[5])
if over > 0 then
  local old = redis.call('ZRANGE', KEYS[2], 0, over - 1)
  for _, id in ipairs(old) do redis.call('DEL', ARGV[6] .. id) end
  redis.call('ZREMRANGEBYRANK', KEYS[2], 0, over - 1)
end
return 1`;

type SaveScript = (...args: (string | number)[]) => Promise<unknown>;

export class ResponseStore {
  /**
   * ioredis's own script command, not core/redis/lua.ts's LuaScript: it sends EVAL the first time on each
   * connection and EVALSHA after, so a save is always queued on the connection before the reply is
   * written. LuaScript sends EVALSHA and, after a NOSCRIPT, EVAL only once the error came back — by
   * then the client may have the response and its GET be read first: a 404 for a stored response.
   */
  private readonly saveScript: SaveScript;

  constructor(
    private readonly redis: Redis,
    readonly bounds: { maxBytes: number; perAccount: number },
  ) {
    const name = 'modelplaneSaveResponse';
    if (!(name in redis)) redis.defineCommand(name, { numberOfKeys: 2, lua: SAVE });
    this.saveScript = (redis as unknown as Record<string, SaveScript>)[name]!.bind(redis);
  }

  /**
   * Keeps one, given as the JSON it was sent as (spliced, not serialized again); false when it is
   * over the size bound (not kept). The command is queued on the connection at once, so a GET sent
   * after the client has the response is read after it.
   */
  async save(accountId: string, id: string, stored: StoredJson): Promise<boolean> {
    const value = `{"response":${stored.response},"items":${stored.items}}`;
    if (Buffer.byteLength(value) > this.bounds.maxBytes) return false;
    await this.saveScript(
      keyOf(accountId, id),
      indexOf(accountId),
      value,
      STORED_TTL_S,
      Date.now(),
      id,
      this.bounds.perAccount,
      `responses:{${accountId}}:`,
    );
    return true;
  }

  async get(accountId: string, id: string): Promise<StoredResponse | null> {
    const value = await this.redis.get(keyOf(accountId, id));
    return value === null ? null : (JSON.parse(value) as StoredResponse);
  }

  async delete(accountId: string, id: string): Promise<boolean> {
    const [[, n]] = (await this.redis
      .multi()
      .del(keyOf(accountId, id))
      .zrem(indexOf(accountId), id)
      .exec()) as [[unknown, number]];
    return n === 1;
  }
}
