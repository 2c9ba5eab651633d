// An invitation link (/invite/<token>): who invites whom to what, then join — signed in as the
// invited user, with that user's password, or as a new user who sets a password here.
import { useEffect, useState } from 'react';
import { api, type InvitationOffer, type Me } from '../api.ts';
import { ErrorLine } from '../parts.tsx';
import { navigate } from '../router.tsx';
import { useTitle } from '../title.ts';

export function Invite(props: { token: string; me: Me | null; onMe: (me: Me) => void }) {
  useTitle('Invitation');
  const [offer, setOffer] = useState<InvitationOffer | null | undefined>(undefined);
  const [error, setError] = useState('');
  const [password, setPassword] = useState('');
  useEffect(() => {
    api.invitation(props.token).then(setOffer, () => setOffer(null));
  }, [props.token]);

  const accept = async (withPassword: boolean) => {
    setError('');
    try {
      const me = await api.accept(props.token, withPassword ? password : undefined);
      props.onMe(me);
      navigate('/api');
    } catch (err) {
      setError((err as Error).message);
    }
  };

  if (offer === undefined) return null;
  if (offer === null)
    return (
      <main id="main" className="narrow">
        <h1>Invitation</h1>
        <p>This invitation link is unknown, used or expired. Ask for a new one.</p>
      </main>
    );
  const signedInAsInvited = props.me?.user.email === offer.email;
  return (
    <main id="main" className="narrow">
      <h1>Join {offer.accountName}</h1>
      <p>
        <strong>{offer.email}</strong> is invited to join <strong>{offer.accountName}</strong> as {offer.role}
        .
      </p>
      {signedInAsInvited ? (
        <button type="button" className="primary" onClick={() => void accept(false)}>
          Join {offer.accountName}
        </button>
      ) : (
        <form
          onSubmit={(e) => {
            e.preventDefault();
            void accept(true);
          }}
        >
          <input type="email" name="email" value={offer.email} autoComplete="username" readOnly hidden />
          <label>
            {offer.userExists ? `Password of ${offer.email}` : 'Choose a password (at least 8 characters)'}
            <input
              type="password"
              name="password"
              autoComplete={offer.userExists ? 'current-password' : 'new-password'}
              minLength={offer.userExists ? 1 : 8}
              required
              value={password}
              onChange={(e) => setPassword(e.target.value)}
            />
          </label>
          <button type="submit" className="primary">
            {offer.userExists ? 'Sign in and join' : 'Create user and join'}
          </button>
        </form>
      )}
      <ErrorLine error={error} />
    </main>
  );
}
