// Names a batch's pieces are kept under, shared by its creation, runner and finalizing (its hold's
// are billing's, ../billing/batch-money.ts).

/** A batch's lines as copied at creation (the input file may be deleted meanwhile). */
export interface StoredLine {
  customId: string;
  body: Record<string, unknown>;
  estimate: number;
  /** The estimate at the interactive price: the most the line's call may hold (../billing/batch-line-charge.ts). */
  budget: number;
}

/** The media store key of a batch's line copy. */
export const linesKey = (accountId: string, batchId: string) =>
  `batch-files/${accountId.toLowerCase().replace(/[^a-z0-9._-]/g, '-')}/${batchId.toLowerCase()}.lines.json`;

/**
 * A batch on the runners' list with no record this many runner polls after it was filed was never
 * created whole (its creation failed or its replica died between the two writes, ./create.ts): the
 * runner gives its hold back and drops it. The two writes are two Redis round trips apart.
 */
export const CREATE_GRACE_POLLS = 100;
