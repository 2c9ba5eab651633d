// One account's credit lease as this replica sees it: pure local accounting and sizing policy, no
// I/O (CreditLeases in ./leases.ts does the Redis side). The invariant every method keeps:
// `size` is never more than Redis holds for the lease minus the settles not yet applied there, so
// `free = size − carved − queuedCost ≥ 0` is money this replica may promise to a request without
// asking Redis, and carving never over-commits the account.
import type { SettleRecord } from './journal-lines.ts';

export interface LeaseRecord extends SettleRecord {
  /** Called with what the batch charged and could not collect (metrics). */
  onCharged?: (charged: number, short: number) => void;
}

/** What the lease itself pays of a record: its cost up to what it carved (the rest is the balance's). */
export const leasePart = (r: { cost: number; carved: number }) => Math.min(r.cost, r.carved);

export interface LeasePolicy {
  /** Largest lease (nano). */
  maxLease: number;
  /** A lease aims at this many typical holds (or at least half a second of demand). */
  targetHolds: number;
  /** Growth smaller than this many typical holds is not worth a lease (near the limit). */
  minHolds: number;
}

const DEMAND_WINDOW_MS = 250;

export class AccountLease {
  /** What Redis holds for the lease, as of the last reply (lowered before a release is sent). */
  size = 0;
  /** Holds carved by requests still running. */
  carved = 0;
  /** The lease's part (leasePart) of settles queued or in flight: Redis takes it in the next batch. */
  queuedCost = 0;
  queue: LeaseRecord[] = [];
  /** Redis operations of this lease run one after another, so replies apply in order. */
  chain: Promise<void> = Promise.resolve();
  extending = false;
  /** Redis may hold more than `size` (a reply was lost): a release must ask Redis even at size 0. */
  unsure = false;
  /** When Redis last refreshed the lease's ttl (an extension or a batch). */
  renewedAt = 0;
  flushQueued = false;
  /** No extension before this time (the last one could not grow: the account is near its limit). */
  noGrowUntil = 0;
  lastUsed = 0;
  private typical = 0;
  private windowStart = 0;
  private windowDemand = 0;
  private rate = 0;

  constructor(readonly accountId: string) {}

  get free(): number {
    return this.size - this.carved - this.queuedCost;
  }

  get idle(): boolean {
    return this.carved === 0 && this.queuedCost === 0 && this.queue.length === 0;
  }

  /** Records a request's hold for sizing (a decaying typical hold and the demand per second). */
  noteDemand(amount: number, now: number): void {
    this.lastUsed = now;
    this.typical = this.typical === 0 ? amount : this.typical + (amount - this.typical) / 16;
    if (now - this.windowStart >= DEMAND_WINDOW_MS) {
      this.rate = (this.windowDemand * 1000) / Math.max(DEMAND_WINDOW_MS, now - this.windowStart);
      this.windowStart = now;
      this.windowDemand = 0;
    }
    this.windowDemand += amount;
  }

  /** Takes `amount` from the lease when it is free; false leaves the request to the reserve path. */
  carve(amount: number): boolean {
    if (this.free < amount) return false;
    this.carved += amount;
    return true;
  }

  uncarve(amount: number): void {
    this.carved -= amount;
  }

  /** A finished request: its hold leaves `carved`, the lease's part of its cost waits for the next batch. */
  enqueue(r: LeaseRecord): void {
    this.carved -= r.carved;
    this.queuedCost += leasePart(r);
    this.queue.push(r);
  }

  /** The lease size to aim for (0 before any demand). */
  target(p: LeasePolicy): number {
    const t = Math.max(p.targetHolds * this.typical, this.rate / 2);
    return Math.floor(Math.min(p.maxLease, t));
  }

  /** Whether the lease is low enough to grow now. */
  wantsGrowth(p: LeasePolicy, now: number): boolean {
    if (this.extending || now < this.noGrowUntil) return false;
    return this.free < this.target(p) / 2;
  }

  /** What an extension asks for, and the least growth worth having. */
  growth(p: LeasePolicy): { add: number; min: number } {
    // Free money up to the target, and the whole lease (carved holds included) never past maxLease.
    const add = Math.max(0, Math.min(this.target(p) - Math.max(0, this.free), p.maxLease - this.size));
    return { add, min: Math.min(add, Math.ceil(p.minHolds * this.typical)) };
  }
}
