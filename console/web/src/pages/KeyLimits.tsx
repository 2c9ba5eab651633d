// A key's limits on API Management (issue 34): its budget (a spend limit per UTC day, ISO week or
// UTC month, with the current period's spend and when it resets) and its rate limits (requests,
// input and output tokens per minute, calls at once), each beside the account default it falls
// back to. Owners edit them; members see them (the server refuses a member's change anyway).
import { type ReactNode, useEffect, useState } from 'react';
import { optionalAmount } from '../amount-input.ts';
import {
  api,
  type BudgetWindow,
  type KeyLimits,
  type KeyRow,
  type RateLimitName,
  type RateLimitValues,
} from '../api.ts';
import { Dialog, DialogActions } from '../Dialog.tsx';
import { count, money } from '../format.ts';
import { ErrorLine } from '../parts.tsx';

/** How the keys table and the dialog name a window's current period. */
export const PERIOD: Record<BudgetWindow, string> = { day: 'today', week: 'this week', month: 'this month' };

const WINDOWS: { value: BudgetWindow; label: string }[] = [
  { value: 'day', label: 'Daily (UTC day)' },
  { value: 'week', label: 'Weekly (Monday 00:00 UTC)' },
  { value: 'month', label: 'Monthly (UTC calendar month)' },
];

/** The four rate limits in the order every page lists them (AccountRateLimits.tsx too). */
export const RATE_FIELDS: { name: RateLimitName; label: string }[] = [
  { name: 'requestsPerMinute', label: 'Requests per minute' },
  { name: 'inputTokensPerMinute', label: 'Input tokens per minute' },
  { name: 'outputTokensPerMinute', label: 'Output tokens per minute' },
  { name: 'concurrentCalls', label: 'Calls at once' },
];

export type Drafts = Record<RateLimitName, string>;
export const draftsOf = (l: { rateLimits: RateLimitValues }): Drafts =>
  Object.fromEntries(RATE_FIELDS.map((f) => [f.name, l.rateLimits[f.name]?.toString() ?? ''])) as Drafts;

/** A typed rate limit: blank is none (null), else a whole number (the server checks the range). */
export function rateValue(label: string, text: string): number | null {
  const t = text.trim();
  if (t === '') return null;
  if (!/^\d+$/.test(t)) throw new Error(`${label}: write a whole number, or leave it blank for none`);
  return Number(t);
}

/** The four rate limits as inputs, typed as text (blank: none); the key's dialog and the defaults'. */
export function RateFields(props: {
  rates: Drafts;
  onChange: (rates: Drafts) => void;
  disabled?: boolean;
  placeholder: (name: RateLimitName) => string;
  /** What follows a field's input (the key's use of it). */
  after?: (name: RateLimitName) => ReactNode;
}) {
  return RATE_FIELDS.map((f) => (
    <label key={f.name}>
      {f.label}
      <input
        name={f.name}
        inputMode="numeric"
        value={props.rates[f.name]}
        disabled={props.disabled}
        placeholder={props.placeholder(f.name)}
        onChange={(e) => props.onChange({ ...props.rates, [f.name]: e.target.value })}
      />
      {props.after?.(f.name)}
    </label>
  ));
}

export function KeyLimitsDialog(props: {
  keyRow: KeyRow;
  currency: string | null;
  editable: boolean;
  onClose: () => void;
  onSaved: () => void;
}) {
  const [limits, setLimits] = useState<KeyLimits | null>(null);
  const [spendLimit, setSpendLimit] = useState('');
  const [window, setWindow] = useState<BudgetWindow>('month');
  const [rates, setRates] = useState<Drafts | null>(null);
  const [error, setError] = useState('');
  useEffect(() => {
    void api.limits(props.keyRow.id).then(
      (l) => {
        setLimits(l);
        setSpendLimit(l.budget.spendLimit ?? '');
        setWindow(l.budget.spendWindow);
        setRates(draftsOf(l));
      },
      (err: Error) => setError(err.message),
    );
  }, [props.keyRow.id]);

  const save = async (clearAll: boolean) => {
    setError('');
    try {
      const rateLimits = Object.fromEntries(
        RATE_FIELDS.map((f) => [f.name, clearAll ? null : rateValue(f.label, rates?.[f.name] ?? '')]),
      );
      const limit = clearAll ? null : optionalAmount('Spend limit', spendLimit);
      await api.setLimits(props.keyRow.id, {
        rateLimits,
        spendLimit: limit,
        ...(limit === null ? {} : { spendWindow: window }),
      });
      props.onSaved();
    } catch (err) {
      setError((err as Error).message);
    }
  };
  const b = limits?.budget;
  return (
    <Dialog title={`Limits: ${props.keyRow.name}`} onClose={props.onClose} wide>
      {limits === null || rates === null || b === undefined ? (
        <>
          <p>Loading…</p>
          <ErrorLine error={error} />
        </>
      ) : (
        <form
          onSubmit={(e) => {
            e.preventDefault();
            void save(false);
          }}
        >
          <h3>Budget</h3>
          <p className="small" data-testid="budget-use">
            {b.spendLimit === null
              ? `No budget: ${money(b.spent, props.currency)} spent ${PERIOD[b.spendWindow]}.`
              : `${money(b.spent, props.currency)} of ${money(b.spendLimit, props.currency)} spent ${PERIOD[b.spendWindow]}; resets ${b.resetsAt.replace('T', ' ').replace('Z', ' UTC')}.`}
          </p>
          <div className="row">
            <label>
              Spend limit{props.currency ? ` (${props.currency})` : ''}
              <input
                name="spendLimit"
                inputMode="decimal"
                value={spendLimit}
                placeholder="no limit"
                disabled={!props.editable}
                onChange={(e) => setSpendLimit(e.target.value)}
              />
            </label>
            <label>
              Resets
              <select
                name="spendWindow"
                value={window}
                disabled={!props.editable}
                onChange={(e) => setWindow(e.target.value as BudgetWindow)}
              >
                {WINDOWS.map((w) => (
                  <option key={w.value} value={w.value}>
                    {w.label}
                  </option>
                ))}
              </select>
            </label>
          </div>
          <h3>Rate limits</h3>
          <p className="small">
            A call past one is refused with 429 <code>rate_limit_exceeded</code> and <code>retry-after</code>.
            Blank: the account default applies.
          </p>
          <RateFields
            rates={rates}
            onChange={setRates}
            disabled={!props.editable}
            placeholder={(name) =>
              limits.accountDefaults[name] === null
                ? 'no limit'
                : `account default: ${count(limits.accountDefaults[name]!)}`
            }
            after={(name) =>
              limits.effective[name] !== null && (
                <span className="muted small" data-testid={`use-${name}`}>
                  {count(limits.use[name])} of {count(limits.effective[name]!)} in use now
                </span>
              )
            }
          />
          <ErrorLine id="limits-error" error={error} />
          <DialogActions
            onCancel={props.onClose}
            submit={props.editable ? 'Save' : null}
            clear={{ label: 'Clear All', onClick: () => void save(true) }}
          />
          {!props.editable && <p className="muted small">Only an owner of the account can change limits.</p>}
        </form>
      )}
    </Dialog>
  );
}
