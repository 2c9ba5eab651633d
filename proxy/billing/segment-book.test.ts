import { describe, expect, it } from 'vitest';
import { SegmentBook } from './segment-book.ts';

const owed = (accountId: string, cost: number, atMs = 1_000) => ({ accountId, cost, atMs });

describe('segment book (which journal segments still hold something owed)', () => {
  it('a record keeps its segment until Redis acknowledges it; the segment being written is never freed', () => {
    const book = new SegmentBook(1);
    book.record(1, 'h1', owed('a', 10));
    book.record(2, 'h2', owed('a', 5));
    expect(book.rotated(2)).toEqual([]); // segment 1 still owes
    expect(book.ack([1])).toEqual([]);
    expect(book.pendingRecords).toBe(1);
    expect(book.ack([2])).toEqual([1]);
    expect(book.holds(1)).toBe(false);
    // Acknowledged while it is still written to: it stays (and goes at the next rotation).
    book.record(3, 'h3', owed('a', 1));
    expect(book.ack([3])).toEqual([]);
    expect(book.rotated(3)).toEqual([2]);
  });

  it('a lease batch keeps its segment until its own acknowledgement', () => {
    const book = new SegmentBook(1);
    book.record(1, 'h1', owed('a', 10));
    book.batch('lease_a:1');
    book.rotated(2);
    expect(book.ack([1])).toEqual([]);
    expect(book.ack([], 'lease_a:1')).toEqual([1]);
  });

  it("a later progress line frees the earlier one's segment", () => {
    const book = new SegmentBook(1);
    book.progress('h1', { accountId: 'a', cost: 3 }, 1_000);
    book.rotated(2);
    expect(book.progress('h1', { accountId: 'a', cost: 7 }, 2_000)).toEqual([1]);
    // Still owed from its first progress on.
    expect(book.owed()).toEqual({
      count: 1,
      byAccount: { a: { count: 1, nano: 7 } },
      oldestAtMs: 1_000,
      unanswered: { count: 0, byAccount: {} },
    });
  });

  it('records whose lines are not in the file yet are owed as unanswered (a crash now leaves them owing nothing)', () => {
    const book = new SegmentBook(1);
    book.record(1, 'h1', owed('a', 10, 1_000));
    book.written();
    book.record(2, 'h2', owed('a', 5, 2_000)); // the disk refused its line
    book.record(3, 'h3', owed('b', 4, 3_000));
    expect(book.owed()).toEqual({
      count: 1,
      byAccount: { a: { count: 1, nano: 10 } },
      oldestAtMs: 1_000,
      unanswered: { count: 2, byAccount: { a: { count: 1, nano: 5 }, b: { count: 1, nano: 4 } } },
    });
    book.ack([3]); // Redis has it: owed nowhere
    book.written();
    expect(book.owed()).toMatchObject({ count: 2, byAccount: { a: { count: 2, nano: 15 } } });
    expect(book.owed().unanswered.count).toBe(0);
  });

  it("a closed call's progress segment keeps the segment of its closing line, and frees it when it goes", () => {
    const book = new SegmentBook(1);
    book.record(1, 'other', owed('b', 1)); // keeps segment 1 after the progress closes
    book.progress('h1', { accountId: 'a', cost: 3 }, 1_000);
    book.rotated(2);
    // The call settles in segment 2: its progress in segment 1 no longer counts, but while segment 1
    // exists a replay would find that progress, so segment 2 (its closing record) must stay too.
    book.record(2, 'h1', owed('a', 4));
    book.rotated(3);
    expect(book.ack([2])).toEqual([]);
    expect(book.holds(2)).toBe(true);
    expect(book.ack([1])).toEqual([1, 2]);
    expect(book.holds(2)).toBe(false);
    expect(book.owed().count).toBe(0);
  });

  it('a call that ends with nothing to charge closes its progress (null when there was none)', () => {
    const book = new SegmentBook(1);
    expect(book.closeProgress('h1')).toBeNull();
    book.progress('h1', { accountId: 'a', cost: 3 }, 1_000);
    expect(book.closeProgress('h1')).toEqual([]);
    expect(book.owed().count).toBe(0);
    expect(book.closeProgress('h1')).toBeNull();
  });

  it('what is owed: unacknowledged records and running streams, per account, with the oldest time', () => {
    const book = new SegmentBook(1);
    book.replayedRecord(1, 1, owed('a', 10, 500));
    book.record(2, 'h2', owed('a', 5, 900));
    book.written();
    book.progress('h3', { accountId: 'b', cost: 2 }, 700);
    expect(book.owed()).toEqual({
      count: 3,
      byAccount: { a: { count: 2, nano: 15 }, b: { count: 1, nano: 2 } },
      oldestAtMs: 500,
      unanswered: { count: 0, byAccount: {} },
    });
  });

  it('a segment holding only the unwritten lines is one a full disk may give up', () => {
    const book = new SegmentBook(1);
    book.record(1, 'h1', owed('a', 10));
    expect(book.holdsOnlyUnwritten()).toBe(true);
    book.written();
    expect(book.holdsOnlyUnwritten()).toBe(false); // its line is in the file now
    book.record(2, 'h2', owed('a', 10));
    expect(book.holdsOnlyUnwritten()).toBe(false); // record 1 is owed from this segment
    book.ack([1]);
    expect(book.holdsOnlyUnwritten()).toBe(true);
    book.progress('h3', { accountId: 'a', cost: 1 }, 1_000);
    expect(book.holdsOnlyUnwritten()).toBe(false); // a running stream's progress is in it
  });
});

describe('segment book on a full disk', () => {
  it('the unwritten lines moved to a fresh segment take their pins along: the given-up segment is freed at once', () => {
    const book = new SegmentBook(1);
    book.record(1, 'old', owed('a', 1));
    book.written();
    book.ack([1]);
    // The disk is full: records 2 and 3 and a batch are in lines the file did not take.
    book.record(2, 'h2', owed('a', 10));
    book.record(3, 'h3', owed('a', 10));
    book.batch('lease_a:1');
    expect(book.holdsOnlyUnwritten()).toBe(true);
    expect(book.movedUnwritten(2)).toEqual([1]);
    expect(book.holds(1)).toBe(false);
    expect(book.pendingRecords).toBe(2);
    // Still unwritten, and now in segment 2: a second failure there sees them as its own.
    expect(book.holdsOnlyUnwritten()).toBe(true);
    book.written();
    book.rotated(3);
    expect(book.ack([2, 3])).toEqual([]);
    expect(book.ack([], 'lease_a:1')).toEqual([2]);
  });
});
