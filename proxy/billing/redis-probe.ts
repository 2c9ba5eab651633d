// Is Redis answering, and is it the Redis this replica knew? One read of the epoch
// (core/redis/epoch.ts: one GET on one Redis; on a cluster, every primary's epoch keys) at a time
// on the outbox's connection, every `intervalMs`.
// - Unanswered after `timeoutMs`, it counts as a failure but is left to finish: that tells a hung
//   Redis (stopped, or a partition that resets nothing) from a slow one, and ends the outage fast —
//   the GET sent while Redis was stopped is the first command it answers when it resumes, and
//   `onBack` (the outbox retrying at once instead of after its backoff) runs then, so calls are
//   served again within a round trip, not after the longest backoff (issue 22).
// - On a Redis Cluster, a failing probe with some primary still answering is one shard's outage (a
//   primary failing over), not Redis's: it is not counted as Redis unanswered, which refuses every
//   billable call — that shard's accounts get their own refusals (its errors, its settlements'
//   stall) and the others are served (issue 38). The probe reads every shard until all answer.
// - Answered with another epoch, or none: Redis lost its data (or is another server). `onMismatch`
//   runs on every probe while it lasts; `onBack` runs once the epoch is the known one again (a
//   Redis restored from its AOF/RDB).
import { isCluster, primaries, type Redis } from '../../core/redis/client.ts';
import { readEpoch, uncoveredPrimaries } from '../../core/redis/epoch.ts';

/** One probe in this many reads every cluster primary's epoch key (at 100 ms: once a second). */
const SHARD_ROUND = 10;

export interface RedisProbeOptions {
  redis: Redis;
  /** The epoch this replica knew at start. */
  epoch: string;
  /** Whether Redis had it at start (false: the mismatch is known from the first probe). */
  matchedAtStart: boolean;
  foundAtStart: string | null;
  intervalMs: number;
  timeoutMs: number;
  /** Redis answers again, with the known epoch, after failing or not matching. */
  onBack: () => void;
  /** Redis answered with another epoch (or none). */
  onMismatch: (found: string | null) => void;
  /**
   * The cluster primaries that hold no epoch key changed (core/redis/epoch.ts uncoveredPrimaries):
   * checked on the rounds that read every primary, so a reshard that leaves one uncovered is said.
   */
  onUncovered?: (primaries: string[]) => void;
}

export class RedisProbe {
  /** Since when probes fail or go unanswered (Date.now()), or null while Redis answers. */
  private failingSince: number | null = null;
  /** Since when Redis answers with another epoch, and which, or null while it is the known one. */
  private other: { since: number; found: string | null } | null = null;
  private inFlight = false;
  /** A cluster shard failed the last probe while other primaries answered. */
  private shardDown = false;
  private round = 0;
  private uncovered = '';
  private readonly timer: NodeJS.Timeout;

  constructor(private readonly o: RedisProbeOptions) {
    if (!o.matchedAtStart) this.other = { since: Date.now(), found: o.foundAtStart };
    this.timer = setInterval(() => this.probe(), o.intervalMs);
    this.timer.unref();
    // A reconnect (a Redis restarted) is news too: no need to wait for the next probe.
    o.redis.on('ready', () => this.probe());
  }

  /** How long Redis has been failing to answer (0 while it answers). */
  failingMs(now = Date.now()): number {
    return this.failingSince === null ? 0 : now - this.failingSince;
  }

  /** Redis is not the one this replica knew: what it has instead, since when; null while it is. */
  get mismatch(): { since: number; expected: string; found: string | null } | null {
    return this.other === null ? null : { ...this.other, expected: this.o.epoch };
  }

  stop(): void {
    clearInterval(this.timer);
  }

  private probe(): void {
    if (this.inFlight) return;
    this.inFlight = true;
    const overdue = setTimeout(() => this.failed(), this.o.timeoutMs);
    overdue.unref();
    // On a cluster every primary's epoch keys are read one probe in SHARD_ROUND (about 65 GETs),
    // and on every probe while probes fail or a mismatch lasts: the first answer after an outage
    // (a primary failing over) must see a shard that came back empty before anything is served,
    // and mp:epoch alone would end a mismatch it cannot see. The others read mp:epoch alone,
    // which is enough to tell a hung or restarted Redis.
    const shards =
      this.round++ % SHARD_ROUND === 0 || this.other !== null || this.failingSince !== null || this.shardDown;
    if (shards && this.o.onUncovered) {
      const now = uncoveredPrimaries(this.o.redis);
      if (now.join(' ') !== this.uncovered) {
        this.uncovered = now.join(' ');
        this.o.onUncovered(now);
      }
    }
    readEpoch(this.o.redis, { shards }).then(
      (found) => {
        clearTimeout(overdue);
        this.inFlight = false;
        const wasDown = this.failingSince !== null || this.other !== null || (this.shardDown && shards);
        this.failingSince = null;
        if (shards) this.shardDown = false;
        if (found !== this.o.epoch) {
          this.other ??= { since: Date.now(), found };
          this.other.found = found;
          this.o.onMismatch(found);
          return;
        }
        this.other = null;
        if (wasDown) this.o.onBack();
      },
      () => {
        clearTimeout(overdue);
        this.inFlight = false;
        this.failed();
      },
    );
  }

  private failed(): void {
    if (this.failingSince !== null) return;
    const at = Date.now();
    if (!isCluster(this.o.redis)) {
      this.failingSince = at;
      return;
    }
    void someAnswers(this.o.redis, this.o.timeoutMs).then((some) => {
      if (some) this.shardDown = true;
      else this.failingSince ??= at;
    });
  }
}

/** Whether any primary of the cluster answers a PING within `timeoutMs`. */
async function someAnswers(redis: Redis, timeoutMs: number): Promise<boolean> {
  const pings = primaries(redis).map((p) => p.ping().then(() => true));
  const late = new Promise<boolean>((resolve) => setTimeout(() => resolve(false), timeoutMs).unref());
  return Promise.race([Promise.any(pings).catch(() => false), late]);
}
