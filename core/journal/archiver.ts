// The archiver: moves every account's usage stream into the journal and keeps the streams short.
// Per stream, a consumer group (`archiver`, one consumer of a fixed name, so whichever replica
// leads next re-reads what the last one was given and did not acknowledge): read, insert by the
// transfer id in one PostgreSQL transaction, acknowledge only after the commit, then trim the
// stream to the entries after the last acknowledged one. A crash between commit and acknowledge
// re-reads entries the journal already has, and their inserts change nothing: exactly once.

import { type Redis, serverOf } from '../redis/client.ts';
import { accountKeys, globalKeys } from '../redis/keyspace.ts';
import { parseEntry, type UsageEntry } from '../usage/usage.ts';
import type { Journal } from './journal.ts';

export const ARCHIVER_GROUP = 'archiver';
const CONSUMER = 'archiver';

export interface ArchiverOptions {
  /** Entries read per stream per pass. */
  batch?: number;
  /** Accounts whose streams are read in one round trip and committed in one transaction. */
  accountsPerRound?: number;
  /** Test hook: runs after the journal commit and before the acknowledge (a crash there). */
  afterCommit?: () => Promise<void>;
}

export interface ArchivePass {
  /** Entries read from Redis (re-read ones included). */
  read: number;
  /** Transfers new to the journal. */
  archived: number;
  /**
   * Stream time (ms) of the oldest entry this pass left unread (a stream had more than a batch), or
   * null when every stream was read to its end.
   */
  behindSinceMs: number | null;
}

export class Archiver {
  private readonly batch: number;
  private readonly accountsPerRound: number;
  /** The oldest entry (stream ms) of each round under way: read from Redis, not yet archived. */
  private readonly underWay = new Set<{ oldestMs: number }>();
  /** The oldest entry a failed round read (pending in Redis: read again first), until a pass succeeds. */
  private failedOldestMs: number | null = null;

  constructor(
    private readonly redis: Redis,
    private readonly journal: Journal,
    private readonly opts: ArchiverOptions = {},
  ) {
    this.batch = opts.batch ?? 1000;
    this.accountsPerRound = opts.accountsPerRound ?? 200;
  }

  /**
   * One pass over every account's stream. Two rounds (of different accounts) run at once, so one's
   * Redis reads overlap the other's PostgreSQL commit.
   */
  async pass(): Promise<ArchivePass> {
    const out: ArchivePass = { read: 0, archived: 0, behindSinceMs: null };
    const add = (r: ArchivePass) => {
      out.read += r.read;
      out.archived += r.archived;
      if (r.behindSinceMs !== null)
        out.behindSinceMs = Math.min(out.behindSinceMs ?? Number.POSITIVE_INFINITY, r.behindSinceMs);
    };
    let running: Promise<void> | null = null;
    // A failed round is kept, not left rejected while the next one runs (an unhandled rejection).
    let failure: { err: unknown } | null = null;
    let cursor = '0';
    do {
      const [next, ids] = await this.redis.sscan(globalKeys.accounts, cursor, 'COUNT', this.accountsPerRound);
      cursor = next;
      if (ids.length === 0) continue;
      const round = this.round(ids).then(add, (err: unknown) => {
        failure ??= { err };
      });
      if (running) await running;
      running = round;
    } while (cursor !== '0' && failure === null);
    if (running) await running;
    if (failure !== null) throw (failure as { err: unknown }).err;
    // Every stream's pending entries were read first and archived: none a failed round left remains.
    this.failedOldestMs = null;
    return out;
  }

  /**
   * Stream time (ms) of the oldest entry read and not archived yet — by a round under way (the
   * database has not answered it) or one that failed — or null. What the lag is measured from
   * while the database hangs or fails, when no pass finishes to say how far behind it is.
   */
  oldestUnarchivedMs(): number | null {
    let oldest = this.failedOldestMs;
    for (const r of this.underWay) oldest = Math.min(oldest ?? r.oldestMs, r.oldestMs);
    return oldest;
  }

  /**
   * Another replica leads now: the entries a failed round read are its to archive (pending in
   * Redis, read first by whoever leads), and no longer this one's lag.
   */
  forgetFailed(): void {
    this.failedOldestMs = null;
  }

  /** Passes until one reads nothing (every stream archived to its end); returns the entries read. */
  async drain(): Promise<number> {
    let n = 0;
    for (;;) {
      const p = await this.pass();
      n += p.read;
      if (p.read === 0) return n;
    }
  }

  /** Reads, archives, acknowledges and trims the streams of these accounts. */
  async round(accountIds: readonly string[]): Promise<ArchivePass> {
    const streams = accountIds.map((id) => accountKeys(id).usage);
    // What an earlier leader was given and did not acknowledge comes first ('0'), then new entries.
    let pending = await this.readGroup(streams, '0');
    const missing = streams.filter((_, i) => pending[i] === null);
    if (missing.length > 0) {
      await this.createGroups(missing);
      pending = await this.readGroup(streams, '0');
    }
    // A stream with a whole batch still pending gets no new entries this round, so everything it
    // acknowledges below is all it was given, and the trim never passes an unarchived entry.
    const fresh = await this.readGroup(
      streams.filter((_, i) => (pending[i]?.length ?? 0) < this.batch),
      '>',
    );
    const got: { accountId: string; stream: string; entries: [string, string[]][] }[] = [];
    let f = 0;
    streams.forEach((stream, i) => {
      const entries = [...(pending[i] ?? [])];
      if ((pending[i]?.length ?? 0) < this.batch) entries.push(...(fresh[f++] ?? []));
      if (entries.length > 0) got.push({ accountId: accountIds[i]!, stream, entries });
    });
    const out: ArchivePass = { read: 0, archived: 0, behindSinceMs: null };
    if (got.length === 0) return out;

    const batch: { accountId: string; entry: UsageEntry }[] = [];
    for (const g of got)
      for (const [id, fields] of g.entries)
        batch.push({ accountId: g.accountId, entry: parseEntry(id, fields) });
    out.read = batch.length;
    const mine = { oldestMs: Number.POSITIVE_INFINITY };
    for (const b of batch) mine.oldestMs = Math.min(mine.oldestMs, Number(b.entry.id.split('-')[0]));
    this.underWay.add(mine);
    try {
      out.archived = await this.journal.archive(batch);
      await this.opts.afterCommit?.();
      await this.acknowledge(got, out);
    } catch (err) {
      this.failedOldestMs = Math.min(this.failedOldestMs ?? mine.oldestMs, mine.oldestMs);
      throw err;
    } finally {
      this.underWay.delete(mine);
    }
    return out;
  }

  /** After the commit: acknowledges and trims what was archived; notes a stream left behind. */
  private async acknowledge(
    got: readonly { stream: string; entries: [string, string[]][] }[],
    out: ArchivePass,
  ): Promise<void> {
    // Commands per stream, not one pipeline: on Redis Cluster the accounts' streams live in
    // different slots. Sent together, they still leave in one go on each connection.
    const sent: Promise<unknown>[] = [];
    for (const g of got) {
      const ids = g.entries.map(([id]) => id);
      sent.push(this.redis.xack(g.stream, ARCHIVER_GROUP, ...ids));
      // Everything up to the last acknowledged entry is in the journal: keep only what follows it.
      const [ms, seq] = ids[ids.length - 1]!.split('-');
      sent.push(this.redis.xtrim(g.stream, 'MINID', `${ms}-${Number(seq) + 1}`));
      if (g.entries.length >= this.batch) {
        const at = Number(ms);
        out.behindSinceMs = Math.min(out.behindSinceMs ?? at, at);
      }
    }
    await Promise.all(sent);
  }

  /** XREADGROUP per stream, sent together; null for a stream that has no group yet. */
  private async readGroup(
    streams: readonly string[],
    from: '0' | '>',
  ): Promise<([string, string[]][] | null)[]> {
    if (streams.length === 0) return [];
    const res = await Promise.allSettled(
      streams.map((s) =>
        this.redis.xreadgroup('GROUP', ARCHIVER_GROUP, CONSUMER, 'COUNT', this.batch, 'STREAMS', s, from),
      ),
    );
    return res.map((r) => {
      if (r.status === 'rejected') {
        if (/NOGROUP/.test(String((r.reason as Error)?.message))) return null;
        throw r.reason;
      }
      const v = r.value as [string, [string, string[]][]][] | null;
      return v?.[0]?.[1] ?? [];
    });
  }

  /**
   * A group from the stream's start: every entry, old ones included, goes to the journal. Sent to
   * the stream's own node: the client finds no key in XGROUP CREATE (issue 38: MOVED on a cluster).
   */
  private async createGroups(streams: readonly string[]): Promise<void> {
    const res = await Promise.allSettled(
      streams.map(async (s) =>
        (await serverOf(this.redis, s)).xgroup('CREATE', s, ARCHIVER_GROUP, '0', 'MKSTREAM'),
      ),
    );
    for (const r of res)
      if (r.status === 'rejected' && !/BUSYGROUP/.test(String((r.reason as Error)?.message))) throw r.reason;
  }
}
