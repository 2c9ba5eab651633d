// The low-balance alert's banner on every page (issue 37 item 7): while the account's available
// credit is below the alert an owner set on Billing, the page says so, with the amounts and a link
// to top up. Read when a page opens, every 30 s (calls from the Playground or elsewhere spend
// meanwhile), and when Billing changes the alert (the ALERT_CHANGED event).
import { useEffect, useState } from 'react';
import { api, type BalanceAlert } from './api.ts';
import { money } from './format.ts';
import { Link, useLocation } from './router.tsx';

export const ALERT_CHANGED = 'modelplane:balance-alert';
const EVERY_MS = 30_000;

export function LowBalanceBanner() {
  const { path } = useLocation();
  const [alert, setAlert] = useState<BalanceAlert | null>(null);
  // biome-ignore lint/correctness/useExhaustiveDependencies: re-read when the page changes
  useEffect(() => {
    const read = () => void api.balanceAlert().then(setAlert, () => setAlert(null));
    read();
    const t = setInterval(read, EVERY_MS);
    window.addEventListener(ALERT_CHANGED, read);
    return () => {
      clearInterval(t);
      window.removeEventListener(ALERT_CHANGED, read);
    };
  }, [path]);
  if (!alert?.below || alert.threshold === null) return null;
  return (
    <div className="banner" role="status" data-testid="low-balance">
      Available credit is {money(alert.available, alert.currency)}, below the alert of{' '}
      {money(alert.threshold, alert.currency)}. <Link href="/billing">Top up on Billing.</Link>
    </div>
  );
}
