// The journal keeper's metrics (core/journal/keeper.ts), read from its status at scrape time. Only
// the leading replica archives; the others report 0 behind and no pass, so alert on the max.
import { Counter, Gauge, type Registry } from 'prom-client';
import type { KeeperStatus } from '../../core/journal/index.ts';

export function registerJournalMetrics(registry: Registry, status: KeeperStatus): void {
  new Gauge({
    name: 'mp_journal_archive_lag_seconds',
    help: 'How far behind the archiver is: age of the oldest usage entry its last pass left unread (0 when it read every stream to its end)',
    registers: [registry],
    collect() {
      this.set(status.behindSinceMs === null ? 0 : Math.max(0, (Date.now() - status.behindSinceMs) / 1000));
    },
  });
  new Gauge({
    name: 'mp_journal_archive_last_pass_timestamp_seconds',
    help: 'When the archiver last finished a pass over the usage streams (leading replica only)',
    registers: [registry],
    collect() {
      if (status.lastPassAtMs !== null) this.set(status.lastPassAtMs / 1000);
    },
  });
  new Gauge({
    name: 'mp_journal_keeper_leader',
    help: '1 on the replica that runs the archiver and the reconciler',
    registers: [registry],
    collect() {
      this.set(status.leader ? 1 : 0);
    },
  });
  // Counters that follow a running total the keeper keeps: each scrape adds what it grew by.
  const following = (name: string, help: string, total: () => number) => {
    let seen = 0;
    new Counter({
      name,
      help,
      registers: [registry],
      collect() {
        this.inc(total() - seen);
        seen = total();
      },
    });
  };
  following(
    'mp_journal_archived_total',
    'Usage entries moved from Redis into the journal by this replica',
    () => status.archivedTotal,
  );
  following(
    'mp_journal_topups_restored_total',
    'Committed top-ups Redis had lost, credited again by the reconciler',
    () => status.restoredTotal,
  );
}
