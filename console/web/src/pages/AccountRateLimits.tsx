// API Management's default key limits (issue 34): the account's requests, input and output tokens
// per minute and calls at once that every key without its own limit is held to. Above the keys,
// since that is where an owner looks for what binds them; each key's Limits dialog shows the
// default beside its own value and what the key has in use now (a default is per key, so the
// account has no single figure of use to show). Owners set and clear them; members see them (the
// server refuses a member's change anyway, as for a key's limits).
import { useCallback, useEffect, useState } from 'react';
import { type AccountLimits, api, type RateLimitValues } from '../api.ts';
import { Dialog } from '../Dialog.tsx';
import { count } from '../format.ts';
import { ErrorLine } from '../parts.tsx';
import { type Drafts, draftsOf, RATE_FIELDS, RateFields, rateValue } from './KeyLimits.tsx';

/** "Requests per minute: 60; Calls at once: 3.", or that there are none. */
function summary(d: RateLimitValues): string {
  const set = RATE_FIELDS.filter((f) => d[f.name] !== null).map((f) => `${f.label}: ${count(d[f.name]!)}`);
  return set.length === 0 ? 'None: a key without its own limits is not limited.' : `${set.join('; ')}.`;
}

export function AccountRateLimits(props: { owner: boolean }) {
  const [defaults, setDefaults] = useState<RateLimitValues | null>(null);
  const [editing, setEditing] = useState(false);
  const [error, setError] = useState('');
  const shown = useCallback((l: AccountLimits) => setDefaults(l.rateLimits), []);
  useEffect(() => {
    void api.accountLimits().then(shown, (err: Error) => setError(err.message));
  }, [shown]);
  return (
    <section aria-labelledby="default-limits-heading">
      <div className="row spread">
        <h2 id="default-limits-heading">Default Key Limits</h2>
        {props.owner && defaults !== null && (
          <button type="button" onClick={() => setEditing(true)}>
            Edit Defaults
          </button>
        )}
      </div>
      <p className="muted small">
        What a key without a limit of its own is held to; a call past one gets 429{' '}
        <code>rate_limit_exceeded</code>. Each key's Limits shows what it has in use.
      </p>
      <p data-testid="default-limits">{defaults === null ? 'Loading…' : summary(defaults)}</p>
      {!props.owner && <p className="muted small">Only an owner of the account can change them.</p>}
      <ErrorLine id="default-limits-error" error={error} />
      {editing && defaults !== null && (
        <DefaultsDialog
          defaults={defaults}
          onClose={() => setEditing(false)}
          onSaved={(l) => {
            shown(l);
            setEditing(false);
          }}
        />
      )}
    </section>
  );
}

function DefaultsDialog(props: {
  defaults: RateLimitValues;
  onClose: () => void;
  onSaved: (l: AccountLimits) => void;
}) {
  const [rates, setRates] = useState<Drafts>(() => draftsOf({ rateLimits: props.defaults }));
  const [error, setError] = useState('');
  const save = async (clearAll: boolean) => {
    setError('');
    try {
      const rateLimits = Object.fromEntries(
        RATE_FIELDS.map((f) => [f.name, clearAll ? null : rateValue(f.label, rates[f.name])]),
      );
      props.onSaved(await api.setAccountRateLimits(rateLimits));
    } catch (err) {
      setError((err as Error).message);
    }
  };
  return (
    <Dialog title="Default Key Limits" onClose={props.onClose} wide>
      <form
        onSubmit={(e) => {
          e.preventDefault();
          void save(false);
        }}
      >
        <p className="small">Blank: no default (a key without its own limit is not limited by it).</p>
        <RateFields rates={rates} onChange={setRates} placeholder={() => 'no limit'} />
        <ErrorLine id="defaults-error" error={error} />
        <div className="row">
          <button type="button" onClick={props.onClose}>
            Cancel
          </button>
          <button type="button" onClick={() => void save(true)}>
            Clear All
          </button>
          <button type="submit" className="primary">
            Save
          </button>
        </div>
      </form>
    </Dialog>
  );
}
