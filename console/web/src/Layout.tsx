// The frame of every signed-in page: a skip link, the account (switchable when the user is in
// several), the pages, sign-out, and — while the account has no country — the banner that says why
// its API calls get 403 billing_currency_unset.
import { type ReactNode, useState } from 'react';
import { api, type Me } from './api.ts';
import { LowBalanceBanner } from './LowBalanceBanner.tsx';
import { Link, navigate } from './router.tsx';

export const PAGES = [
  { path: '/playground', title: 'Playground' },
  { path: '/api', title: 'API Management' },
  { path: '/usage', title: 'Inference API Usage' },
  { path: '/pricing', title: 'Pricing' },
  { path: '/billing', title: 'Billing' },
  { path: '/team', title: 'Team' },
  { path: '/profile', title: 'Profile' },
] as const;

export function Layout(props: { me: Me; path: string; onMe: (me: Me | null) => void; children: ReactNode }) {
  const { me } = props;
  // At phone width the pages are a menu behind one button (issue 37 item 8: seven links wrapped to
  // three lines above every page); it is open only on the page where it was opened, so choosing a page
  // closes it.
  const [menuAt, setMenuAt] = useState<string | null>(null);
  const menu = menuAt === props.path;
  const current = PAGES.find((p) => p.path === props.path)?.title;
  return (
    <>
      <a className="skip" href="#main">
        Skip to content
      </a>
      <header className="top">
        <strong className="brand">modelplane console</strong>
        {me.accounts.length > 1 ? (
          <label className="inline">
            <span className="visually-hidden">Account</span>
            <select
              value={me.account.id}
              onChange={async (e) => {
                props.onMe(await api.switchAccount(e.target.value));
              }}
            >
              {me.accounts.map((a) => (
                <option key={a.id} value={a.id}>
                  {a.name} ({a.role})
                </option>
              ))}
            </select>
          </label>
        ) : (
          <span>{me.account.name}</span>
        )}
        <span className="muted">{me.user.email}</span>
        <button
          type="button"
          onClick={async () => {
            await api.signOut();
            props.onMe(null);
            navigate('/signin');
          }}
        >
          Sign out
        </button>
      </header>
      <nav aria-label="Console" className={menu ? 'open' : undefined}>
        <button
          type="button"
          className="menu-button"
          aria-expanded={menu}
          aria-controls="console-pages"
          onClick={() => setMenuAt(menu ? null : props.path)}
        >
          <span aria-hidden="true">☰</span> Menu{current && <span className="muted"> · {current}</span>}
        </button>
        <ul id="console-pages">
          {PAGES.map((p) => (
            <li key={p.path}>
              <Link href={p.path} aria-current={props.path === p.path ? 'page' : undefined}>
                {p.title}
              </Link>
            </li>
          ))}
          <li>
            <a href="/docs">API Reference</a>
          </li>
        </ul>
      </nav>
      {me.account.currency === null && (
        <div className="banner" role="status">
          This account has no billing currency, so its API calls are refused with 403{' '}
          <code>billing_currency_unset</code>.{' '}
          {me.account.role === 'owner' ? (
            <Link href="/profile">Set the country in the profile.</Link>
          ) : (
            'Ask an owner to set the country in the profile.'
          )}
        </div>
      )}
      <LowBalanceBanner key={me.account.id} />
      <main id="main" tabIndex={-1}>
        {props.children}
      </main>
    </>
  );
}
