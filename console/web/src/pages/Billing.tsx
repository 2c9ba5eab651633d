// Billing (issue "Console" item 5; CON-12): the balance (held by running calls and available), a
// ledger of top-ups, charges (by day and model), refunds and other products' charges on the same
// credits; Top up through the providers the install offers (Stripe Checkout, operator approval).
import { type ReactNode, useCallback, useEffect, useRef, useState } from 'react';
import { requiredAmount } from '../amount-input.ts';
import { api, type Balance, type Ledger, type Me, type TopUpRequest } from '../api.ts';
import { DateRange } from '../DateRange.tsx';
import { count, dateTime, exactMoney, isoDay, money } from '../format.ts';
import { ErrorLine, ScrollTable } from '../parts.tsx';
import { Link, useLocation } from '../router.tsx';
import { useTitle } from '../title.ts';
import { AccountBudget } from './AccountBudget.tsx';
import { AutoTopUpForm } from './AutoTopUpForm.tsx';
import { BalanceAlertForm } from './BalanceAlertForm.tsx';

const DAY = 86_400_000;
const PROVIDER_NAMES: Record<string, string> = {
  stripe: 'Card (Stripe)',
  approval: 'Request from the operator',
};

export function Billing({ me }: { me: Me }) {
  useTitle('Billing');
  const { query } = useLocation();
  const currency = me.account.currency;
  const [balance, setBalance] = useState<Balance | null>(null);
  const [ledger, setLedger] = useState<Ledger | null>(null);
  const [requests, setRequests] = useState<TopUpRequest[]>([]);
  const [providers, setProviders] = useState<string[]>([]);
  const [limits, setLimits] = useState<{ min: string; max: string } | null>(null);
  const [from, setFrom] = useState(isoDay(Date.now() - 29 * DAY));
  const [to, setTo] = useState(isoDay(Date.now()));
  const reload = useCallback(async () => {
    const range = { from: Date.parse(`${from}T00:00:00Z`), to: Date.parse(`${to}T00:00:00Z`) + DAY - 1 };
    const [b, l, r] = await Promise.all([api.balance(), api.ledger(range.from, range.to), api.topUps()]);
    setBalance(b);
    setLedger(l);
    setRequests(r);
  }, [from, to]);
  useEffect(() => {
    void reload();
  }, [reload]);
  useFollowPending(requests, reload);
  useEffect(() => {
    void api.providers().then((p) => {
      setProviders(p.providers);
      setLimits({ min: p.min, max: p.max });
    });
  }, []);
  const m = (decimal: string) => money(decimal, currency);

  return (
    <>
      <h1>Billing</h1>
      <CheckoutNotice
        checkout={query.get('checkout')}
        request={requests.find((r) => r.id === query.get('topup'))}
        currency={currency}
      />
      {/* Every amount in the one money format (issue 48 item 8): the currency's two decimals, the exact balance on hover. */}
      <section aria-labelledby="balance-heading" className="cards">
        <h2 id="balance-heading" className="visually-hidden">
          Balance
        </h2>
        {(
          [
            ['Balance', 'balance', balance?.balance],
            ['Held by running calls', 'held', balance?.held],
            ['Available', 'available', balance?.available],
          ] as const
        ).map(([label, testId, value]) => (
          <Figure key={testId} label={label} testId={testId} amount={value} currency={currency} />
        ))}
      </section>

      {currency ? (
        <TopUp currency={currency} providers={providers} limits={limits} onRequested={reload} />
      ) : (
        <p>Set the country in the profile before topping up: it decides the currency of the credits.</p>
      )}

      <BalanceAlertForm owner={me.account.role === 'owner'} />
      <AutoTopUpForm owner={me.account.role === 'owner'} />
      <AccountBudget owner={me.account.role === 'owner'} currency={me.account.currency ?? ''} />

      {requests.length > 0 && (
        <section aria-labelledby="requests-heading">
          <h2 id="requests-heading">Top-up requests</h2>
          <ScrollTable head={['Requested', 'Amount', 'How', 'Status']}>
            {requests.map((r) => (
              <tr key={r.id}>
                <td>{dateTime(r.createdAt)}</td>
                <td>{m(r.amount)}</td>
                <td>{PROVIDER_NAMES[r.provider] ?? r.provider}</td>
                <td data-testid="topup-status">{r.status}</td>
              </tr>
            ))}
          </ScrollTable>
        </section>
      )}

      <section aria-labelledby="ledger-heading">
        <h2 id="ledger-heading">Ledger</h2>
        <div className="row filters">
          <DateRange from={from} to={to} onFrom={setFrom} onTo={setTo} />
        </div>
        <h3>Top-ups</h3>
        <LedgerTable
          empty="No top-ups in this range."
          head={['When', 'Amount', 'Note']}
          rows={(ledger?.topUps ?? []).map((t) => [t.id, dateTime(t.at), m(t.amount), t.note || t.source])}
        />
        <h3>Charges by day and model</h3>
        <LedgerTable
          empty="No charges in this range."
          head={['Day', 'Model', 'Calls', 'Amount']}
          rows={(ledger?.charges ?? []).map((c) => [
            `${c.day} ${c.model}`,
            c.day,
            c.model,
            count(c.requests),
            m(c.amount),
          ])}
        />
        <h3>Refunds</h3>
        <LedgerTable
          empty="No refunds in this range."
          head={['When', 'Call', 'Model', 'Amount']}
          rows={(ledger?.refunds ?? []).map((r) => [
            r.id,
            dateTime(r.at),
            // The refunded call, looked up by its request id on the usage page (from the journal).
            <Link key="of" href={`/usage?request=${encodeURIComponent(r.of)}`}>
              {r.of}
            </Link>,
            r.model,
            m(r.amount),
          ])}
        />
        {(ledger?.service.length ?? 0) > 0 && (
          <>
            <h3>Other products (GPU rentals and the like)</h3>
            <LedgerTable
              empty=""
              head={['When', 'What', 'Kind', 'Amount']}
              rows={ledger!.service.map((s) => [s.id, dateTime(s.at), s.description, s.type, m(s.amount)])}
            />
          </>
        )}
      </section>
    </>
  );
}

/** Until a request is decided, the page asks again: quickly at first, then every 10 s. */
const FOLLOW_FAST_MS = 2_000;
const FOLLOW_SLOW_MS = 10_000;
const FOLLOW_FAST_FOR_MS = 120_000;

/**
 * While a top-up request is pending (a Stripe payment awaiting its webhook, a request awaiting an
 * operator), the page re-reads the requests, and everything else once one of them moved (issue 48
 * item 9: the page used to show "pending" and the old balance until reloaded).
 */
function useFollowPending(requests: TopUpRequest[], reload: () => Promise<void>) {
  const shown = useRef(requests);
  shown.current = requests;
  const waiting = requests.some((r) => r.status === 'pending' || r.status === 'approved');
  useEffect(() => {
    if (!waiting) return;
    const since = Date.now();
    let timer: ReturnType<typeof setTimeout>;
    const statuses = (rs: TopUpRequest[]) => rs.map((r) => `${r.id}:${r.status}`).join(' ');
    const tick = async () => {
      const now = await api.topUps().catch(() => null);
      if (now !== null && statuses(now) !== statuses(shown.current)) await reload().catch(() => {});
      timer = setTimeout(tick, Date.now() - since < FOLLOW_FAST_FOR_MS ? FOLLOW_FAST_MS : FOLLOW_SLOW_MS);
    };
    timer = setTimeout(tick, FOLLOW_FAST_MS);
    return () => clearTimeout(timer);
  }, [waiting, reload]);
}

/**
 * Back from the payment page (Stripe's success_url and cancel_url: `?topup=<id>&checkout=success|cancel`):
 * what happened to the payment, following the request until it is credited.
 */
function CheckoutNotice(props: {
  checkout: string | null;
  request: TopUpRequest | undefined;
  currency: string | null;
}) {
  const { checkout, request } = props;
  if (checkout !== 'success' && checkout !== 'cancel') return null;
  const amount = request ? money(request.amount, props.currency) : null;
  const words =
    checkout === 'cancel'
      ? 'The payment was cancelled; nothing was charged.'
      : request?.status === 'credited'
        ? `Payment received: ${amount} was credited.`
        : request?.status === 'rejected'
          ? 'The payment did not go through; nothing was credited.'
          : `Payment received. ${amount ?? 'The top-up'} is credited as soon as the payment provider confirms it; this page shows it then.`;
  return (
    <p className="notice" role="status" data-testid="checkout-notice">
      {words}
    </p>
  );
}

/** A ledger table; each row is [react key, ...cells]. */
function LedgerTable(props: { head: string[]; rows: [string, ...ReactNode[]][]; empty: string }) {
  if (props.rows.length === 0) return <p className="muted">{props.empty}</p>;
  return (
    <ScrollTable head={props.head}>
      {props.rows.map(([key, ...cells]) => (
        <tr key={key}>
          {cells.map((c, i) => (
            // biome-ignore lint/suspicious/noArrayIndexKey: cells of a fixed column order
            <td key={i}>{c}</td>
          ))}
        </tr>
      ))}
    </ScrollTable>
  );
}

function TopUp(props: {
  currency: string;
  providers: string[];
  limits: { min: string; max: string } | null;
  onRequested: () => Promise<void>;
}) {
  const [amount, setAmount] = useState('');
  const [provider, setProvider] = useState('');
  const [error, setError] = useState('');
  const [status, setStatus] = useState('');
  const chosen = provider || props.providers[0] || '';
  if (props.providers.length === 0) return null;
  return (
    <section aria-labelledby="topup-heading">
      <h2 id="topup-heading">Top up</h2>
      <form
        className="row"
        onSubmit={async (e) => {
          e.preventDefault();
          setError('');
          setStatus('');
          try {
            const started = await api.topUp(requiredAmount('Amount', amount), chosen);
            if (started.provider === 'stripe') {
              location.assign(started.url);
              return;
            }
            setStatus(
              `Requested ${money(started.request.amount, props.currency)}: it is credited once an operator approves it.`,
            );
            setAmount('');
            await props.onRequested();
          } catch (err) {
            setError((err as Error).message);
          }
        }}
      >
        <label className="inline">
          Amount ({props.currency})
          <input
            name="amount"
            inputMode="decimal"
            required
            aria-describedby="topup-limits"
            value={amount}
            onChange={(e) => setAmount(e.target.value)}
          />
        </label>
        {props.limits && (
          <span id="topup-limits" className="muted small" data-testid="topup-limits">
            From {money(props.limits.min, props.currency)} to {money(props.limits.max, props.currency)}
          </span>
        )}
        {props.providers.length > 1 && (
          <label className="inline">
            How
            <select value={chosen} onChange={(e) => setProvider(e.target.value)}>
              {props.providers.map((p) => (
                <option key={p} value={p}>
                  {PROVIDER_NAMES[p] ?? p}
                </option>
              ))}
            </select>
          </label>
        )}
        <button type="submit" className="primary">
          Top up
        </button>
      </form>
      <ErrorLine id="topup-error" error={error} />
      <p role="status">{status}</p>
    </section>
  );
}

/** One of the balance cards: an amount in the account currency, '…' until it is loaded. */
function Figure(props: {
  label: string;
  testId: string;
  amount: string | undefined;
  currency: string | null;
}) {
  const exact = props.amount === undefined ? undefined : exactMoney(props.amount, props.currency, 0);
  return (
    <div className="card">
      <div className="muted small">{props.label}</div>
      <div className="big" data-testid={props.testId} title={exact}>
        {props.amount === undefined ? '…' : money(props.amount, props.currency)}
      </div>
    </div>
  );
}
