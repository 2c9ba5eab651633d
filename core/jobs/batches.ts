// Batches in Redis (docs/batches.md): the batch record (a hash of the account's, listed with
// cursors, ./listed-records.ts), the fleet-wide set of batches not yet finished (the runner's work
// list), and each line's result, written once.
//
// A line's result is written with HSETNX in the same script that counts it (completed or failed,
// and what it cost), so a line run twice — a runner that lost its lock while another took over —
// keeps its first result, is counted once, and is billed from that one result (the caller settles
// the stored result's cost under the line's own id, ./settled set marks it). Statuses move only
// forward, each change a script that checks the status it leaves.

import type { Redis } from '../redis/client.ts';
import { LuaScript } from '../redis/lua.ts';
import { ListedRecords, type RecordFields } from './listed-records.ts';

export type BatchStatus =
  | 'validating'
  | 'failed'
  | 'in_progress'
  | 'finalizing'
  | 'completed'
  | 'expired'
  | 'cancelling'
  | 'cancelled';

export const finalStatuses: ReadonlySet<string> = new Set(['failed', 'completed', 'expired', 'cancelled']);

/** The runner's list: `<accountId> <batchId>` of every batch not final, scored by creation. */
export const ACTIVE_KEY = 'mp:batches:active';

/** KEYS: results, batch. ARGV: index, result, ok (1|0), cost. Returns {written (1|0), the stored result}. */
const recordLine = new LuaScript(
  `if redis.call('HSETNX', KEYS[1], ARGV[1], ARGV[2]) == 1 then
  redis.call('HINCRBY', KEYS[2], ARGV[3] == '1' and 'completed' or 'failed', 1)
  redis.call('HINCRBY', KEYS[2], 'charged', ARGV[4])
  return {1, ARGV[2]}
end
return {0, redis.call('HGET', KEYS[1], ARGV[1])}`,
  'batch-record-line',
);

/** KEYS: batch. ARGV: allowed statuses (comma-separated), new status, field, value, ... 1 when moved. */
const transition = new LuaScript(
  `local status = redis.call('HGET', KEYS[1], 'status')
if not status then return 0 end
local allowed = false
for s in string.gmatch(ARGV[1], '[^,]+') do if s == status then allowed = true end end
if not allowed then return 0 end
redis.call('HSET', KEYS[1], 'status', ARGV[2], unpack(ARGV, 3))
return 1`,
  'batch-transition',
);

export const batchMember = (accountId: string, id: string) => `${accountId} ${id}`;

export class Batches {
  readonly records: ListedRecords;

  constructor(private readonly redis: Redis) {
    this.records = new ListedRecords(redis, 'batch');
  }

  private resultsKey(accountId: string, id: string): string {
    return `${this.records.key(accountId, id)}:results`;
  }

  private settledKey(accountId: string, id: string): string {
    return `${this.records.key(accountId, id)}:settled`;
  }

  /**
   * Files a batch on the runners' list, before its hold and its record are written: the list and
   * the record are in different slots (no one atomic write on Redis Cluster), so the list goes
   * first and a creation cut anywhere after leaves an entry the runner resolves (runs the batch,
   * or, with no record past the grace, gives its hold back), never a record nobody runs.
   */
  async file(accountId: string, id: string): Promise<void> {
    await this.redis.zadd(ACTIVE_KEY, Date.now(), batchMember(accountId, id));
  }

  /** Takes a batch off the runners' list. */
  async unfile(accountId: string, id: string): Promise<void> {
    await this.redis.zrem(ACTIVE_KEY, batchMember(accountId, id));
  }

  /** Records a new batch (one that is to run was filed first: `file`). */
  async create(accountId: string, id: string, fields: Record<string, string | number>): Promise<void> {
    await this.records.add(accountId, id, fields);
  }

  get(accountId: string, id: string): Promise<RecordFields | null> {
    return this.records.get(accountId, id);
  }

  /** Moves a batch from one of `from` to `to` (writing `fields` too); false when it was elsewhere. */
  async move(
    accountId: string,
    id: string,
    from: readonly BatchStatus[],
    to: BatchStatus,
    fields: Record<string, string | number> = {},
  ): Promise<boolean> {
    const args = Object.entries(fields).flatMap(([f, v]) => [f, String(v)]);
    const r = await transition.run(
      this.redis,
      [this.records.key(accountId, id)],
      [from.join(','), to, ...args],
    );
    if (r === 1 && finalStatuses.has(to)) await this.unfile(accountId, id);
    return r === 1;
  }

  /** The runners' list, each with when it was filed (ms). */
  async active(): Promise<{ accountId: string; id: string; filedAt: number }[]> {
    const flat = await this.redis.zrange(ACTIVE_KEY, 0, -1, 'WITHSCORES');
    const out: { accountId: string; id: string; filedAt: number }[] = [];
    for (let i = 0; i + 1 < flat.length; i += 2) {
      const [accountId = '', id = ''] = flat[i]!.split(' ');
      out.push({ accountId, id, filedAt: Number(flat[i + 1]) });
    }
    return out;
  }

  /** Writes a line's result once; answers the stored one (this, or an earlier run's). */
  async recordLine(
    accountId: string,
    id: string,
    index: number,
    result: { json: string; ok: boolean; cost: number },
  ): Promise<{ written: boolean; stored: string }> {
    const r = (await recordLine.run(
      this.redis,
      [this.resultsKey(accountId, id), this.records.key(accountId, id)],
      [index, result.json, result.ok ? 1 : 0, result.cost],
    )) as [number, string];
    return { written: r[0] === 1, stored: r[1] };
  }

  /** Indexes of the lines that have a result. */
  async done(accountId: string, id: string): Promise<Set<number>> {
    return new Set((await this.redis.hkeys(this.resultsKey(accountId, id))).map(Number));
  }

  /** Every result, by line index. */
  async results(accountId: string, id: string): Promise<Map<number, string>> {
    const all = await this.redis.hgetall(this.resultsKey(accountId, id));
    return new Map(Object.entries(all).map(([k, v]) => [Number(k), v]));
  }

  async markSettled(accountId: string, id: string, index: number): Promise<void> {
    await this.redis.sadd(this.settledKey(accountId, id), index);
  }

  async settled(accountId: string, id: string): Promise<Set<number>> {
    return new Set((await this.redis.smembers(this.settledKey(accountId, id))).map(Number));
  }

  /** Drops the per-line state of a finished batch (its output files hold the results). */
  async dropLines(accountId: string, id: string): Promise<void> {
    await this.redis.del(this.resultsKey(accountId, id), this.settledKey(accountId, id));
  }

  async remove(accountId: string, id: string): Promise<void> {
    await this.dropLines(accountId, id);
    await this.records.remove(accountId, id);
    await this.unfile(accountId, id);
  }
}
