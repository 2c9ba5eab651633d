// The journal in PostgreSQL (DATABASE_URL): the durable record of every top-up, charge, refund and
// void, kept forever. Top-ups are committed here before Redis credits them (commitTopUp); the
// archiver copies the rest from the accounts' Redis usage streams (archive). Both insert by the
// transfer's id (its cause), so doing either twice changes nothing. Nothing on the request path
// waits on this: the proxy never opens it.
import type pg from 'pg';
import type { UsageCounts, UsageEntry } from '../usage/usage.ts';
import { migrate } from './migrate.ts';
import { boundedPool, endPool, JOURNAL_DB_TIMEOUT_MS, MIGRATION_TIMEOUT_MS } from './pool.ts';
import {
  COLUMNS,
  insertCalls,
  insertTopUps,
  lockTopUps,
  monthOf,
  PARTITION_LOCK,
  type Row,
  rowOf,
} from './writes.ts';

/**
 * A transfer as the queries return it: the usage entry it was archived from (the call's usage, its
 * cost and what was charged), named by its account and transfer id.
 */
export interface JournalRecord extends Omit<UsageEntry, 'id' | 'type' | 'opId' | 'balance' | 'kind'> {
  accountId: string;
  /** The transfer id: the stream entry's op id. */
  id: string;
  kind: UsageEntry['type'];
  /** The Redis stream entry it was archived from; null for a top-up not yet seen in Redis. */
  streamId: string | null;
  /** The balance right after it in Redis; null for a top-up not yet seen there. */
  balanceAfter: number | null;
  /** The call's kind (chat, embedding, …): the entry's `kind`. */
  callKind: string | null;
}

const SELECT = `select account_id, id, kind, stream_ms, stream_seq, at_ms, amount, cost, short, held, source,
  reason, lease_id, refund_of, balance_after, key_id, model, call_kind, input_tokens, cached_tokens,
  output_tokens, images, video_ms, request_id, note from transfers`;

/**
 * The months a time range [$3, $4) spans, spelled out beside it so PostgreSQL reads only those
 * months' partitions (it cannot tell from at_ms alone).
 */
export const MONTHS_3_4 = `and ($3::bigint is null or month >= journal_month($3::bigint))
  and ($4::bigint is null or month <= journal_month($4::bigint))`;

const n = (v: string | null): number | null => (v === null ? null : Number(v));

function recordOf(r: Record<string, string | null>): JournalRecord {
  return {
    accountId: r.account_id!,
    id: r.id!,
    kind: r.kind as JournalRecord['kind'],
    streamId: r.stream_ms === null ? null : `${r.stream_ms}-${r.stream_seq}`,
    atMs: Number(r.at_ms),
    amount: Number(r.amount),
    cost: n(r.cost!),
    short: Number(r.short),
    held: n(r.held!),
    source: r.source ?? null,
    reason: r.reason ?? null,
    leaseId: r.lease_id ?? null,
    refundOf: r.refund_of ?? null,
    balanceAfter: n(r.balance_after!),
    keyId: r.key_id ?? null,
    model: r.model ?? null,
    callKind: r.call_kind ?? null,
    inputTokens: n(r.input_tokens!),
    cachedTokens: n(r.cached_tokens!),
    outputTokens: n(r.output_tokens!),
    images: n(r.images!),
    videoSeconds: r.video_ms === null || r.video_ms === undefined ? null : Number(r.video_ms) / 1000,
    requestId: r.request_id ?? null,
    note: r.note ?? null,
  };
}

export class Journal {
  private constructor(
    readonly pool: pg.Pool,
    readonly timeoutMs: number,
  ) {}

  /** Connects and applies the migrations this release has and the database lacks. */
  static async open(url: string, opts: { max?: number; timeoutMs?: number } = {}): Promise<Journal> {
    const timeoutMs = opts.timeoutMs ?? JOURNAL_DB_TIMEOUT_MS;
    const migrations = boundedPool(url, 1, timeoutMs, MIGRATION_TIMEOUT_MS);
    const pool = boundedPool(url, opts.max ?? 4, timeoutMs);
    try {
      await migrate(migrations);
      await new Journal(pool, timeoutMs).ensurePartitions();
    } catch (err) {
      await pool.end().catch(() => {});
      throw err;
    } finally {
      await migrations.end().catch(() => {});
    }
    return new Journal(pool, timeoutMs);
  }

  /** Closes the pool, waiting at most `waitMs` for a query still hung on the database (pool.ts). */
  async close(waitMs = this.timeoutMs): Promise<void> {
    await endPool(this.pool, waitMs);
  }

  /**
   * A top-up, committed before Redis is asked to credit it (under the same id). Returns whether it
   * was already committed. The same id with another amount or account is refused: ids name one cause.
   */
  async commitTopUp(t: {
    accountId: string;
    topUpId: string;
    amount: number;
    note?: string;
    atMs?: number;
  }): Promise<{ duplicate: boolean }> {
    const id = `topup:${t.topUpId}`;
    const atMs = t.atMs ?? Date.now();
    const row: Row = Object.fromEntries(COLUMNS.map(([name]) => [name, null]));
    Object.assign(row, {
      account_id: t.accountId,
      id,
      kind: 'topup',
      at_ms: atMs,
      month: monthOf(atMs),
      amount: t.amount,
      short: 0,
      note: t.note ?? null,
    });
    const prev = await this.transaction(async (c) => {
      await lockTopUps(c, [row]);
      const had = await c.query<{ amount: string }>(
        'select amount from transfers where account_id = $1 and id = $2',
        [t.accountId, id],
      );
      if (had.rows.length > 0) return had.rows[0]!.amount;
      await insertTopUps(c, [row]);
      return null;
    });
    if (prev === null) return { duplicate: false };
    if (Number(prev) !== t.amount)
      throw new Error(`top-up ${t.topUpId} is already committed with another amount (${prev})`);
    return { duplicate: true };
  }

  /**
   * Stream entries of one or more accounts into the journal, in one transaction: each transfer once
   * (a second copy is ignored; a top-up committed first gets its stream id). Returns how many were new.
   */
  async archive(batch: readonly { accountId: string; entry: UsageEntry }[]): Promise<number> {
    if (batch.length === 0) return 0;
    // One statement cannot touch a row twice: a transfer seen twice in a batch goes in once.
    const rows = new Map<string, Row>();
    const topUps: Row[] = [];
    for (const b of batch) {
      const key = `${b.accountId}\u0000${b.entry.opId}`;
      if (rows.has(key)) continue;
      const row = rowOf(b.accountId, b.entry);
      rows.set(key, row);
      if (b.entry.type === 'topup') topUps.push(row);
    }
    const others =
      topUps.length === 0 ? [...rows.values()] : [...rows.values()].filter((x) => x.kind !== 'topup');
    // The common batch, calls only: one statement, its own transaction.
    if (topUps.length === 0) return insertCalls(this.pool, others);
    return this.transaction(async (c) => {
      await lockTopUps(c, topUps);
      // A top-up committed here first (in whatever month) now seen in Redis: it gets its stream id.
      // One statement each, by its key in every month: top-ups are few.
      for (const x of topUps)
        await c.query(
          `update transfers set stream_ms = $3, stream_seq = $4, balance_after = $5
           where account_id = $1 and id = $2 and stream_ms is null`,
          [x.account_id, x.id, x.stream_ms, x.stream_seq, x.balance_after],
        );
      return (await insertTopUps(c, topUps)) + (others.length > 0 ? await insertCalls(c, others) : 0);
    });
  }

  /** Creates the partitions of this month and the next `ahead` (see the 002 migration), each once. */
  async ensurePartitions(nowMs = Date.now(), ahead = 2): Promise<string[]> {
    const r = await this.pool.query<{ m: number; name: string; exists: boolean }>(
      `select m, journal_partition_name(m) as name, to_regclass(journal_partition_name(m)) is not null as exists
       from generate_series(journal_month($1::bigint), journal_month($1::bigint) + $2) m`,
      [nowMs, ahead],
    );
    const made: string[] = [];
    for (const p of r.rows) {
      if (p.exists) continue;
      const created = await this.transaction(async (c) => {
        // One creator at a time (every part opens the journal; the keeper's leader runs this too).
        await c.query('select pg_advisory_xact_lock($1)', [PARTITION_LOCK]);
        // Made meanwhile by whoever held the lock? Read from pg_class with this statement's
        // snapshot: to_regclass reads a cache that an advisory lock does not refresh.
        const made = await c.query(
          'select 1 from pg_class where relname = $1 and relnamespace = current_schema()::regnamespace',
          [p.name],
        );
        if (made.rows.length > 0) return false;
        // Rows of this month that came before its partition sat in the default one: moved into it,
        // in the same transaction, so readers see each row once.
        await c.query(`create table ${p.name} (like transfers including defaults including constraints)`);
        await c.query(
          `with moved as (delete from transfers_default where month = $1 returning *)
           insert into ${p.name} select * from moved`,
          [p.m],
        );
        await c.query(
          `alter table transfers attach partition ${p.name} for values from (${p.m}) to (${p.m + 1})`,
        );
        return true;
      });
      if (created) made.push(p.name);
    }
    return made;
  }

  private async transaction<T>(f: (c: pg.PoolClient) => Promise<T>): Promise<T> {
    const c = await this.pool.connect();
    let broken: Error | undefined;
    try {
      await c.query('begin');
      const out = await f(c);
      await c.query('commit');
      return out;
    } catch (err) {
      // A query that timed out leaves the connection in an unknown state (the server may still
      // answer it): it is thrown away, which ends the transaction on the server too, instead of
      // waiting a second time for a rollback on a database that does not answer.
      if ((err as Error).message === 'Query read timeout') broken = err as Error;
      else await c.query('rollback').catch((e: Error) => (broken = e));
      throw err;
    } finally {
      c.release(broken);
    }
  }

  /** customer_credit of the account: what Redis's balance must be once every entry is archived. */
  async creditBalance(accountId: string): Promise<bigint> {
    const r = await this.pool.query<{ b: string }>(
      `select coalesce(sum(case when credit = 'customer_credit' then amount else 0 end), 0)
            - coalesce(sum(case when debit = 'customer_credit' then amount else 0 end), 0) as b
       from postings where account_id = $1`,
      [accountId],
    );
    return BigInt(r.rows[0]!.b);
  }

  /** Which of these transfer ids the journal holds for the account. */
  async present(accountId: string, ids: readonly string[]): Promise<Set<string>> {
    if (ids.length === 0) return new Set();
    const r = await this.pool.query<{ id: string }>(
      'select id from transfers where account_id = $1 and id = any($2::text[])',
      [accountId, ids],
    );
    return new Set(r.rows.map((x) => x.id));
  }

  async records(accountId: string, ids: readonly string[]): Promise<JournalRecord[]> {
    if (ids.length === 0) return [];
    const r = await this.pool.query(`${SELECT} where account_id = $1 and id = any($2::text[])`, [
      accountId,
      ids,
    ]);
    return r.rows.map(recordOf);
  }

  /** Top-ups committed here and never seen in Redis's stream, oldest first (the reconciler's work). */
  async unseenTopUps(
    opts: { accountId?: string; committedWithinMs?: number } = {},
  ): Promise<JournalRecord[]> {
    const r = await this.pool.query(
      `${SELECT} where kind = 'topup' and stream_ms is null
         and ($1::text is null or account_id = $1)
         and ($2::bigint is null or committed_at > now() - make_interval(secs => $2::bigint / 1000.0))
       order by committed_at`,
      [opts.accountId ?? null, opts.committedWithinMs ?? null],
    );
    return r.rows.map(recordOf);
  }

  /** Archived entries whose stream id is after `afterId`: Redis had them, a stream ending before them lost them. */
  async archivedAfter(accountId: string, afterId: string): Promise<JournalRecord[]> {
    const [ms, seq] = afterId.split('-').map(Number);
    const r = await this.pool.query(
      `${SELECT} where account_id = $1 and stream_ms is not null and (stream_ms, stream_seq) > ($2, $3)
       order by stream_ms, stream_seq`,
      [accountId, ms, seq],
    );
    return r.rows.map(recordOf);
  }

  /** Charges − refunds per `<keyId>:<period>` (UTC month, day, ISO week) of the archived entries, as the keys' spend counts them. */
  async keyMonths(accountId: string): Promise<Map<string, number>> {
    // Each key's spend per UTC month, day and ISO week (named by its Monday), as key-spend.ts
    // spendPeriods names the periods the scripts count in.
    const r = await this.pool.query<{ k: string; s: string }>(
      `with t as (
         select key_id, to_timestamp(at_ms / 1000.0) at time zone 'UTC' as at,
                case when kind = 'charge' then amount else -amount end as v
         from transfers where account_id = $1 and key_id is not null and kind in ('charge', 'refund')
           and stream_ms is not null)
       select key_id || ':' || to_char(at, 'YYYYMM') as k, sum(v) as s from t group by 1
       union all
       select key_id || ':' || to_char(at, 'YYYYMMDD'), sum(v) from t group by 1
       union all
       select key_id || ':w' || to_char(date_trunc('week', at), 'YYYYMMDD'), sum(v) from t group by 1`,
      [accountId],
    );
    return new Map(r.rows.map((x) => [x.k, Number(x.s)]));
  }

  /** One call's transfers: its charge, a void of its hold, refunds of its charge (any account, or one). */
  async ofRequest(requestId: string, accountId?: string): Promise<JournalRecord[]> {
    const r = await this.pool.query(
      `with c as (
         select account_id, id from transfers
         where (request_id = $1 or id in ('settle:' || $1, 'void:' || $1)) and ($2::text is null or account_id = $2))
       ${SELECT} t where exists (select 1 from c where c.account_id = t.account_id
         and (c.id = t.id or t.refund_of = c.id))
       order by at_ms, stream_ms nulls last, stream_seq`,
      [requestId, accountId ?? null],
    );
    return r.rows.map(recordOf);
  }

  /** Per UTC day × key × model: calls, tokens, images, video seconds, cost charged and refunded. */
  async daily(
    accountId: string,
    q: { keyId?: string; fromMs?: number; toMs?: number } = {},
  ): Promise<DailyUsage[]> {
    const r = await this.pool.query<Record<string, string | null>>(
      `select to_char(to_timestamp(at_ms / 1000.0) at time zone 'UTC', 'YYYY-MM-DD') as day, key_id, model,
              count(*) filter (where kind = 'charge') as requests,
              coalesce(sum(input_tokens) filter (where kind = 'charge'), 0) as input_tokens,
              coalesce(sum(cached_tokens) filter (where kind = 'charge'), 0) as cached_tokens,
              coalesce(sum(output_tokens) filter (where kind = 'charge'), 0) as output_tokens,
              coalesce(sum(images) filter (where kind = 'charge'), 0) as images,
              coalesce(sum(video_ms) filter (where kind = 'charge'), 0) as video_ms,
              coalesce(sum(amount) filter (where kind = 'charge'), 0) as charged,
              coalesce(sum(amount) filter (where kind = 'refund'), 0) as refunded
       from transfers where account_id = $1 and kind in ('charge', 'refund')
         and ($2::text is null or key_id = $2) and ($3::bigint is null or at_ms >= $3)
         and ($4::bigint is null or at_ms < $4) ${MONTHS_3_4}
       group by 1, 2, 3 order by 1, 2 nulls first, 3`,
      [accountId, q.keyId ?? null, q.fromMs ?? null, q.toMs ?? null],
    );
    return r.rows.map((x) => ({
      day: x.day!,
      keyId: x.key_id ?? null,
      model: x.model ?? '',
      requests: Number(x.requests),
      inputTokens: Number(x.input_tokens),
      cachedTokens: Number(x.cached_tokens),
      outputTokens: Number(x.output_tokens),
      images: Number(x.images),
      videoSeconds: Number(x.video_ms) / 1000,
      charged: Number(x.charged),
      refunded: Number(x.refunded),
    }));
  }

  /**
   * Each book's debits and credits over the journal (or one account): by construction the totals
   * are equal, and the tests say so.
   */
  async bookTotals(
    accountId?: string,
  ): Promise<{ debits: bigint; credits: bigint; books: Record<string, bigint> }> {
    const r = await this.pool.query<{ book: string; debits: string; credits: string }>(
      `select book, sum(d) as debits, sum(c) as credits from (
         select debit as book, amount as d, 0 as c from postings where $1::text is null or account_id = $1
         union all
         select credit, 0, amount from postings where $1::text is null or account_id = $1) x
       group by book`,
      [accountId ?? null],
    );
    let debits = 0n;
    let credits = 0n;
    const books: Record<string, bigint> = {};
    for (const x of r.rows) {
      debits += BigInt(x.debits);
      credits += BigInt(x.credits);
      books[x.book] = BigInt(x.credits) - BigInt(x.debits);
    }
    return { debits, credits, books };
  }
}

/** One UTC day × key × model of the journal: the rollups' counts, and the money in nano-units. */
export interface DailyUsage extends UsageCounts {
  /** YYYY-MM-DD */
  day: string;
  keyId: string | null;
  model: string;
  charged: number;
  refunded: number;
}
