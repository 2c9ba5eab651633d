// The settlement journal's lines (./settlement-journal.ts says what each kind means) and the names of its files.
import type { UsageRecord } from '../../core/billing/index.ts';

export interface SettleRecord {
  seq: number;
  accountId: string;
  /** The lease the call's hold was carved from, or null: a hold of its own (settle.lua). */
  leaseId: string | null;
  holdId: string;
  /** The call's true cost (nano). */
  cost: number;
  /** What was held for it (nano). */
  carved: number;
  usage: UsageRecord;
}

export interface BatchLine {
  accountId: string;
  leaseId: string;
  batchId: string;
  seqs: number[];
}

/** What a previous process left unacknowledged. */
export interface Replayed {
  pending: SettleRecord[];
  /** Batches that were written (so maybe applied) and not acknowledged. */
  batches: BatchLine[];
}

/** A running stream's charge so far (what a crash would otherwise lose): its settlement if it never ends. */
export type Progress = Omit<SettleRecord, 'seq'>;

export type Line =
  | ({ t: 'r' } & SettleRecord)
  | ({ t: 'b' } & BatchLine)
  | { t: 'a'; s: number[]; b?: string }
  | ({ t: 'p' } & Progress)
  | { t: 'x'; h: string };

/** A segment's file name: outbox-<n>.log. */
export const SEGMENT = /^outbox-(\d+)\.log$/;
export const batchKey = (b: { leaseId: string; batchId: string }) => `${b.leaseId}:${b.batchId}`;
