// Video jobs in Redis (VID-*). A job is a hash per account, listed in the account's sorted set in
// creation order, created in the same script that charges it (core/billing/lua/charge.lua), so a
// job exists exactly when its charge does, and failed in the same script that refunds it
// (refund.lua), so it is failed exactly when it is refunded. The charge and the refund are made by
// the caller's billing (the proxy's one billing door, with its gate and metrics): this file builds
// what they record and keeps the job's state. A finished job (completed or failed)
// never changes again, whoever writes late. Unfinished jobs are also in one fleet-wide sorted set
// of due times that pollers claim from (the proxy's media/video-worker.ts): a claim moves the job's due time
// VIDEO_CLAIM_MS ahead and names its claimant, the claimant renews it while it works on the job,
// so one replica polls a job at a time and a dead replica's jobs come due again.

import { type ChargeResult, type KeySpend, type Metering, videoCost } from '../billing/index.ts';
import type { VideoPrice } from '../catalogue/index.ts';
import { perItem, type Redis } from '../redis/client.ts';
import { accountKeys, globalKeys } from '../redis/keyspace.ts';
import { LuaScript } from '../redis/lua.ts';

export type VideoStatus = 'queued' | 'in_progress' | 'completed' | 'failed';

/** A charge that also records the job (Metering.charge's arguments), made by the caller's billing. */
export type VideoCharge = Parameters<Metering['charge']>[0];
/** A refund that also fails the job (Metering.refund's arguments), made by the caller's billing. */
export type VideoRefund = Parameters<Metering['refund']>[0];

/** A job as stored: every value a string (Redis hash). */
export type JobRecord = Record<string, string>;

const NOW = `local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)`;

/** KEYS: active, claims. ARGV: claimMs, token, limit. Returns the members claimed. */
const claim = new LuaScript(
  `${NOW}
local due = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', now, 'LIMIT', 0, tonumber(ARGV[3]))
for _, m in ipairs(due) do
  redis.call('ZADD', KEYS[1], now + tonumber(ARGV[1]), m)
  redis.call('HSET', KEYS[2], m, ARGV[2])
end
return due`,
  'video-claim',
);

/**
 * KEYS: active, claims. ARGV: member, token, delayMs (-1: done). 1 when the claim was still ours.
 * The claimant's name stays until the job is done (the due time alone gates the next claim), so
 * who last polled a job can be read while it runs.
 */
const unclaim = new LuaScript(
  `${NOW}
if redis.call('HGET', KEYS[2], ARGV[1]) ~= ARGV[2] then return 0 end
if tonumber(ARGV[3]) < 0 then
  redis.call('ZREM', KEYS[1], ARGV[1])
  redis.call('HDEL', KEYS[2], ARGV[1])
else redis.call('ZADD', KEYS[1], now + tonumber(ARGV[3]), ARGV[1]) end
return 1`,
  'video-unclaim',
);

/** KEYS: active, claims. ARGV: member, token, claimMs. 1 when the claim was still ours (and is renewed). */
const renew = new LuaScript(
  `${NOW}
if redis.call('HGET', KEYS[2], ARGV[1]) ~= ARGV[2] then return 0 end
redis.call('ZADD', KEYS[1], 'XX', now + tonumber(ARGV[3]), ARGV[1])
return 1`,
  'video-renew',
);

/**
 * KEYS: job. ARGV: field, value, ... Writes only to a job that exists (not deleted) and is not
 * finished: 1 written, 0 gone, 2 finished (a replica that lost its claim writes nothing).
 */
const update = new LuaScript(
  `local status = redis.call('HGET', KEYS[1], 'status')
if not status then return 0 end
if status == 'completed' or status == 'failed' then return 2 end
redis.call('HSET', KEYS[1], unpack(ARGV))
return 1`,
  'video-update',
);

/** KEYS: index, deleted. ARGV: id, keep. Moves a job's place from the list to the deleted ones. */
const unlist = new LuaScript(
  `local place = redis.call('ZSCORE', KEYS[1], ARGV[1])
if not place then return 0 end
redis.call('ZREM', KEYS[1], ARGV[1])
redis.call('ZADD', KEYS[2], place, ARGV[1])
redis.call('ZREMRANGEBYRANK', KEYS[2], 0, -1 - tonumber(ARGV[2]))
return 1`,
  'video-unlist',
);

/** How many deleted jobs' places are kept, so a list can go on after one of them. */
const DELETED_KEPT = 1000;

export type UpdateResult = 'written' | 'gone' | 'finished';

/** How far ahead of its charge a job is filed for polling (see create). */
const FILED_AHEAD_MS = 5_000;

export const member = (accountId: string, videoId: string) => `${accountId} ${videoId}`;

export class VideoJobs {
  constructor(private readonly redis: Redis) {}

  /**
   * Charges `seconds × price` through `charge` and records the job at once, in the same script;
   * false when the balance, or the key's monthly spend limit (then `keyLimit` says where the key
   * stands), cannot cover it (no job). The job is filed for polling first, so no job exists that
   * no poller can find.
   */
  async create(
    j: {
      accountId: string;
      keyId: string;
      requestId: string;
      id: string;
      model: string;
      price: VideoPrice;
      seconds: number;
      size: string;
      prompt: string;
      inputRef: string;
      /** The account's currency (what `cost` is in), kept so a refund is counted in it. */
      currency: string;
    },
    charge: (c: VideoCharge) => Promise<Pick<ChargeResult, 'ok' | 'keyLimit'>>,
  ): Promise<{ ok: boolean; job: JobRecord; keyLimit: KeySpend | null }> {
    const cost = videoCost(j.price, j.seconds);
    const m = member(j.accountId, j.id);
    // Filed a little ahead: a poller that found no job yet would take it for a refused one and
    // drop it. Once the job is recorded it is made due at once.
    await this.redis.zadd(globalKeys.videosActive, Date.now() + FILED_AHEAD_MS, m);
    const job: JobRecord = {
      id: j.id,
      model: j.model,
      status: 'queued',
      progress: '0',
      created_at: String(Math.floor(Date.now() / 1000)),
      seconds: String(j.seconds),
      size: j.size,
      prompt: j.prompt,
      key_id: j.keyId,
      request_id: j.requestId,
      charge_id: j.id,
      cost: String(cost),
      currency: j.currency,
      input_ref: j.inputRef,
    };
    const k = accountKeys(j.accountId);
    const r = await charge({
      accountId: j.accountId,
      chargeId: j.id,
      cost,
      usage: {
        keyId: j.keyId,
        model: j.model,
        kind: 'video',
        videoSeconds: j.seconds,
        requestId: j.requestId,
      },
      record: { key: k.video(j.id), index: k.videos, id: j.id, fields: job, sequence: k.videoSeq },
    });
    if (r.ok) await this.redis.zadd(globalKeys.videosActive, 'XX', Date.now(), m);
    else await this.redis.zrem(globalKeys.videosActive, m);
    return { ok: r.ok, job, keyLimit: r.keyLimit };
  }

  async get(accountId: string, id: string): Promise<JobRecord | null> {
    const job = await this.redis.hgetall(accountKeys(accountId).video(id));
    return job.id === undefined ? null : job;
  }

  /**
   * The account's jobs in creation order, a page after `after` (a job id; a deleted job's place is
   * remembered, so a list goes on past a job deleted meanwhile). null: `after` names no job of the
   * account's.
   */
  async list(
    accountId: string,
    o: { after?: string | undefined; limit: number; order: 'asc' | 'desc' },
  ): Promise<{ jobs: JobRecord[]; hasMore: boolean } | null> {
    const k = accountKeys(accountId);
    const take = o.limit + 1; // one more than asked: is there a next page?
    let ids: string[];
    if (o.after === undefined) {
      ids =
        o.order === 'desc'
          ? await this.redis.zrevrange(k.videos, 0, take - 1)
          : await this.redis.zrange(k.videos, 0, take - 1);
    } else {
      const place =
        (await this.redis.zscore(k.videos, o.after)) ?? (await this.redis.zscore(k.videosDeleted, o.after));
      if (place === null) return null;
      // Places are unique (charge.lua): past `after` by place is past it in the list.
      ids =
        o.order === 'desc'
          ? await this.redis.zrevrangebyscore(k.videos, `(${place}`, '-inf', 'LIMIT', 0, take)
          : await this.redis.zrangebyscore(k.videos, `(${place}`, '+inf', 'LIMIT', 0, take);
    }
    const page = ids.slice(0, o.limit);
    const pipe = this.redis.pipeline();
    for (const id of page) pipe.hgetall(k.video(id));
    const rows = ((await pipe.exec()) ?? []).map(([, v]) => v as JobRecord).filter((j) => j.id !== undefined);
    return { jobs: rows, hasMore: ids.length > o.limit };
  }

  /** Writes fields of a job that exists and is not finished (see UpdateResult). */
  async update(
    accountId: string,
    id: string,
    fields: Record<string, string | number>,
  ): Promise<UpdateResult> {
    const args = Object.entries(fields).flatMap(([f, v]) => [f, String(v)]);
    const r = await update.run(this.redis, [accountKeys(accountId).video(id)], args);
    return r === 1 ? 'written' : r === 2 ? 'finished' : 'gone';
  }

  async delete(accountId: string, id: string): Promise<void> {
    const k = accountKeys(accountId);
    await unlist.run(this.redis, [k.videos, k.videosDeleted], [id, DELETED_KEPT]);
    await this.redis.del(k.video(id));
    const m = member(accountId, id);
    await this.redis.multi().zrem(globalKeys.videosActive, m).hdel(globalKeys.videoClaims, m).exec();
  }

  /** Claims up to `limit` due jobs for `token` for `claimMs`. */
  async claim(token: string, claimMs: number, limit: number): Promise<{ accountId: string; id: string }[]> {
    const due = (await claim.run(
      this.redis,
      [globalKeys.videosActive, globalKeys.videoClaims],
      [claimMs, token, limit],
    )) as string[];
    return due.map((m) => {
      const [accountId = '', id = ''] = m.split(' ');
      return { accountId, id };
    });
  }

  /** Keeps a claim while its holder works on the job; false when it is no longer ours. */
  async renew(accountId: string, id: string, token: string, claimMs: number): Promise<boolean> {
    const r = await renew.run(
      this.redis,
      [globalKeys.videosActive, globalKeys.videoClaims],
      [member(accountId, id), token, claimMs],
    );
    return r === 1;
  }

  /** Gives a claim back: the job comes due again after `delayMs`, or (-1) leaves the queue. */
  async unclaim(accountId: string, id: string, token: string, delayMs: number): Promise<boolean> {
    const r = await unclaim.run(
      this.redis,
      [globalKeys.videosActive, globalKeys.videoClaims],
      [member(accountId, id), token, delayMs],
    );
    return r === 1;
  }

  /**
   * Fails a job and gives its charge back, in one script (the refund's id is the job's): false
   * when the job had already finished (completed, or failed and refunded) or was deleted — a
   * second failure report, or a replica that lost its claim, changes and refunds nothing.
   */
  async fail(
    accountId: string,
    job: JobRecord,
    error: { code: string; message: string },
    refund: (r: VideoRefund) => Promise<{ finished: boolean }>,
  ): Promise<boolean> {
    const r = await refund({
      accountId,
      refundId: `video:${job.id}`,
      of: `charge:${job.charge_id}`,
      amount: Number(job.cost),
      usage: {
        keyId: job.key_id ?? '',
        model: job.model ?? '',
        kind: 'video',
        videoSeconds: Number(job.seconds),
        requestId: job.request_id ?? '',
      },
      record: {
        key: accountKeys(accountId).video(job.id!),
        fields: { status: 'failed', error_code: error.code, error_message: error.message },
      },
    });
    return !r.finished;
  }

  /** Unfinished jobs fleet-wide, and the age of the oldest (for /metrics). */
  async queue(): Promise<{ depth: number; oldestAgeS: number }> {
    const depth = await this.redis.zcard(globalKeys.videosActive);
    if (depth === 0) return { depth, oldestAgeS: 0 };
    // Members are not ordered by age (due times move); the oldest of a bounded sample is close enough.
    const sample = await this.redis.zrange(globalKeys.videosActive, 0, 99);
    const answers = await perItem(this.redis, sample, (p, m) => {
      const [a = '', id = ''] = m.split(' ');
      return p.hget(accountKeys(a).video(id), 'created_at');
    });
    const created = answers.map(([, v]) => Number(v)).filter((v) => v > 0);
    const oldest = created.length > 0 ? Math.min(...created) : Date.now() / 1000;
    return { depth, oldestAgeS: Math.max(0, Date.now() / 1000 - oldest) };
  }
}
