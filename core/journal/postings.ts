// What each usage stream entry moves, as double-entry postings (pure). Books, per customer account:
//   customer_credit   what the customer may spend (a liability to them); its balance is Redis's `balance`
//   payment_clearing  money received for top-ups (Stripe, an approved request, an operator's grant)
//   revenue           what calls and the service ledger earned, at their true cost
//   uncollected       cost that could not be charged (`short`: the hold was short, the balance ran out)
//   pending_holds     where a voided hold's money sat while it was held
// A posting debits one book and credits another by one positive amount.
import type { UsageEntry } from '../usage.ts';

export type Book = 'customer_credit' | 'pending_holds' | 'revenue' | 'payment_clearing' | 'uncollected';

export interface Posting {
  debit: Book;
  credit: Book;
  amount: number;
}

export function postingsOf(e: Pick<UsageEntry, 'type' | 'amount' | 'short'>): Posting[] {
  const out: Posting[] = [];
  const add = (debit: Book, credit: Book, amount: number) => {
    if (amount > 0) out.push({ debit, credit, amount });
  };
  switch (e.type) {
    case 'topup':
      add('payment_clearing', 'customer_credit', e.amount);
      break;
    case 'charge':
      add('customer_credit', 'revenue', e.amount);
      add('uncollected', 'revenue', e.short);
      break;
    case 'refund':
      add('revenue', 'customer_credit', e.amount);
      break;
    case 'void':
      // A hold moves nothing until it settles; a void says it was held and given back, so the
      // pair nets to zero on both books and the journal still shows how much was held.
      add('customer_credit', 'pending_holds', e.amount);
      add('pending_holds', 'customer_credit', e.amount);
      break;
  }
  return out;
}

/** The balance effect on customer_credit of a set of postings (credits add, debits take). */
export function creditEffect(postings: readonly Posting[]): bigint {
  let n = 0n;
  for (const p of postings) {
    if (p.credit === 'customer_credit') n += BigInt(p.amount);
    if (p.debit === 'customer_credit') n -= BigInt(p.amount);
  }
  return n;
}
