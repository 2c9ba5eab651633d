// The durable money journal in PostgreSQL (issue 23): see ./journal.ts.
export { ARCHIVER_GROUP, type ArchivePass, Archiver } from './archiver.ts';
export { entryOfRecord } from './entry-of-record.ts';
export { type DailyUsage, Journal, type JournalRecord } from './journal.ts';
export { type JournalKeeper, type KeeperStatus, startJournalKeeper } from './keeper.ts';
export { migrate, migrationFiles } from './migrate.ts';
export { type Restored, reconcileTopUps } from './reconciler.ts';
