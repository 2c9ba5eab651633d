// Profile (issue "Console" item 6; CON-13): the account's name and country; the country sets the
// billing currency. Owners change it; members see it.
import { useEffect, useState } from 'react';
import { api, type Me, type Profile as ProfileView } from '../api.ts';
import { countryName } from '../format.ts';
import { ErrorLine } from '../parts.tsx';
import { useTitle } from '../title.ts';

export function Profile({ me, onMe }: { me: Me; onMe: (me: Me) => void }) {
  useTitle('Profile');
  const [profile, setProfile] = useState<ProfileView | null>(null);
  const [name, setName] = useState('');
  const [country, setCountry] = useState('');
  const [error, setError] = useState('');
  const [saved, setSaved] = useState('');
  const owner = me.account.role === 'owner';
  useEffect(() => {
    void api.profile().then((p) => {
      setProfile(p);
      setName(p.account.name);
      setCountry(p.account.country ?? '');
    });
  }, []);
  if (!profile) return <h1>Profile</h1>;
  const countries = [...profile.countries].sort((a, b) =>
    countryName(a.code).localeCompare(countryName(b.code)),
  );
  return (
    <>
      <h1>Profile</h1>
      <p>
        Signed in as <strong>{profile.user.email}</strong> ({me.account.role} of this account).
      </p>
      <form
        onSubmit={async (e) => {
          e.preventDefault();
          setError('');
          setSaved('');
          try {
            const p = await api.saveProfile({ name, country: country === '' ? null : country });
            setProfile(p);
            onMe((await api.me()) ?? me);
            setSaved('Saved.');
          } catch (err) {
            setError((err as Error).message);
          }
        }}
      >
        <fieldset disabled={!owner}>
          <legend>Account</legend>
          <label>
            Account name
            <input
              name="name"
              value={name}
              maxLength={200}
              required
              onChange={(e) => setName(e.target.value)}
            />
          </label>
          <label>
            Country
            <select name="country" value={country} onChange={(e) => setCountry(e.target.value)}>
              <option value="">Not set (the API refuses calls: 403 billing_currency_unset)</option>
              {countries.map((c) => (
                <option key={c.code} value={c.code}>
                  {countryName(c.code)} — {c.currency}
                </option>
              ))}
            </select>
          </label>
          <p className="small muted">
            The country sets the billing currency: credits, prices and charges are in it. It cannot change
            while the account holds credit in another currency.
          </p>
          {owner && (
            <button type="submit" className="primary">
              Save
            </button>
          )}
        </fieldset>
        {!owner && <p className="small">Only the account’s owners can change the profile.</p>}
        <ErrorLine error={error} />
        <p role="status">{saved}</p>
      </form>
      <p>
        Billing currency: <strong data-testid="currency">{profile.account.currency ?? 'none'}</strong>
      </p>
    </>
  );
}
