// The console's web app: sign-in, the invitation page, and the signed-in pages in one frame.
import { StrictMode, useEffect, useState } from 'react';
import { createRoot } from 'react-dom/client';
import { api, type Me, whenSignedOut } from './api.ts';
import { Layout } from './Layout.tsx';
import { ApiManagement } from './pages/ApiManagement.tsx';
import { Batches } from './pages/Batches.tsx';
import { Billing } from './pages/Billing.tsx';
import { Invite } from './pages/Invite.tsx';
import { NotFound } from './pages/NotFound.tsx';
import { Playground } from './pages/Playground.tsx';
import { Pricing } from './pages/Pricing.tsx';
import { Profile } from './pages/Profile.tsx';
import { SignIn } from './pages/SignIn.tsx';
import { Team } from './pages/Team.tsx';
import { Usage } from './pages/Usage.tsx';
import { navigate, useLocation } from './router.tsx';

function Page({ me, path, onMe }: { me: Me; path: string; onMe: (me: Me) => void }) {
  switch (path) {
    case '/':
    case '/api':
      return <ApiManagement me={me} />;
    case '/playground':
      return <Playground me={me} />;
    case '/usage':
      return <Usage me={me} />;
    case '/batches':
      return <Batches me={me} />;
    case '/pricing':
      return <Pricing me={me} />;
    case '/billing':
      return <Billing me={me} />;
    case '/team':
      return <Team me={me} />;
    case '/profile':
      return <Profile me={me} onMe={onMe} />;
    default:
      return <NotFound />;
  }
}

function App() {
  const { path } = useLocation();
  const [me, setMe] = useState<Me | null | undefined>(undefined);
  useEffect(() => {
    void api.me().then(setMe);
    whenSignedOut(() => setMe(null));
  }, []);
  if (path.startsWith('/invite/'))
    return <Invite token={decodeURIComponent(path.slice('/invite/'.length))} me={me ?? null} onMe={setMe} />;
  if (me === undefined) return null;
  if (me === null)
    return (
      <SignIn
        onSignedIn={(m) => {
          setMe(m);
          if (path === '/signin') navigate('/api');
        }}
      />
    );
  return (
    <Layout me={me} path={path} onMe={setMe}>
      {/* A new account, a new page: nothing of the previous account's state survives a switch. */}
      <Page key={`${me.account.id} ${path}`} me={me} path={path} onMe={setMe} />
    </Layout>
  );
}

createRoot(document.getElementById('root')!).render(
  <StrictMode>
    <App />
  </StrictMode>,
);
