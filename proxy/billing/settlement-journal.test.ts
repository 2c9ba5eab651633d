// The settlement journal on a real filesystem: what a process leaves unacknowledged is what the next
// one replays (records, and the batches they were sent in), a line cut by a crash is dropped while
// a damaged line elsewhere stops the start, segments go once nothing in them is pending, and a
// data directory belongs to one process at a time.
import { appendFileSync, existsSync, mkdtempSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import type { UsageRecord } from '../../core/billing/index.ts';
import { free, mountTmpfs } from '../../test/helpers/tmpfs.ts';
import { until } from '../../test/helpers/until.ts';
import { SettlementJournal } from './settlement-journal.ts';

const usage: UsageRecord = { keyId: 'k', model: 'M', kind: 'chat', inputTokens: 1, outputTokens: 2 };
const dir = () => mkdtempSync(join(tmpdir(), 'mp-journal-'));
const rec = (holdId: string, leaseId: string | null = 'lease_a') => ({
  accountId: 'acct_1',
  leaseId,
  holdId,
  cost: 10,
  carved: 20,
  usage,
});

/** A journal holding one record, its segment ending in a line cut short by a crash mid-write. */
function tornJournal(): { d: string; file: string } {
  const d = dir();
  const { journal } = SettlementJournal.open(d);
  journal.record(rec('kept'));
  journal.close();
  const file = readdirSync(d).find((f) => f.endsWith('.log'))!;
  appendFileSync(join(d, file), '{"t":"r","seq":9,"acco');
  return { d, file };
}

describe('settlement journal', () => {
  it('a torn tail is set aside at start (kept beside the segment, said once), so a later start is not stopped by it', () => {
    const { d, file } = tornJournal();
    const said: { setAside: string; bytes: number }[] = [];
    const second = SettlementJournal.open(d, { onTornTail: (t) => said.push(t) });
    expect(second.replayed.pending.map((r) => r.holdId)).toEqual(['kept']);
    // The second process owes something too (a newer segment stays): the old tail is not last any more.
    second.journal.record(rec('second'));
    second.journal.close();
    const third = SettlementJournal.open(d, { onTornTail: (t) => said.push(t) });
    expect(third.replayed.pending.map((r) => r.holdId)).toEqual(['kept', 'second']);
    third.journal.close();
    expect(said).toEqual([
      { file: join(d, file), setAside: join(d, file.replace('.log', '.torn')), bytes: 22 },
    ]);
    expect(readFileSync(said[0]!.setAside, 'utf8')).toBe('{"t":"r","seq":9,"acco\n');
  });

  it('replays what was not acknowledged: records, and the batches they were sent in', () => {
    const d = dir();
    const { journal, replayed } = SettlementJournal.open(d);
    expect(replayed).toEqual({ pending: [], batches: [] });
    const [a, b, c, e] = [
      journal.record(rec('r1')),
      journal.record(rec('r2')),
      journal.record(rec('r3')),
      journal.record(rec('own', null)),
    ];
    journal.batch({ accountId: 'acct_1', leaseId: 'lease_a', batchId: '1', seqs: [a.seq, b.seq] });
    journal.batch({ accountId: 'acct_1', leaseId: 'lease_a', batchId: '2', seqs: [c.seq] });
    journal.ack([c.seq], { leaseId: 'lease_a', batchId: '2' });
    journal.close(); // a process that stopped before batch 1 and `own` were acknowledged
    const again = SettlementJournal.open(d);
    expect(again.replayed.pending.map((r) => r.holdId)).toEqual(['r1', 'r2', 'own']);
    expect(again.replayed.pending[2]).toEqual(e);
    expect(again.replayed.batches).toEqual([
      { accountId: 'acct_1', leaseId: 'lease_a', batchId: '1', seqs: [a.seq, b.seq] },
    ]);
    // Numbering goes on past what the journal holds.
    expect(again.journal.record(rec('next')).seq).toBeGreaterThan(e.seq);
    again.journal.close();
  });

  it('a line cut by a crash mid-write is dropped; a damaged line before the end stops the start, naming it', () => {
    const { d } = tornJournal();
    const torn = SettlementJournal.open(d);
    expect(torn.replayed.pending.map((r) => r.holdId)).toEqual(['kept']);
    torn.journal.close();
    const bad = dir();
    writeFileSync(join(bad, 'outbox-1.log'), 'not json\n{"t":"a","s":[]}\n');
    expect(() => SettlementJournal.open(bad)).toThrow(
      /outbox-1\.log line 1 is unreadable; it holds charges owed/,
    );
  });

  it('rotates segments and deletes each once nothing in it is pending', async () => {
    const d = dir();
    const { journal } = SettlementJournal.open(d, { segmentBytes: 400 });
    const recs = [];
    for (let i = 0; i < 12; i++) {
      recs.push(journal.record(rec(`r${i}`, null)));
      await new Promise<void>((r) => journal.afterWrite(r)); // each its own write
    }
    expect(readdirSync(d).filter((f) => f.endsWith('.log')).length).toBeGreaterThan(2);
    const logs = () => readdirSync(d).filter((f) => f.endsWith('.log'));
    const before = logs().length;
    journal.ack([recs[0]!.seq]); // its segment still holds pending records
    expect(logs().length).toBe(before);
    journal.ack(recs.slice(1).map((r) => r.seq));
    // Every segment but the one being written is gone once all in it is acknowledged.
    expect(logs()).toHaveLength(1);
    journal.close();
    expect(readdirSync(d).filter((f) => f.endsWith('.log'))).toEqual([]);
    expect(SettlementJournal.open(d).replayed.pending).toEqual([]);
  });

  it('a data directory belongs to one process (or app) at a time; a dead owner’s lock is taken over', () => {
    const d = dir();
    const { journal } = SettlementJournal.open(d);
    expect(() => SettlementJournal.open(d)).toThrow(/already in use by this process/);
    journal.close();
    expect(existsSync(join(d, 'outbox.lock'))).toBe(false);
    writeFileSync(join(d, 'outbox.lock'), '1'); // pid 1 is alive and not us
    expect(() => SettlementJournal.open(d)).toThrow(
      /belongs to the running process 1; give each proxy its own PROXY_DATA_DIR/,
    );
    writeFileSync(join(d, 'outbox.lock'), '2147483646'); // no such process
    SettlementJournal.open(d).journal.close();
  });

  it('afterWrite runs once the lines recorded before it are in the file, one write for all of a turn', async () => {
    const d = dir();
    const { journal } = SettlementJournal.open(d);
    const file = () => readFileSync(join(d, readdirSync(d).find((f) => f.endsWith('.log'))!), 'utf8');
    journal.record(rec('a'));
    journal.record(rec('b'));
    expect(file()).toBe(''); // gathered in memory during the turn
    const seen: string[] = [];
    await new Promise<void>((r) => {
      journal.afterWrite(() => seen.push(file()));
      journal.afterWrite(r);
    });
    expect(
      seen[0]!
        .trim()
        .split('\n')
        .map((l) => JSON.parse(l).holdId),
    ).toEqual(['a', 'b']);
    journal.close();
  });

  it('durable() resolves once an fsync covered every line written before it', async () => {
    const { journal } = SettlementJournal.open(dir());
    journal.record(rec('a'));
    const first = journal.durable();
    journal.record(rec('b')); // written while the first fsync may be running: needs another
    const second = journal.durable();
    await Promise.all([first, second]);
    await journal.durable(); // nothing new: resolves at once
    journal.close();
  });
});

describe('stream progress in the journal', () => {
  const prog = (holdId: string, cost: number) => ({ ...rec(holdId, null), cost });

  it('a stream its process died in is replayed at its last progress; one that ended, at its record or not at all', () => {
    const d = dir();
    const { journal } = SettlementJournal.open(d);
    journal.progress(prog('died', 10));
    journal.progress(prog('died', 25)); // the latest stands
    journal.progress(prog('ended', 5));
    journal.record(prog('ended', 7)); // its settlement replaces its progress
    journal.progress(prog('nothing', 3));
    journal.endProgress('nothing'); // ended with nothing to charge
    journal.close(); // a crash: nothing acknowledged
    const again = SettlementJournal.open(d);
    expect(again.replayed.pending.map((r) => [r.holdId, r.cost])).toEqual([
      ['ended', 7],
      ['died', 25],
    ]);
    again.journal.close();
    // The resurrected stream is a record now: replayed once more if not acknowledged, never twice.
    const third = SettlementJournal.open(d);
    expect(third.replayed.pending.map((r) => [r.holdId, r.cost])).toEqual([
      ['ended', 7],
      ['died', 25],
    ]);
    third.journal.ack(third.replayed.pending.map((r) => r.seq));
    third.journal.close();
    expect(SettlementJournal.open(d).replayed.pending).toEqual([]);
  });

  it('a progress line kept by another pending record never outlives the line that closed its call', async () => {
    const d = dir();
    const { journal } = SettlementJournal.open(d, { segmentBytes: 300 });
    const other = journal.record(rec('other', null)); // keeps the first segment
    journal.progress(prog('stream', 9));
    await new Promise<void>((r) => journal.afterWrite(r)); // rotates past 300 bytes
    const done = journal.record(prog('stream', 12)); // in a later segment
    await new Promise<void>((r) => journal.afterWrite(r));
    journal.ack([done.seq]); // its segment would go, leaving the progress alone
    await new Promise<void>((r) => journal.afterWrite(r));
    journal.close();
    const again = SettlementJournal.open(d);
    expect(again.replayed.pending.map((r) => r.holdId)).toEqual(['other']);
    again.journal.ack([other.seq]);
    again.journal.close();
    expect(SettlementJournal.open(d).replayed.pending).toEqual([]);
  });
});

describe('settlement journal on a full disk (a real tmpfs)', () => {
  const disk = mountTmpfs(64 * 1024);
  const onDisk = disk === null ? it.skip : it;
  if (disk === null) console.warn('journal full-disk tests skipped: mounting a tmpfs needs root');
  afterAll(() => disk?.unmount());

  onDisk(
    'a write the disk refuses throws at nobody: the lines wait in memory and are written once there is room, whole; an answer waits until its record is written or acknowledged by Redis',
    async () => {
      const d = mkdtempSync(join(disk!.dir, 'j-'));
      const errors: Error[] = [];
      let recovered = 0;
      const { journal } = SettlementJournal.open(d, {
        onWriteError: (e) => errors.push(e),
        onWriteRecovered: () => recovered++,
      });
      const filler = disk!.fill();
      const recs = [];
      for (let i = 0; i < 20; i++) recs.push(journal.record(rec(`full${i}`, null)));
      const answered: string[] = [];
      journal.afterWrite(() => answered.push('first twenty'));
      journal.batch({ accountId: 'acct_1', leaseId: 'lease_a', batchId: '1', seqs: [recs[0]!.seq] });
      for (let i = 20; i < 22; i++) recs.push(journal.record(rec(`full${i}`, null)));
      journal.afterWrite(() => answered.push('all'));
      journal.afterWrite(() => answered.push('the last call'), recs[21]!.seq); // a call naming its record
      await until(() => journal.writeFailure !== null, 'the disk refusing the lines');
      expect(journal.writeFailure?.error.message).toMatch(/ENOSPC|no byte|took part/);
      expect(errors).toHaveLength(1);
      // The batch cannot wait for its line: it is sent at once, per record (./outbox.ts).
      expect(await journal.batchDurable()).toBe(false);
      await new Promise((r) => setTimeout(r, 300)); // a retry happened and failed
      // Each charge exists only in this process: no answer yet.
      expect(answered).toEqual([]);
      // Redis acknowledges the last call's record: that call is answered, whatever is owed before it.
      journal.ack([recs[21]!.seq]);
      await until(() => answered.length === 1, 'the last call answered');
      expect(answered).toEqual(['the last call']);
      // What is owed is in sight (the gauges, the replica report): from memory alone, all of it.
      expect(journal.unwrittenRecords).toBe(21);
      expect(journal.owed()).toMatchObject({
        count: 0,
        unanswered: { count: 21, byAccount: { acct_1: { count: 21, nano: 210 } } },
      });
      // The first twenty: the answer that named none after them goes; the one after all still waits.
      journal.ack(recs.slice(0, 20).map((r) => r.seq));
      await until(() => answered.length === 2, 'the first twenty answered');
      expect(answered).toEqual(['the last call', 'first twenty']);
      expect(journal.unwrittenRecords).toBe(1);
      // A durable() waits for room.
      let durable = false;
      const made = journal.durable().then(() => {
        durable = true;
      });
      await new Promise((r) => setTimeout(r, 300));
      expect(durable).toBe(false);
      free(filler);
      await made;
      // Once the lines are in the file the rest is answered.
      await until(() => answered.length === 3, 'the last answer');
      expect(journal.unwrittenRecords).toBe(0);
      expect(journal.writeFailure).toBeNull();
      expect(recovered).toBe(1);
      expect(await journal.batchDurable()).toBe(true);
      journal.close();
      // Every line is in the file, whole: the next process replays what was not acknowledged.
      const again = SettlementJournal.open(d);
      expect(again.replayed.pending.map((r) => r.holdId)).toEqual(['full20']);
      again.journal.close();
    },
  );

  onDisk(
    'a journal that filled its own disk with acknowledged lines starts a fresh segment and frees the space',
    async () => {
      const d = mkdtempSync(join(disk!.dir, 'j-'));
      let failures = 0;
      const { journal } = SettlementJournal.open(d, { onWriteError: () => failures++ });
      const filler = disk!.fill();
      free(filler);
      // Fill the disk with the journal's own acknowledged lines (a call's answer waits for its
      // line: the one the full disk refused is answered once the fresh segment took it).
      let n = 0;
      while (failures === 0 && n < 10_000) {
        const r = journal.record(rec(`own${n++}`, null));
        await new Promise<void>((res) => journal.afterWrite(res));
        journal.ack([r.seq]);
      }
      expect(n).toBeLessThan(10_000);
      // The full segment held nothing owed: it was replaced, and the next retry writes.
      await until(() => journal.writeFailure === null, 'the journal writing again', 10_000);
      const last = journal.record(rec('after', null));
      await new Promise<void>((r) => journal.afterWrite(r));
      expect(journal.writeFailure).toBeNull();
      journal.close();
      expect(SettlementJournal.open(d).replayed.pending.map((r) => r.seq)).toEqual([last.seq]);
    },
  );
});
