// Billing's auto top-up (issue 37 item 7): an owner saves a card on Stripe's page, then sets when
// (below a threshold), how much and how often at most (per month) the card is charged; everyone
// sees the card, the setting and the last attempt with its outcome — a refused card or a pause
// after failures is said here, since there is no mail to say it by.
import { useEffect, useState } from 'react';
import { type AutoTopUp, api } from '../api.ts';
import { dateTime, money } from '../format.ts';
import { ErrorLine } from '../parts.tsx';

const STATUS: Record<string, string> = {
  charging: 'charging the card…',
  awaiting: 'waiting for the payment provider to confirm',
  credited: 'credited',
  failed: 'failed',
  capped: 'not charged: monthly cap reached',
};

/** The form's fields as saved (a new form suggests 4 a month). */
const formOf = (a: AutoTopUp) => ({
  threshold: a.threshold ?? '',
  amount: a.amount ?? '',
  monthlyCap: String(a.monthlyCap ?? 4),
});

export function AutoTopUpForm(props: { owner: boolean }) {
  const [auto, setAuto] = useState<AutoTopUp | null>(null);
  const [form, setForm] = useState({ threshold: '', amount: '', monthlyCap: '4' });
  const [error, setError] = useState('');
  const [busy, setBusy] = useState(false);
  useEffect(() => {
    void api.autoTopUp().then((a) => {
      setAuto(a);
      setForm(formOf(a));
    });
  }, []);
  if (auto === null)
    return (
      <section aria-labelledby="auto-heading">
        <h2 id="auto-heading">Auto top-up</h2>
        <p>Loading…</p>
      </section>
    );
  if (!auto.available) return null;
  const c = auto.currency;
  const save = async (enabled: boolean) => {
    setError('');
    setBusy(true);
    try {
      const a = await api.setAutoTopUp({
        enabled,
        threshold: form.threshold.trim(),
        amount: form.amount.trim(),
        monthlyCap: Number(form.monthlyCap),
      });
      setAuto(a);
      setForm(formOf(a));
    } catch (err) {
      setError((err as Error).message);
    } finally {
      setBusy(false);
    }
  };
  const saveCard = async () => {
    setError('');
    try {
      location.assign((await api.saveCard()).url);
    } catch (err) {
      setError((err as Error).message);
    }
  };
  const state = auto.paused
    ? `Paused: ${auto.paused}. Check the card, then turn it on again.`
    : auto.enabled && auto.threshold && auto.amount
      ? `On: when the balance falls below ${money(auto.threshold, c)}, the card is charged ${money(auto.amount, c)} (at most ${auto.monthlyCap} a month; ${auto.thisMonth} this month).`
      : 'Off.';
  const field = (name: 'threshold' | 'amount' | 'monthlyCap', label: string, mode: 'decimal' | 'numeric') => (
    <label className="inline">
      {label}
      <input
        name={name}
        inputMode={mode}
        value={form[name]}
        onChange={(e) => setForm({ ...form, [name]: e.target.value })}
      />
    </label>
  );
  return (
    <section aria-labelledby="auto-heading">
      <h2 id="auto-heading">Auto top-up</h2>
      <p data-testid="auto-state">{state}</p>
      <p data-testid="auto-card">
        {auto.card ? `Card: ${auto.card.brand} ending ${auto.card.last4}` : 'No card saved.'}
        {props.owner && (
          <>
            {' '}
            <button type="button" onClick={() => void saveCard()}>
              {auto.card ? 'Replace card' : 'Save a card'}
            </button>
          </>
        )}
      </p>
      {auto.last && (
        <p data-testid="auto-last">
          Last attempt {dateTime(auto.last.at)}: {money(auto.last.amount, c)},{' '}
          {STATUS[auto.last.status] ?? auto.last.status}
          {auto.last.reason ? ` (${auto.last.reason})` : ''}.
        </p>
      )}
      {props.owner ? (
        <form
          className="row"
          onSubmit={(e) => {
            e.preventDefault();
            void save(true);
          }}
        >
          {field('threshold', `Below${c ? ` (${c})` : ''}`, 'decimal')}
          {field('amount', `Top up${c ? ` (${c})` : ''}`, 'decimal')}
          {field('monthlyCap', 'At most per month', 'numeric')}
          <button type="submit" disabled={busy || auto.card === null}>
            {auto.enabled && !auto.paused ? 'Save auto top-up' : 'Turn on'}
          </button>
          {auto.enabled && (
            <button type="button" disabled={busy} onClick={() => void save(false)}>
              Turn off
            </button>
          )}
        </form>
      ) : (
        <p className="muted small">Owners set auto top-up.</p>
      )}
      <ErrorLine error={error} />
    </section>
  );
}
