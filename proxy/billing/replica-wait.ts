// REDIS_WAIT_REPLICAS: a settlement counts (leaves the journal) once WAIT says that many replicas
// of the primary that took it have it, so a failover cannot lose it. WAIT has no key: on a
// cluster it goes to the account's primary, on the outbox's connection to it (the one the
// settlement was sent on: WAIT covers what that connection wrote).
//
// A primary with fewer replicas than that — the one a failover just promoted, its old primary not
// back yet — can never satisfy WAIT. Refusing its settlements would stop billing for as long as
// a person takes to bring a node back (issue 38: the whole process, for minutes). So that shard
// is *without replicas*, a named degraded state (proxy/faults/: readiness detail, gauge, alert),
// and billing goes on for it: the settlement was applied by the primary (the caller gets Redis's
// answer at once) and stays in this replica's journal, on disk, unacknowledged. Nothing is lost
// that WAIT would have kept: no replica exists for a failover to promote, a restart of that primary
// reads its AOF, and whatever it lacks after is resent from the journal under its idempotency key
// at the next start (and Redis answers the ones it has as duplicates). Once a replica is attached
// again, one WAIT on that connection covers every write before it, and the shard's held
// settlements leave the journal together.

import { type Redis, serverOf } from '../../core/redis/client.ts';
import { accountKeys } from '../../core/redis/keyspace.ts';

type Server = Awaited<ReturnType<typeof serverOf>>;

interface ShortShard {
  server: Server;
  since: number;
  /** Journal acknowledgements held until a replica has the settlements. */
  held: (() => void)[];
  timer: NodeJS.Timeout;
}

export interface ReplicaWaitOptions {
  redis: Redis;
  /** REDIS_WAIT_REPLICAS. */
  want: number;
  /** REDIS_WAIT_TIMEOUT_MS. */
  timeoutMs: number;
  /** How often a shard without replicas is asked whether one is back. */
  checkEveryMs?: number;
  onShort?: (shard: string) => void;
  onRestored?: (shard: string, settlements: number, afterMs: number) => void;
}

export class ReplicaWait {
  private readonly short = new Map<string, ShortShard>();
  /** Per primary: the WAIT on the wire, and the one the settlements that came after it share. */
  private readonly waits = new Map<string, { sent: Promise<number> | null; next: Promise<number> | null }>();

  constructor(private readonly o: ReplicaWaitOptions) {}

  /**
   * After `accountId`'s primary applied a settlement: runs `acked` once enough replicas have it —
   * now, or (its shard without replicas) later. Throws when replicas exist and lag: the settlement
   * is sent again (idempotent) and WAITed for again.
   */
  async settled(accountId: string, acked: () => void): Promise<void> {
    if (this.o.want <= 0) return acked();
    const server = await serverOf(this.o.redis, accountKeys(accountId).account);
    const name = nameOf(server);
    const short = this.short.get(name);
    if (short !== undefined) {
      short.held.push(acked);
      return;
    }
    const got = await this.waitOn(name, server);
    if (got >= this.o.want) return acked();
    if (this.short.has(name)) {
      this.short.get(name)!.held.push(acked);
      return;
    }
    if ((await attachedReplicas(server)) >= this.o.want)
      throw new Error(`WAIT: ${got} of ${this.o.want} replicas acknowledged the settlement`);
    this.shortOf(name, server).held.push(acked);
  }

  /** The shards (primaries, `host:port`) with fewer replicas than REDIS_WAIT_REPLICAS, and since when. */
  shortShards(): { shard: string; since: number; held: number }[] {
    return [...this.short].map(([shard, s]) => ({ shard, since: s.since, held: s.held.length }));
  }

  stop(): void {
    for (const s of this.short.values()) clearTimeout(s.timer);
  }

  /**
   * WAIT blocks the connection it is sent on until it is met or times out, and covers every write
   * sent on it before. So one WAIT at a time per primary, shared: a settlement that arrives while
   * one is out waits for the next, which covers it and every other that arrived meanwhile. Without
   * this, each settlement's own WAIT queued behind the others' on a primary with no replica — a
   * second each, one after another — and the shard stalled for as long as there were settlements.
   */
  private waitOn(name: string, server: Server): Promise<number> {
    const st = this.waits.get(name) ?? { sent: null, next: null };
    this.waits.set(name, st);
    const send = (): Promise<number> => {
      const p = (server.call('WAIT', this.o.want, this.o.timeoutMs) as Promise<number>).finally(() => {
        if (st.sent === p) st.sent = null;
      });
      st.sent = p;
      return p;
    };
    if (st.sent === null) return send();
    st.next ??= st.sent
      .catch(() => 0)
      .then(() => {
        st.next = null;
        // The WAIT before found the primary without replicas: no need to wait out another.
        return this.short.has(name) ? 0 : send();
      });
    return st.next;
  }

  private shortOf(name: string, server: Server): ShortShard {
    let s = this.short.get(name);
    if (s !== undefined) return s;
    s = { server, since: Date.now(), held: [], timer: this.check(name) };
    this.short.set(name, s);
    this.o.onShort?.(name);
    return s;
  }

  private check(name: string): NodeJS.Timeout {
    const t = setTimeout(async () => {
      const s = this.short.get(name);
      if (s === undefined) return;
      try {
        if (await this.backInShape(s.server)) {
          this.short.delete(name);
          for (const acked of s.held) acked();
          this.o.onRestored?.(name, s.held.length, Date.now() - s.since);
          return;
        }
      } catch {
        // The primary is out of reach (its shard failing over again): ask again later.
      }
      s.timer = this.check(name);
    }, this.o.checkEveryMs ?? 1_000);
    t.unref();
    return t;
  }

  /**
   * A replica is attached and WAIT (covering every write this connection made) is met — or the
   * node is no primary any more: it was demoted by a failover to a replica that had its writes.
   */
  private async backInShape(server: Server): Promise<boolean> {
    const info = await server.info('replication');
    if (/^role:slave/m.test(info)) return true;
    if (replicasIn(info) < this.o.want) return false;
    return ((await server.call('WAIT', this.o.want, this.o.timeoutMs)) as number) >= this.o.want;
  }
}

const nameOf = (server: Server) => `${server.options.host}:${server.options.port}`;

async function attachedReplicas(server: Server): Promise<number> {
  return replicasIn(await server.info('replication'));
}

/** `connected_slaves` of INFO replication: the replicas attached now (online or syncing). */
function replicasIn(info: string): number {
  return Number(/^connected_slaves:(\d+)/m.exec(info)?.[1] ?? 0);
}
