// Which of the account's keys the Playground calls with (issue 19 item 6): `Default` unless another
// is chosen, minted as API Management mints it when the account has no key. The secret is read
// with Show Key (the session's CSRF token) and kept only in this page's memory.
import { useEffect, useState } from 'react';
import { api, type KeyRow } from '../api.ts';

export function usePlaygroundKey() {
  const [keys, setKeys] = useState<KeyRow[] | null>(null);
  const [keyId, setKeyId] = useState<string>('');
  // The secret is held with the key it belongs to, and given out only while that key is the chosen
  // one: in the render right after another key is picked (before its secret is read) there is no
  // secret, so nothing can run with the previous key's.
  const [held, setHeld] = useState<{ keyId: string; secret: string } | null>(null);
  const [error, setError] = useState('');
  useEffect(() => {
    void (async () => {
      try {
        const { minted } = await api.ensureDefault();
        const list = await api.keys();
        setKeys(list);
        const chosen = minted?.key ?? list.find((k) => k.name === 'Default') ?? list[0];
        if (chosen) setKeyId(chosen.id);
        if (minted) setHeld({ keyId: minted.key.id, secret: minted.secret });
      } catch (err) {
        setError((err as Error).message);
      }
    })();
  }, []);
  useEffect(() => {
    if (!keyId) return;
    let live = true;
    api.show(keyId).then(
      (secret) => live && setHeld({ keyId, secret }),
      (err: Error) => live && setError(err.message),
    );
    return () => {
      live = false;
    };
  }, [keyId]);
  const key = keys?.find((k) => k.id === keyId) ?? null;
  const secret = held !== null && held.keyId === keyId ? held.secret : null;
  return { keys, key, keyId, setKeyId, secret, error };
}

export function KeyPicker(props: { keys: KeyRow[] | null; keyId: string; onChange: (id: string) => void }) {
  return (
    <label className="inline">
      API key{' '}
      <select value={props.keyId} onChange={(e) => props.onChange(e.target.value)} disabled={!props.keys}>
        {(props.keys ?? []).map((k) => (
          <option key={k.id} value={k.id}>
            {k.name} ({k.key})
          </option>
        ))}
      </select>
    </label>
  );
}
