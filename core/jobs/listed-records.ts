// Records of an account listed in creation order with cursors (OpenAI's `after`/`limit`/`order`,
// Anthropic's `after_id`/`before_id`): uploaded files and batches. A record is a hash of the
// account's, its place in a sorted set given by one script, max(ms × 1000, last + 1), so records
// made in one millisecond keep the order they were made in (as video jobs do, core/jobs/video-jobs.ts).
// A deleted record's place is remembered (the newest 1000), so a list goes on past a record deleted
// meanwhile.

import type { Redis } from '../redis/client.ts';
import { accountTag } from '../redis/keyspace.ts';
import { LuaScript } from '../redis/lua.ts';

/** KEYS: record, index, seq. ARGV: id, field, value, ... Returns the place. */
const add = new LuaScript(
  `local t = redis.call('TIME')
local place = tonumber(t[1]) * 1000000 + math.floor(tonumber(t[2]) / 1000) * 1000
local last = tonumber(redis.call('GET', KEYS[3]) or '0')
if place <= last then place = last + 1 end
redis.call('SET', KEYS[3], place)
redis.call('HSET', KEYS[1], unpack(ARGV, 2))
redis.call('ZADD', KEYS[2], place, ARGV[1])
return place`,
  'listed-add',
);

/** KEYS: index, deleted, record. ARGV: id, keep. Moves a record's place to the deleted ones and drops it. */
const remove = new LuaScript(
  `local place = redis.call('ZSCORE', KEYS[1], ARGV[1])
if not place then return 0 end
redis.call('ZREM', KEYS[1], ARGV[1])
redis.call('ZADD', KEYS[2], place, ARGV[1])
redis.call('ZREMRANGEBYRANK', KEYS[2], 0, -1 - tonumber(ARGV[2]))
redis.call('DEL', KEYS[3])
return 1`,
  'listed-remove',
);

const DELETED_KEPT = 1000;

export type RecordFields = Record<string, string>;

export interface ListPage {
  records: RecordFields[];
  hasMore: boolean;
}

export class ListedRecords {
  constructor(
    private readonly redis: Redis,
    /** The kind's name in keys: `bfile`, `batch`. */
    private readonly kind: string,
  ) {}

  key(accountId: string, id: string): string {
    return `${accountTag(accountId)}:${this.kind}:${id}`;
  }

  private index(accountId: string): string {
    return `${accountTag(accountId)}:${this.kind}s`;
  }

  async add(accountId: string, id: string, fields: Record<string, string | number>): Promise<void> {
    const idx = this.index(accountId);
    const args = Object.entries(fields).flatMap(([f, v]) => [f, String(v)]);
    await add.run(this.redis, [this.key(accountId, id), idx, `${idx}:seq`], [id, ...args]);
  }

  async get(accountId: string, id: string): Promise<RecordFields | null> {
    const r = await this.redis.hgetall(this.key(accountId, id));
    return r.id === undefined ? null : r;
  }

  async remove(accountId: string, id: string): Promise<boolean> {
    const idx = this.index(accountId);
    const r = await remove.run(
      this.redis,
      [idx, `${idx}:deleted`, this.key(accountId, id)],
      [id, DELETED_KEPT],
    );
    return r === 1;
  }

  /**
   * A page after `after` (or before `before`, the page nearest it) in `order`; null when the
   * cursor names no record of the account's (not even a deleted one). `filter` keeps some records
   * only (a purpose): the page then reads on until it has `limit` of them or the list ends.
   */
  async list(
    accountId: string,
    o: {
      after?: string | undefined;
      before?: string | undefined;
      limit: number;
      order: 'asc' | 'desc';
      filter?: (r: RecordFields) => boolean;
    },
  ): Promise<ListPage | null> {
    const idx = this.index(accountId);
    const cursor = o.after ?? o.before;
    let place: string | null = null;
    if (cursor !== undefined) {
      place = (await this.redis.zscore(idx, cursor)) ?? (await this.redis.zscore(`${idx}:deleted`, cursor));
      if (place === null) return null;
    }
    // `before` in the list's order is `after` in the opposite one, read back to front.
    const forward = o.before === undefined;
    const desc = (o.order === 'desc') === forward;
    const records: RecordFields[] = [];
    let from = place === null ? (desc ? '+inf' : '-inf') : `(${place}`;
    let hasMore = false;
    const chunk = Math.max(o.limit + 1, 50);
    for (;;) {
      const ids = desc
        ? await this.redis.zrevrangebyscore(idx, from, '-inf', 'WITHSCORES', 'LIMIT', 0, chunk)
        : await this.redis.zrangebyscore(idx, from, '+inf', 'WITHSCORES', 'LIMIT', 0, chunk);
      const pipe = this.redis.pipeline();
      for (let i = 0; i < ids.length; i += 2) pipe.hgetall(this.key(accountId, ids[i]!));
      const rows = ((await pipe.exec()) ?? []).map(([, v]) => v as RecordFields);
      for (const r of rows) {
        if (r.id === undefined || (o.filter !== undefined && !o.filter(r))) continue;
        if (records.length === o.limit) {
          hasMore = true;
          break;
        }
        records.push(r);
      }
      if (hasMore || ids.length < chunk * 2) break;
      from = `(${ids[ids.length - 1]}`;
    }
    if (!forward) records.reverse();
    return { records, hasMore };
  }
}
