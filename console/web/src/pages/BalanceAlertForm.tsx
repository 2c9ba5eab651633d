// Billing's low-balance alert (issue 37 item 7): owners set or remove the amount below which every
// page warns (LowBalanceBanner); members see it. Enter saves; errors are said inline.
import { useEffect, useState } from 'react';
import { api, type BalanceAlert } from '../api.ts';
import { money } from '../format.ts';
import { ALERT_CHANGED } from '../LowBalanceBanner.tsx';
import { ErrorLine } from '../parts.tsx';

export function BalanceAlertForm(props: { owner: boolean }) {
  const [alert, setAlert] = useState<BalanceAlert | null>(null);
  const [value, setValue] = useState('');
  const [error, setError] = useState('');
  useEffect(() => {
    void api.balanceAlert().then((a) => {
      setAlert(a);
      setValue(a.threshold ?? '');
    });
  }, []);
  const save = async (threshold: string | null) => {
    setError('');
    try {
      const a = await api.setBalanceAlert(threshold);
      setAlert(a);
      setValue(a.threshold ?? '');
      window.dispatchEvent(new Event(ALERT_CHANGED));
    } catch (err) {
      setError((err as Error).message);
    }
  };
  // Until the alert is read, nothing to edit: a value typed meanwhile would be overwritten by it.
  const now =
    alert === null
      ? 'Loading…'
      : alert.threshold
        ? `Every page warns while available credit is below ${money(alert.threshold, alert.currency)}.`
        : 'No alert is set.';
  return (
    <section aria-labelledby="alert-heading">
      <h2 id="alert-heading">Low-balance alert</h2>
      <p data-testid="alert-now">{now}</p>
      {props.owner ? (
        alert !== null && (
          <form
            className="row"
            onSubmit={(e) => {
              e.preventDefault();
              void save(value.trim() === '' ? null : value.trim());
            }}
          >
            <label className="inline">
              Warn below{alert?.currency ? ` (${alert.currency})` : ''}
              <input
                name="threshold"
                inputMode="decimal"
                value={value}
                onChange={(e) => setValue(e.target.value)}
              />
            </label>
            <button type="submit">Save alert</button>
            {alert?.threshold && (
              <button type="button" onClick={() => void save(null)}>
                Remove alert
              </button>
            )}
          </form>
        )
      ) : (
        <p className="muted small">Owners set the alert.</p>
      )}
      <ErrorLine error={error} />
    </section>
  );
}
