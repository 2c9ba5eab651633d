import { useState } from 'react';
import { api, type Me } from '../api.ts';
import { ErrorLine } from '../parts.tsx';
import { useTitle } from '../title.ts';

export function SignIn({ onSignedIn }: { onSignedIn: (me: Me) => void }) {
  useTitle('Sign in');
  const [error, setError] = useState('');
  const [busy, setBusy] = useState(false);
  return (
    <main id="main" className="narrow">
      <p className="product">modelplane console</p>
      <h1>Sign in</h1>
      <form
        onSubmit={async (e) => {
          e.preventDefault();
          const form = new FormData(e.currentTarget);
          setBusy(true);
          try {
            onSignedIn(await api.signIn(String(form.get('email')), String(form.get('password'))));
          } catch (err) {
            setError((err as Error).message);
          } finally {
            setBusy(false);
          }
        }}
      >
        <label>
          Email
          <input name="email" type="email" autoComplete="username" required />
        </label>
        <label>
          Password
          <input name="password" type="password" autoComplete="current-password" required />
        </label>
        <ErrorLine error={error} />
        <button type="submit" className="primary" disabled={busy}>
          Sign in
        </button>
      </form>
    </main>
  );
}
