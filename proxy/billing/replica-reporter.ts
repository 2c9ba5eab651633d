// What this replica owes, published in Redis every PROXY_REPLICA_REPORT_MS (core/billing/replica-reports.ts)
// so `ledger check` sees it even after the replica died (issue 22): the journal's owed settlements
// per account, the oldest's age, and the settlements Redis acknowledged lately. Not while Redis is
// not the one this replica knew: a report written into another Redis would be about nothing there.
// At shutdown a replica that owes nothing removes its report; one that still owes leaves its last.
import { hostname } from 'node:os';
import { resolve } from 'node:path';
import {
  type AcknowledgedWrite,
  publishReplicaReport,
  RECENT_ACKS_KEPT,
  RECENT_ACKS_MS,
  removeReplicaReport,
} from '../../core/billing/replica-reports.ts';
import type { Redis } from '../../core/redis/client.ts';
import type { SettlementJournal } from './settlement-journal.ts';

/** This replica's name in reports: its host (the pod's name under Kubernetes) and data directory. */
export function replicaName(dataDir: string): string {
  return `${hostname()}:${resolve(dataDir)}`;
}

export interface ReplicaReporterOptions {
  redis: Redis;
  journal: SettlementJournal;
  dataDir: string;
  everyMs: number;
  /** False while Redis is not the one this replica knew (nothing is reported into it). */
  redisIsKnown: () => boolean;
}

export class ReplicaReporter {
  readonly replica: string;
  /** Settlements Redis acknowledged lately, oldest first (core/billing/replica-reports.ts, AcknowledgedWrite). */
  private readonly recentAcks: AcknowledgedWrite[] = [];
  private readonly timer: NodeJS.Timeout;

  constructor(private readonly o: ReplicaReporterOptions) {
    this.replica = replicaName(o.dataDir);
    this.timer = setInterval(() => {
      if (o.redisIsKnown()) this.publish().catch(() => {});
    }, o.everyMs);
    this.timer.unref();
  }

  /** The outbox's word that Redis acknowledged a settlement. */
  acknowledged(w: AcknowledgedWrite): void {
    this.recentAcks.push(w);
  }

  /** Handed over cleanly: nothing owed, no report; else the last word stays for ledger check. */
  async close(): Promise<void> {
    clearInterval(this.timer);
    if (!this.o.redisIsKnown()) return;
    const gone = this.o.journal.pendingRecords === 0;
    await (gone ? removeReplicaReport(this.o.redis, this.replica) : this.publish()).catch(() => {});
  }

  private publish(): Promise<void> {
    const owed = this.o.journal.owed();
    const now = Date.now();
    const keepFrom = this.recentAcks.findIndex((w) => w.atMs >= now - RECENT_ACKS_MS);
    this.recentAcks.splice(
      0,
      keepFrom < 0 ? this.recentAcks.length : Math.max(keepFrom, this.recentAcks.length - RECENT_ACKS_KEPT),
    );
    return publishReplicaReport(this.o.redis, {
      replica: this.replica,
      owed: owed.count,
      byAccount: owed.byAccount,
      unanswered: owed.unanswered,
      oldestAgeMs: owed.oldestAtMs === null ? null : now - owed.oldestAtMs,
      reportedAtMs: now,
      everyMs: this.o.everyMs,
      recent: this.recentAcks,
    });
  }
}
