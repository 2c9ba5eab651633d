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
  let archived = 0;
  let restored = 0;
  new Counter({
    name: 'mp_journal_archived_total',
    help: 'Usage entries moved from Redis into the journal by this replica',
    registers: [registry],
    collect() {
      this.inc(status.archivedTotal - archived);
      archived = status.archivedTotal;
    },
  });
  new Counter({
    name: 'mp_journal_topups_restored_total',
    help: 'Committed top-ups Redis had lost, credited again by the reconciler',
    registers: [registry],
    collect() {
      this.inc(status.restoredTotal - restored);
      restored = status.restoredTotal;
    },
  });
}
