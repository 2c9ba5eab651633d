// The console's web app: sign-in, then API Management at /api.
import { StrictMode, useEffect, useState } from 'react';
import { createRoot } from 'react-dom/client';
import { ApiManagement } from './ApiManagement.tsx';
import { api, type Me } from './api.ts';

function SignIn({ onSignedIn }: { onSignedIn: (me: Me) => void }) {
  const [error, setError] = useState('');
  useEffect(() => {
    document.title = 'Sign in';
  }, []);
  return (
    <main>
      <h1>Sign in</h1>
      <form
        onSubmit={async (e) => {
          e.preventDefault();
          const form = new FormData(e.currentTarget);
          try {
            onSignedIn(await api.signIn(String(form.get('email')), String(form.get('password'))));
          } catch (err) {
            setError((err as Error).message);
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
        <p className="error" role="alert">
          {error}
        </p>
        <button type="submit">Sign in</button>
      </form>
    </main>
  );
}

function App() {
  const [me, setMe] = useState<Me | null | undefined>(undefined);
  useEffect(() => {
    void api.me().then(setMe);
  }, []);
  if (me === undefined) return null;
  if (me === null) return <SignIn onSignedIn={setMe} />;
  return (
    <>
      <header>
        <span>
          {me.account.name} · {me.user.email}
        </span>
        <button
          type="button"
          onClick={async () => {
            await api.signOut();
            setMe(null);
          }}
        >
          Sign out
        </button>
      </header>
      <ApiManagement me={me} />
    </>
  );
}

createRoot(document.getElementById('root')!).render(
  <StrictMode>
    <App />
  </StrictMode>,
);
