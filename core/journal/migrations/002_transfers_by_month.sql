-- `transfers` partitioned by month (issue 23): at a billion calls a day the journal grows ~600 GB a
-- day, and a month is the unit an operator moves to cheaper storage, detaches or drops. Converts a
-- 001 table with its rows in place (one transaction, as every migration; the rows are copied, so
-- run it when the journal is small or in a quiet hour).
--
-- The partition column, `month` (months since 1970-01, UTC), is the month of the transfer's `at_ms`:
-- one number per row, checked against at_ms below, so a row is always in the partition its time
-- says. A partitioned table's unique key must contain the partition column, so the key that makes
-- applying a transfer twice a no-op is now (account_id, id, month). What that no longer catches by
-- itself is one transfer arriving twice with times in different months; the journal's inserts
-- close that gap (core/journal/journal.ts):
--   * a top-up is committed here first, at the committing process's clock, and archived later from
--     the Redis stream at the stream entry's time — or restored by the reconciler days later. Top-ups
--     are few (one per payment), so both paths look the id up in every month, under an advisory lock
--     on (account_id, id), and update or insert: never a second row.
--   * the archiver's other transfers (charges, refunds, voids) come from Redis only. A stream entry
--     read twice (a crash between commit and acknowledge, two leaders) has the same time, so the
--     same month, and the key catches it. The same transfer in a second stream entry (an outbox's
--     resend after a failover lost the first from Redis) carries a later time, but within Redis's
--     own exactly-once window for it — 24 h for a settlement, 35 days for a charge or a refund (a
--     void gets the longer too); past that Redis itself would apply it again — plus an hour for
--     replicas' clocks. So
--     the insert looks in the other months that window reaches (at most two before, one after),
--     and only for rows that close to a month's turn: most settlements look nowhere else.
-- Measured (bench/RESULTS.md): PostgreSQL ~17 µs a row before, ~19 after (this CHECK and the
-- routing); probing the neighbouring months for every row cost ~22. The other way considered, a
-- slim unpartitioned table of every (account_id, id), keeps one global key but grows without
-- bound on fast storage (~160 GB a day at that scale) and costs every row a second heap row and
-- index entry, where the probes cost a few index look-ups and no writes, and only near a month's
-- turn.
--
-- Months get their partitions ahead of time: Journal.open and the journal keeper (its leader, every
-- reconcile interval) create this month's and the next two (Journal.ensurePartitions). A row whose
-- month has no partition yet (an archived Redis entry from before the journal existed, a clock far
-- off) lands in `transfers_default`, and is moved into its month's partition when that is created.

create function journal_month(at_ms bigint) returns int language sql immutable parallel safe as $$
  select ((extract(year from to_timestamp(at_ms / 1000.0) at time zone 'UTC') - 1970) * 12
          + extract(month from to_timestamp(at_ms / 1000.0) at time zone 'UTC') - 1)::int
$$;

-- The name of a month's partition: transfers_2026_11.
create function journal_partition_name(m int) returns text language sql immutable as $$
  select format('transfers_%s_%s', 1970 + m / 12, lpad((m % 12 + 1)::text, 2, '0'))
$$;

drop view postings;
alter table transfers rename to transfers_001;
alter index transfers_pkey rename to transfers_001_pkey;
alter index transfers_request rename to transfers_001_request;
alter index transfers_account_at rename to transfers_001_account_at;
alter index transfers_key_at rename to transfers_001_key_at;
alter index transfers_unseen_topups rename to transfers_001_unseen_topups;

create table transfers (
  like transfers_001 including defaults including constraints,
  month int not null,
  primary key (account_id, id, month),
  check (month = journal_month(at_ms))
) partition by range (month);
create index transfers_request on transfers (request_id) where request_id is not null;
create index transfers_account_at on transfers (account_id, at_ms);
create index transfers_key_at on transfers (account_id, key_id, at_ms) where key_id is not null;
create index transfers_unseen_topups on transfers (account_id, committed_at)
  where kind = 'topup' and stream_ms is null;
create table transfers_default partition of transfers default;

-- Partitions for every month the rows have, and this month and the next two.
do $$
declare
  m int;
begin
  for m in
    select distinct journal_month(at_ms) from transfers_001
    union
    select journal_month((extract(epoch from now()) * 1000)::bigint) + g from generate_series(0, 2) g
  loop
    execute format('create table %I partition of transfers for values from (%s) to (%s)',
                   journal_partition_name(m), m, m + 1);
  end loop;
end $$;

insert into transfers select *, journal_month(at_ms) from transfers_001;
drop table transfers_001;

create view postings as
  select t.account_id, t.id as transfer_id, p.debit, p.credit, p.amount
  from transfers t cross join lateral journal_postings(t.kind, t.amount, t.short) p;
