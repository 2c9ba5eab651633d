// Billing's account budget (issue 34): what all the account's keys together may spend per UTC
// day, ISO week or UTC month, the current period's spend and its reset. Owners set or remove it;
// members see it. A call past it is refused with 429 insufficient_quota naming the account.
import { useCallback, useEffect, useState } from 'react';
import { optionalAmount } from '../amount-input.ts';
import { type AccountLimits, api, type BudgetWindow } from '../api.ts';
import { money } from '../format.ts';
import { ErrorLine } from '../parts.tsx';
import { PERIOD } from './KeyLimits.tsx';

export function AccountBudget(props: { owner: boolean; currency: string }) {
  const [limits, setLimits] = useState<AccountLimits | null>(null);
  const [amount, setAmount] = useState('');
  const [window, setWindow] = useState<BudgetWindow>('month');
  const [error, setError] = useState('');
  const shown = useCallback((l: AccountLimits) => {
    setLimits(l);
    setAmount(l.budget.limit ?? '');
    setWindow(l.budget.window);
  }, []);
  useEffect(() => {
    void api.accountLimits().then(shown, (err: Error) => setError(err.message));
  }, [shown]);
  const save = async (typed: string | null) => {
    setError('');
    try {
      const budget = typed === null ? null : optionalAmount('Budget', typed);
      shown(await api.setAccountBudget(budget, budget === null ? undefined : window));
    } catch (err) {
      setError((err as Error).message);
    }
  };
  const b = limits?.budget;
  return (
    <section aria-labelledby="budget-heading">
      <h2 id="budget-heading">Account budget</h2>
      <p data-testid="account-budget">
        {b === undefined
          ? 'Loading…'
          : b.limit === null
            ? `No budget across the account's keys: ${money(b.spent, props.currency)} spent ${PERIOD[b.window]}.`
            : `${money(b.spent, props.currency)} of ${money(b.limit, props.currency)} spent ${PERIOD[b.window]} by all keys; resets ${b.resetsAt.replace('T', ' ').replace('Z', ' UTC')}.`}
      </p>
      {props.owner && b !== undefined && (
        <form
          className="row"
          onSubmit={(e) => {
            e.preventDefault();
            void save(amount);
          }}
        >
          <label className="inline">
            Budget ({props.currency})
            <input
              name="budget"
              inputMode="decimal"
              value={amount}
              onChange={(e) => setAmount(e.target.value)}
            />
          </label>
          <label className="inline">
            Resets
            <select
              name="budgetWindow"
              value={window}
              onChange={(e) => setWindow(e.target.value as BudgetWindow)}
            >
              <option value="day">each UTC day</option>
              <option value="week">each week (Monday UTC)</option>
              <option value="month">each UTC month</option>
            </select>
          </label>
          <button type="submit">Save budget</button>
          {b.limit !== null && (
            <button type="button" onClick={() => void save(null)}>
              Remove budget
            </button>
          )}
        </form>
      )}
      <ErrorLine id="budget-error" error={error} />
    </section>
  );
}
