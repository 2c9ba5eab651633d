-- The durable money journal (issue 23). Redis stays the hot path; this is the system of record.
--
-- A transfer is one cause of money moving on one customer account, named by that cause: the
-- usage stream's op id (`topup:<id>`, `settle:<holdId>`, `charge:<id>`, `refund:<id>`,
-- `void:<holdId>`), unique per account, so applying a transfer twice is a no-op.
-- What it moved are its postings (the view below), derived from its kind and amounts by one rule:
-- each posting debits one book and credits another by the same amount, so debits equal credits by
-- construction — there is no single-sided row to get wrong, and no second row per transfer for the
-- archiver to write. Amounts are integer nano-units of the account's currency.
create table transfers (
  account_id    text   not null,
  id            text   not null,
  kind          text   not null check (kind in ('topup', 'charge', 'refund', 'void')),
  -- The Redis usage stream entry (`<ms>-<seq>`), once the archiver has seen it; null for a top-up
  -- committed here first and not yet seen in Redis.
  stream_ms     bigint,
  stream_seq    bigint,
  at_ms         bigint not null,
  amount        bigint not null check (amount >= 0),
  cost          bigint,
  short         bigint not null default 0 check (short >= 0),
  held          bigint,
  source        text,
  reason        text,
  lease_id      text,
  refund_of     text,
  balance_after bigint,
  key_id        text,
  model         text,
  call_kind     text,
  input_tokens  bigint,
  cached_tokens bigint,
  output_tokens bigint,
  images        bigint,
  video_ms      bigint,
  request_id    text,
  note          text,
  committed_at  timestamptz not null default now(),
  primary key (account_id, id),
  check ((stream_ms is null) = (stream_seq is null))
);
create index transfers_request on transfers (request_id) where request_id is not null;
create index transfers_account_at on transfers (account_id, at_ms);
create index transfers_key_at on transfers (account_id, key_id, at_ms) where key_id is not null;
create index transfers_unseen_topups on transfers (account_id, committed_at)
  where kind = 'topup' and stream_ms is null;

-- The one rule of what a transfer posts. Books, per customer account:
--   customer_credit   what the customer may spend (a liability to them); its balance is Redis's `balance`
--   payment_clearing  money received for top-ups (Stripe, an approved request, an operator's grant)
--   revenue           what calls and the service ledger earned, at their true cost
--   uncollected       cost that could not be charged (`short`: the hold was short, the balance ran out)
--   pending_holds     where a voided hold's money sat while it was held: a void moves nothing, so its
--                     pair of postings nets to zero on both books, and the journal still shows the hold
create function journal_postings(k text, amt bigint, shortfall bigint)
returns table (debit text, credit text, amount bigint) language sql immutable as $$
  select p.d, p.c, p.a from (values
    ('payment_clearing', 'customer_credit', case when k = 'topup' then amt end),
    ('customer_credit', 'revenue', case when k = 'charge' then amt end),
    ('uncollected', 'revenue', case when k = 'charge' then shortfall end),
    ('revenue', 'customer_credit', case when k = 'refund' then amt end),
    ('customer_credit', 'pending_holds', case when k = 'void' then amt end),
    ('pending_holds', 'customer_credit', case when k = 'void' then amt end)
  ) as p(d, c, a) where p.a > 0
$$;

create view postings as
  select t.account_id, t.id as transfer_id, p.debit, p.credit, p.amount
  from transfers t cross join lateral journal_postings(t.kind, t.amount, t.short) p;
