// API Management (SPEC "What the service does" 7, the API key state table): the API Endpoint row,
// the keys table (Name, Key masked, Created Date, Actions) and Generate New Key; a new or rotated
// secret is shown once, in the "API Key Created" dialog.
import { useCallback, useEffect, useState } from 'react';
import { api, type KeyRow, type Me } from './api.ts';
import { Dialog } from './Dialog.tsx';

type Open =
  | { kind: 'none' }
  | { kind: 'generate' }
  | { kind: 'created'; title: string; secret: string }
  | { kind: 'shown'; name: string; secret: string }
  | { kind: 'confirm'; action: 'rotate' | 'delete'; key: KeyRow };

const copy = (text: string) => void navigator.clipboard?.writeText(text).catch(() => {});

export function ApiManagement({ me }: { me: Me }) {
  const [keys, setKeys] = useState<KeyRow[]>([]);
  const [open, setOpen] = useState<Open>({ kind: 'none' });
  const close = useCallback(() => setOpen({ kind: 'none' }), []);
  const reload = useCallback(async () => setKeys(await api.keys()), []);

  useEffect(() => {
    document.title = 'API Management';
    void (async () => {
      // Opening the page mints `Default` once for an account that never had a key.
      const { minted } = await api.ensureDefault();
      if (minted) setOpen({ kind: 'created', title: 'API Key Created', secret: minted.secret });
      await reload();
    })();
  }, [reload]);

  return (
    <main>
      <h1>API Management</h1>
      <section aria-label="API Endpoint" className="row">
        <strong>API Endpoint</strong>
        <code data-testid="endpoint">{me.apiBaseUrl}</code>
        <button type="button" onClick={() => copy(me.apiBaseUrl)}>
          Copy
        </button>
      </section>
      <div className="row">
        <h2>API Keys</h2>
        <button type="button" onClick={() => setOpen({ kind: 'generate' })}>
          Generate New Key
        </button>
      </div>
      <table>
        <thead>
          <tr>
            <th>Name</th>
            <th>Key</th>
            <th>Created Date</th>
            <th>Actions</th>
          </tr>
        </thead>
        <tbody>
          {keys.map((k) => (
            <tr key={k.id} data-key-id={k.id}>
              <td>{k.name}</td>
              <td>
                <code>{k.key}</code>
              </td>
              <td>{new Date(k.createdAt).toLocaleDateString()}</td>
              <td>
                <button
                  type="button"
                  onClick={async () => setOpen({ kind: 'shown', name: k.name, secret: await api.show(k.id) })}
                >
                  Show Key
                </button>
                <button type="button" onClick={() => setOpen({ kind: 'confirm', action: 'rotate', key: k })}>
                  Rotate Key
                </button>
                <button type="button" onClick={() => setOpen({ kind: 'confirm', action: 'delete', key: k })}>
                  Delete Key
                </button>
              </td>
            </tr>
          ))}
        </tbody>
      </table>
      {open.kind === 'generate' && (
        <GenerateKey
          onCancel={close}
          onCreated={async (secret) => {
            setOpen({ kind: 'created', title: 'API Key Created', secret });
            await reload();
          }}
        />
      )}
      {(open.kind === 'created' || open.kind === 'shown') && (
        <Dialog title={open.kind === 'created' ? open.title : `Key: ${open.name}`} onClose={close}>
          {open.kind === 'created' && <p>Copy it now: it is shown this once.</p>}
          <code data-testid="secret">{open.secret}</code>
          <div className="row">
            <button type="button" onClick={() => copy(open.secret)}>
              Copy
            </button>
            <button type="button" onClick={close}>
              Done
            </button>
          </div>
        </Dialog>
      )}
      {open.kind === 'confirm' && (
        <Dialog title={open.action === 'rotate' ? 'Rotate Key?' : 'Delete Key?'} onClose={close}>
          <p>
            {open.action === 'rotate'
              ? `The current secret of "${open.key.name}" stops working at once; requests using it fail.`
              : `"${open.key.name}" stops working at once and cannot be restored. Its usage stays in reports.`}
          </p>
          <div className="row">
            <button type="button" onClick={close}>
              Cancel
            </button>
            <button
              type="button"
              onClick={async () => {
                const key = open.key;
                if (open.action === 'rotate') {
                  const { secret } = await api.rotate(key.id);
                  setOpen({ kind: 'created', title: 'API Key Rotated', secret });
                } else {
                  await api.remove(key.id);
                  close();
                }
                await reload();
              }}
            >
              {open.action === 'rotate' ? 'Rotate' : 'Delete'}
            </button>
          </div>
        </Dialog>
      )}
    </main>
  );
}

/** The name field: Enter submits, Esc cancels (the dialog's own key handling); errors inline. */
function GenerateKey(props: { onCancel: () => void; onCreated: (secret: string) => void }) {
  const [name, setName] = useState('');
  const [error, setError] = useState('');
  const submit = async () => {
    try {
      props.onCreated((await api.create(name.trim())).secret);
    } catch (err) {
      setError((err as Error).message);
    }
  };
  return (
    <Dialog title="Generate New Key" onClose={props.onCancel}>
      <form
        onSubmit={(e) => {
          e.preventDefault();
          void submit();
        }}
      >
        <label>
          Name
          <input
            name="name"
            value={name}
            aria-invalid={error !== ''}
            aria-describedby="name-error"
            onChange={(e) => {
              setName(e.target.value);
              setError('');
            }}
          />
        </label>
        <p id="name-error" className="error" role="alert">
          {error}
        </p>
        <div className="row">
          <button type="button" onClick={props.onCancel}>
            Cancel
          </button>
          <button type="submit">Create</button>
        </div>
      </form>
    </Dialog>
  );
}
